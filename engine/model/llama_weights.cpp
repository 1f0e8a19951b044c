// map_llama_weights: tensor infos -> views into the mapped file.
#include "engine/model/llama_weights.h"

namespace tc::model {

kernels::Tensor tensor_view(const gguf::GgufFile& file, const std::string& name) {
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

LlamaWeights map_llama_weights(const gguf::GgufFile& file, const ModelSpec& spec) {
  LlamaWeights w;
  w.token_embd = tensor_view(file, "token_embd.weight");
  w.output_norm = tensor_view(file, "output_norm.weight");
  w.output = spec.tied_embeddings ? w.token_embd : tensor_view(file, "output.weight");
  w.layers.reserve(static_cast<size_t>(spec.n_layer));
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
    LayerWeights lw{tensor_view(file, name("attn_norm")), tensor_view(file, name("attn_q")),
                    tensor_view(file, name("attn_k")),    tensor_view(file, name("attn_v")),
                    tensor_view(file, name("attn_output")), tensor_view(file, name("ffn_norm")),
                    tensor_view(file, name("ffn_gate")),  tensor_view(file, name("ffn_up")),
                    {},                                   {}};
    if (spec.sparse_layout) {
      lw.ffn_down_t = tensor_view(file, name("ffn_down_t"));
    } else {
      lw.ffn_down = tensor_view(file, name("ffn_down"));
    }
    w.layers.push_back(lw);
  }
  return w;
}

}  // namespace tc::model
