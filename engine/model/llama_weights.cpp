// map_llama_weights: tensor infos -> views into the mapped file.
#include "engine/model/llama_weights.h"

namespace tc::model {
namespace {

kernels::Tensor view(const gguf::GgufFile& file, const std::string& name) {
  const auto& info = file.tensor(name);
  const auto bytes = file.tensor_data(info);
  kernels::Tensor t;
  t.data = const_cast<std::byte*>(bytes.data());  // read-only mapping; ops never write weights
  t.dtype = info.dtype;
  for (size_t i = 0; i < info.ne.size(); ++i) t.ne[i] = info.ne[i];
  t.row_bytes = kernels::row_bytes(info.dtype, info.ne[0]);
  t.memory = kernels::MemoryKind::MappedFile;
  return t;
}

}  // namespace

LlamaWeights map_llama_weights(const gguf::GgufFile& file, const ModelSpec& spec) {
  if (spec.sparse_layout) {
    throw file.error("blk.0.ffn_down_t.weight",
                     "PowerInfer's neuron-major ffn_down_t runs on the sparse FFN, which this build does not have "
                     "yet; expected ffn_down");
  }
  LlamaWeights w;
  w.token_embd = view(file, "token_embd.weight");
  w.output_norm = view(file, "output_norm.weight");
  w.output = spec.tied_embeddings ? w.token_embd : view(file, "output.weight");
  w.layers.reserve(static_cast<size_t>(spec.n_layer));
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
    w.layers.push_back({view(file, name("attn_norm")), view(file, name("attn_q")), view(file, name("attn_k")),
                        view(file, name("attn_v")), view(file, name("attn_output")), view(file, name("ffn_norm")),
                        view(file, name("ffn_gate")), view(file, name("ffn_up")), view(file, name("ffn_down"))});
  }
  return w;
}

}  // namespace tc::model
