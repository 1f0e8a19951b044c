// An encoder's ends. LlamaModel::add_bert_inputs: BERT's embeddings, as
// llama.cpp's bert graph builds them (token, token type 0, position rows,
// then token_embd_norm). LlamaModel::project_pooled: a pooled embedding
// through its dense projections (EmbeddingGemma's sentence-transformers
// head, as llama.cpp's build_dense_out: dense_2 then dense_3, no
// activation). LlamaModel::classify: a reranker's head (BERT's, ModernBERT's,
// or Qwen3-Reranker's yes/no rows and softmax). LlamaModel::add_bert_attention: BERT's
// residual add and post-norm(s) after attention (jina-bert-v2's attn_norm_2 too).
#include <algorithm>
#include <cmath>

#include "engine/model/llama_model.h"

namespace tc::model {

void LlamaModel::project_pooled(std::vector<float>& embedding) {
  if (weights_.dense_2.data == nullptr) return;
  std::vector<float> wide(static_cast<size_t>(weights_.dense_2.ne[1]));
  backend_.matmul(weights_.dense_2, embedding.data(), 1, wide.data());
  backend_.matmul(weights_.dense_3, wide.data(), 1, embedding.data());
}

void LlamaModel::classify(std::vector<float>& pooled) {
  auto f32 = [](const kernels::Tensor& t) { return static_cast<const float*>(t.data); };
  if (weights_.cls.data != nullptr) {
    std::vector<float> hidden(static_cast<size_t>(weights_.cls.ne[1]));  // n_embd; jina's: the scores
    backend_.matmul(weights_.cls, pooled.data(), 1, hidden.data());
    if (weights_.cls_b.data != nullptr) {
      backend_.add_bias(hidden.data(), f32(weights_.cls_b), 1, static_cast<int64_t>(hidden.size()));
    }
    if (spec_.architecture->modern_bert_layers) {  // gelu (tanh's approximation, as ggml_gelu), then cls.norm
      constexpr float kSqrt2OverPi = 0.7978845608f;
      for (float& h : hidden) h = 0.5f * h * (1.0f + std::tanh(kSqrt2OverPi * (h + 0.044715f * h * h * h)));
      if (weights_.cls_norm.data != nullptr) {
        backend_.layer_norm(hidden.data(), f32(weights_.cls_norm), nullptr, 1, spec_.n_embd,
                            static_cast<float>(spec_.rms_eps), hidden.data());
      }
    } else {
      for (float& h : hidden) h = std::tanh(h);
    }
    pooled = std::move(hidden);
  }
  if (weights_.cls_out.data == nullptr) return;
  std::vector<float> scores(static_cast<size_t>(spec_.n_cls_out));
  backend_.matmul(weights_.cls_out, pooled.data(), 1, scores.data());
  if (weights_.cls_out_b.data != nullptr) backend_.add_bias(scores.data(), f32(weights_.cls_out_b), 1, spec_.n_cls_out);
  if (spec_.rank_by_last_token) {  // Qwen3-Reranker: the labels' probabilities (as ggml_soft_max)
    const float top = *std::max_element(scores.begin(), scores.end());
    double sum = 0;
    for (float& s : scores) sum += (s = std::exp(s - top));
    for (float& s : scores) s = static_cast<float>(s / sum);
  }
  pooled = std::move(scores);
}

void LlamaModel::add_bert_inputs(kernels::Backend& b, float* x, const int32_t* positions, int64_t n_tokens,
                                 float* scratch) {
  const int64_t n_embd = spec_.n_embd;
  if (weights_.token_types.data != nullptr) {  // every token is of type 0 ("sentence A"), as in llama.cpp
    if (token_type_row_.empty()) {
      const int32_t type0 = 0;
      token_type_row_.resize(static_cast<size_t>(n_embd));
      b.get_rows(weights_.token_types, &type0, 1, token_type_row_.data());
    }
    b.add_bias(x, token_type_row_.data(), n_tokens, n_embd);
  }
  if (weights_.position_embd.data != nullptr) {
    b.get_rows(weights_.position_embd, positions, n_tokens, scratch);
    b.add(x, scratch, n_tokens * n_embd);
  }
  norm(b, x, weights_.token_embd_norm, weights_.token_embd_norm_b, n_tokens, x);
}

void LlamaModel::add_bert_attention(kernels::Backend& b, const LayerWeights& w, float* x, float* attn,
                                    int64_t n_tokens) {
  const int64_t n = n_tokens * spec_.n_embd;
  b.add(attn, x, n);  // attn + x: the bits of x + attn
  if (w.attn_out_norm_2.data == nullptr) {
    norm(b, attn, w.attn_out_norm, w.attn_out_norm_b, n_tokens, x);
    return;
  }
  norm(b, attn, w.attn_out_norm, w.attn_out_norm_b, n_tokens, attn);
  b.add(attn, x, n);  // the layer input again, as llama.cpp's bert graph adds it
  norm(b, attn, w.attn_out_norm_2, w.attn_out_norm_2_b, n_tokens, x);
}

}  // namespace tc::model
