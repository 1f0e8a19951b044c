// Writing a Jamba file (llama.cpp's jamba keys and tensor names).
#include "profiler/make_jamba.h"

#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"
#include "profiler/make_nemotron_h.h"

namespace tc::profiler {

using kernels::DType;

void write_jamba_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                       const RandomTensorAdder& add) {
  const std::string p = o.arch + ".";
  auto attends = [](int64_t l) { return l % 4 == 2; };
  std::vector<int32_t> kv;
  for (int64_t l = 0; l < o.n_layer; ++l) kv.push_back(attends(l) ? static_cast<int32_t>(o.n_head_kv) : 0);
  w.set(p + "attention.head_count_kv", gguf::Value::i32_array(kv));
  write_mamba1_keys(o, w);

  const model::Mamba1Shape m = mamba1_shape_of(o);
  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view s) { return model::layer_tensor_name(l, s); };
    t.norm(name("attn_norm"), o.n_embd);
    if (attends(l)) {
      t.attention(l, base, heavy, o.n_head * head_dim, o.n_head_kv * head_dim);
    } else {
      add_mamba1_tensors(o, l, base, heavy, add);
      t.norm(name("ssm_dt_norm"), m.dt_rank);
      t.norm(name("ssm_b_norm"), m.d_state);
      t.norm(name("ssm_c_norm"), m.d_state);
    }
    t.norm(name("ffn_norm"), o.n_embd);
    if (o.n_expert > 0 && l % 2 == 1) {  // the router in f32, as llama.cpp's quantizer leaves it
      t.matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert);
      t.experts(name("ffn_gate_exps"), base, o.n_embd, o.n_ff, o.n_expert);
      t.experts(name("ffn_up_exps"), base, o.n_embd, o.n_ff, o.n_expert);
      t.experts(name("ffn_down_exps"), heavy, o.n_ff, o.n_embd, o.n_expert);
    } else {
      t.swiglu_ffn(l, base, heavy, o.n_ff);
    }
  }
}

}  // namespace tc::profiler
