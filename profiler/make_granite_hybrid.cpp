// Writing a Granite 4.0-H file (llama.cpp's granitehybrid keys and tensor names).
#include "profiler/make_granite_hybrid.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"

namespace tc::profiler {
namespace {

using kernels::DType;

constexpr int64_t kConvKernel = 4;
constexpr int64_t kStates = 16;  // without --ssm-state
constexpr int64_t kAttentionInterval = 4;

}  // namespace

model::Mamba2Shape mamba2_shape_of(const MakeModelOptions& o) {
  model::Mamba2Shape m;
  m.conv_kernel = kConvKernel;
  m.d_inner = 2 * o.n_embd;  // llama.cpp's loader asserts this expansion
  m.d_state = o.ssm_state > 0 ? o.ssm_state : kStates;
  m.n_head = o.n_head;
  m.n_group = o.n_head % 2 == 0 ? 2 : 1;
  return m;
}

namespace {

bool attends(int64_t layer) { return (layer + 1) % kAttentionInterval == 0; }

}  // namespace

void write_mamba2_keys(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const model::Mamba2Shape m = mamba2_shape_of(o);
  const std::string p = o.arch + ".";
  w.set(p + "ssm.conv_kernel", gguf::Value(static_cast<uint32_t>(m.conv_kernel)));
  w.set(p + "ssm.inner_size", gguf::Value(static_cast<uint32_t>(m.d_inner)));
  w.set(p + "ssm.state_size", gguf::Value(static_cast<uint32_t>(m.d_state)));
  w.set(p + "ssm.time_step_rank", gguf::Value(static_cast<uint32_t>(m.n_head)));
  w.set(p + "ssm.group_count", gguf::Value(static_cast<uint32_t>(m.n_group)));
}

void add_mamba2_tensors(const MakeModelOptions& o, int64_t l, DType base, DType heavy, const RandomTensorAdder& add) {
  const model::Mamba2Shape m = mamba2_shape_of(o);
  auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
  const std::string blk = "blk." + std::to_string(l) + ".";
  const LayerTensorWriter t(o, add);
  t.matrix(name("ssm_in"), base, o.n_embd, m.in_dim());
  add(name("ssm_conv1d"), DType::F32, {m.conv_kernel, m.conv_dim()}, 0.0f, 0.5f);
  add(blk + "ssm_conv1d.bias", DType::F32, {m.conv_dim()}, 0.0f, 0.1f);
  add(blk + "ssm_dt.bias", DType::F32, {m.n_head}, 0.0f, 1.0f);
  add(blk + "ssm_a", DType::F32, {1, m.n_head}, -1.0f, 0.3f);  // -exp(A_log): a decay
  add(blk + "ssm_d", DType::F32, {1, m.n_head}, 1.0f, 0.3f);
  if (!o.no_ssm_norm) add(name("ssm_norm"), DType::F32, {m.d_inner / m.n_group, m.n_group}, 1.0f, 0.1f);
  t.matrix(name("ssm_out"), heavy, m.d_inner, o.n_embd);
}

void check_granite_hybrid_options(const MakeModelOptions& o, DType base, DType heavy) {
  const model::Mamba2Shape m = mamba2_shape_of(o);
  if (m.d_inner % m.n_head != 0) throw std::invalid_argument("granitehybrid: --n-head must divide 2 x --n-embd");
  for (const DType t : {base, heavy}) {
    const int64_t block = kernels::dtype_traits(t).block_size;
    if (m.d_inner % block != 0) {
      throw std::invalid_argument("granitehybrid: Mamba-2's width " + std::to_string(m.d_inner) +
                                  " must be whole blocks of " + std::string(kernels::dtype_name(t)));
    }
  }
}

void write_granite_hybrid_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                                const RandomTensorAdder& add) {
  const std::string p = o.arch + ".";
  std::vector<int32_t> kv_heads;
  for (int64_t l = 0; l < o.n_layer; ++l) kv_heads.push_back(attends(l) ? static_cast<int32_t>(o.n_head_kv) : 0);
  w.set(p + "attention.head_count_kv", gguf::Value::i32_array(kv_heads));
  write_mamba2_keys(o, w);
  w.set(p + "rope.scaling.finetuned", gguf::Value(false));  // Granite 4.0-H attends without RoPE
  if (o.n_expert > 0) w.set(p + "expert_shared_feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));

  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  const int64_t n_q = o.n_head * head_dim, n_kv = o.n_head_kv * head_dim;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    t.norm(name("attn_norm"), o.n_embd);
    if (attends(l)) {
      t.attention(l, base, heavy, n_q, n_kv);
    } else {
      add_mamba2_tensors(o, l, base, heavy, add);
    }
    t.norm(name("ffn_norm"), o.n_embd);
    if (o.n_expert == 0) {
      t.swiglu_ffn(l, base, heavy, o.n_ff);
      continue;
    }
    t.matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert);
    t.experts(name("ffn_gate_exps"), base, o.n_embd, o.n_ff, o.n_expert);
    t.experts(name("ffn_up_exps"), base, o.n_embd, o.n_ff, o.n_expert);
    t.experts(name("ffn_down_exps"), heavy, o.n_ff, o.n_embd, o.n_expert);
    t.matrix(name("ffn_gate_shexp"), base, o.n_embd, o.n_ff);
    t.matrix(name("ffn_up_shexp"), base, o.n_embd, o.n_ff);
    t.matrix(name("ffn_down_shexp"), heavy, o.n_ff, o.n_embd);
  }
}

}  // namespace tc::profiler
