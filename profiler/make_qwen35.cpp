// Writing a dense Qwen 3.5 file (llama.cpp's qwen35 keys and tensor names).
#include "profiler/make_qwen35.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"

namespace tc::profiler {
namespace {

using kernels::DType;

constexpr int64_t kConvKernel = 4;
constexpr int64_t kFullAttentionInterval = 4;

model::DeltaNetShape delta_net_of(const MakeModelOptions& o) {
  model::DeltaNetShape d;
  d.conv_kernel = kConvKernel;
  d.n_k_heads = o.n_head_kv;
  d.n_v_heads = std::max(o.n_head_kv, o.n_head / 2);
  d.head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  return d;
}

}  // namespace

void check_qwen35_options(const MakeModelOptions& o, DType base, DType heavy) {
  const model::DeltaNetShape d = delta_net_of(o);
  if (d.n_v_heads % d.n_k_heads != 0) {
    throw std::invalid_argument("qwen35: --n-head-kv must divide the delta net's value heads (--n-head / 2)");
  }
  for (const DType t : {base, heavy}) {
    const int64_t block = kernels::dtype_traits(t).block_size;
    if (d.value_dim() % block != 0) {
      throw std::invalid_argument("qwen35: the delta net's value width " + std::to_string(d.value_dim()) +
                                  " must be whole blocks of " + std::string(kernels::dtype_name(t)));
    }
  }
}

void write_qwen35_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                        const RandomTensorAdder& add) {
  const model::DeltaNetShape d = delta_net_of(o);
  const std::string p = o.arch + ".";  // qwen35, qwen35moe or qwen3next
  w.set(p + "ssm.conv_kernel", gguf::Value(static_cast<uint32_t>(d.conv_kernel)));
  w.set(p + "ssm.inner_size", gguf::Value(static_cast<uint32_t>(d.value_dim())));
  w.set(p + "ssm.state_size", gguf::Value(static_cast<uint32_t>(d.head_dim)));
  w.set(p + "ssm.time_step_rank", gguf::Value(static_cast<uint32_t>(d.n_v_heads)));
  w.set(p + "ssm.group_count", gguf::Value(static_cast<uint32_t>(d.n_k_heads)));
  w.set(p + "full_attention_interval", gguf::Value(static_cast<uint32_t>(kFullAttentionInterval)));
  const bool qwen3next = o.arch == "qwen3next";
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  if (!qwen3next) {
    // M-RoPE's sections over the rotated pairs (text positions make it plain NeoX RoPE).
    const int64_t pairs = (o.n_rot > 0 ? o.n_rot : head_dim) / 2;
    const int32_t third = static_cast<int32_t>(pairs / 3);
    w.set(p + "rope.dimension_sections",
          gguf::Value::i32_array({third, third, static_cast<int32_t>(pairs - 2 * third), 0}));
  }

  const LayerTensorWriter t(o, add);
  const int64_t n_q = o.n_head * head_dim, n_kv = o.n_head_kv * head_dim;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    const std::string blk = "blk." + std::to_string(l) + ".";
    t.norm(name("attn_norm"), o.n_embd);
    if ((l + 1) % kFullAttentionInterval != 0) {  // the gated delta net
      if (qwen3next && o.fused_qkv) {  // older converters: q, k, v and z grouped by key head
        t.matrix(name("ssm_in"), base, o.n_embd, d.conv_dim() + d.value_dim());
      } else {
        t.matrix(name("attn_qkv"), base, o.n_embd, d.conv_dim());
        t.matrix(name("attn_gate"), base, o.n_embd, d.value_dim());
      }
      add(name("ssm_conv1d"), DType::F32, {d.conv_kernel, d.conv_dim()}, 0.0f, 0.5f);
      add(blk + "ssm_dt.bias", DType::F32, {d.n_v_heads}, 0.0f, 1.0f);
      add(blk + "ssm_a", DType::F32, {d.n_v_heads}, -0.5f, 0.1f);  // -exp(A_log): always negative, a decay
      if (qwen3next) {  // beta and alpha grouped by key head
        t.matrix(name("ssm_ba"), base, o.n_embd, 2 * d.n_v_heads);
      } else {
        t.matrix(name("ssm_beta"), base, o.n_embd, d.n_v_heads);
        t.matrix(name("ssm_alpha"), base, o.n_embd, d.n_v_heads);
      }
      t.norm(name("ssm_norm"), d.head_dim);
      t.matrix(name("ssm_out"), heavy, d.value_dim(), o.n_embd);
    } else {  // gated attention
      t.matrix(name("attn_q"), base, o.n_embd, 2 * n_q);
      t.matrix(name("attn_k"), base, o.n_embd, n_kv);
      t.matrix(name("attn_v"), heavy, o.n_embd, n_kv);
      t.matrix(name("attn_output"), base, n_q, o.n_embd);
      t.norm(name("attn_q_norm"), head_dim);
      t.norm(name("attn_k_norm"), head_dim);
    }
    t.norm(name("post_attention_norm"), o.n_embd);
    if (o.n_expert == 0) {
      t.swiglu_ffn(l, base, heavy, o.n_ff);
      continue;
    }
    // qwen35moe and qwen3next: the router (f32, as llama.cpp's quantizer leaves it), the
    // experts (gate and up in one tensor), a shared expert twice as wide and its gate.
    t.matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert);
    t.experts(name("ffn_gate_up_exps"), base, o.n_embd, 2 * o.n_ff, o.n_expert);
    t.experts(name("ffn_down_exps"), heavy, o.n_ff, o.n_embd, o.n_expert);
    add(name("ffn_gate_inp_shexp"), DType::F32, {o.n_embd}, 0.0f, t.sd_for(o.n_embd));
    t.matrix(name("ffn_gate_shexp"), base, o.n_embd, 2 * o.n_ff);
    t.matrix(name("ffn_up_shexp"), base, o.n_embd, 2 * o.n_ff);
    t.matrix(name("ffn_down_shexp"), heavy, 2 * o.n_ff, o.n_embd);
  }
}

}  // namespace tc::profiler
