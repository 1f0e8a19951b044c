// LlamaModel::project_pooled: an encoder's pooled embedding through its
// dense projections (EmbeddingGemma's sentence-transformers head, as
// llama.cpp's build_dense_out: dense_2 then dense_3, no activation).
#include "engine/model/llama_model.h"

namespace tc::model {

void LlamaModel::project_pooled(std::vector<float>& embedding) {
  if (weights_.dense_2.data == nullptr) return;
  std::vector<float> wide(static_cast<size_t>(weights_.dense_2.ne[1]));
  backend_.matmul(weights_.dense_2, embedding.data(), 1, wide.data());
  backend_.matmul(weights_.dense_3, wide.data(), 1, embedding.data());
}

}  // namespace tc::model
