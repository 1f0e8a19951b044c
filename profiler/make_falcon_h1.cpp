// Writing a Falcon-H1 file (llama.cpp's falcon-h1 keys and tensor names).
#include "profiler/make_falcon_h1.h"

#include <string>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"
#include "profiler/make_granite_hybrid.h"

namespace tc::profiler {

void write_falcon_h1_model(const MakeModelOptions& o, kernels::DType base, kernels::DType heavy, gguf::GgufWriter& w,
                           const RandomTensorAdder& add) {
  write_mamba2_keys(o, w);
  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view s) { return model::layer_tensor_name(l, s); };
    t.norm(name("attn_norm"), o.n_embd);
    add_mamba2_tensors(o, l, base, heavy, add);
    t.attention(l, base, heavy, o.n_head * head_dim, o.n_head_kv * head_dim);
    t.norm("blk." + std::to_string(l) + ".ffn_norm", o.n_embd);  // no .weight, as llama.cpp names it
    t.swiglu_ffn(l, base, heavy, o.n_ff);
  }
}

}  // namespace tc::profiler
