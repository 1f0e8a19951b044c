// Writing a Nemotron-H file (llama.cpp's nemotron_h keys and tensor names).
#include "profiler/make_nemotron_h.h"

#include <cmath>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"
#include "profiler/make_granite_hybrid.h"

namespace tc::profiler {
namespace {

using kernels::DType;

enum class Block { Mamba2, Mamba1, Ffn, Attention };

// Nemotron-H's pattern; every layer Mamba-2 (Mamba-1) in a mamba2 (mamba) file.
Block block_of(const MakeModelOptions& o, int64_t layer) {
  if (o.arch == "mamba2") return Block::Mamba2;
  if (o.arch == "mamba") return Block::Mamba1;
  switch (layer % 4) {
    case 1: return Block::Ffn;
    case 3: return Block::Attention;
    default: return Block::Mamba2;
  }
}

}  // namespace

// Mamba-1's widths in a made file: d_inner 2 n_embd, --ssm-state (16)
// states, 4 taps, dt_rank ceil(n_embd / 16) as Mamba's default.
model::Mamba1Shape mamba1_shape_of(const MakeModelOptions& o) {
  return {.conv_kernel = 4, .d_inner = 2 * o.n_embd, .d_state = o.ssm_state > 0 ? o.ssm_state : 16,
          .dt_rank = (o.n_embd + 15) / 16, .dt_b_c_rms = o.ssm_dt_b_c_rms};
}

void write_mamba1_keys(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const model::Mamba1Shape m = mamba1_shape_of(o);
  const std::string p = o.arch + ".";
  w.set(p + "ssm.conv_kernel", gguf::Value(static_cast<uint32_t>(m.conv_kernel)));
  w.set(p + "ssm.inner_size", gguf::Value(static_cast<uint32_t>(m.d_inner)));
  w.set(p + "ssm.state_size", gguf::Value(static_cast<uint32_t>(m.d_state)));
  w.set(p + "ssm.time_step_rank", gguf::Value(static_cast<uint32_t>(m.dt_rank)));
  w.set(p + "ssm.dt_b_c_rms", gguf::Value(m.dt_b_c_rms));
}

// Layer l's Mamba-1 tensors (llama.cpp's names); ssm_dt in f32 where its
// dt_rank-wide rows are not whole blocks of `base`.
void add_mamba1_tensors(const MakeModelOptions& o, int64_t l, DType base, DType heavy, const RandomTensorAdder& add) {
  const model::Mamba1Shape m = mamba1_shape_of(o);
  auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
  const std::string blk = "blk." + std::to_string(l) + ".";
  const LayerTensorWriter t(o, add);
  t.matrix(name("ssm_in"), base, o.n_embd, 2 * m.d_inner);
  add(name("ssm_conv1d"), DType::F32, {m.conv_kernel, m.d_inner}, 0.0f, 0.5f);
  add(blk + "ssm_conv1d.bias", DType::F32, {m.d_inner}, 0.0f, 0.1f);
  t.matrix(name("ssm_x"), base, m.d_inner, m.dt_rank + 2 * m.d_state);
  const DType dt_type = m.dt_rank % kernels::dtype_traits(base).block_size == 0 ? base : DType::F32;
  t.matrix(name("ssm_dt"), dt_type, m.dt_rank, m.d_inner);
  add(blk + "ssm_dt.bias", DType::F32, {m.d_inner}, -1.0f, 0.5f);
  add(blk + "ssm_a", DType::F32, {m.d_state, m.d_inner}, -1.0f, 0.2f);  // -exp(A_log): decays
  add(blk + "ssm_d", DType::F32, {m.d_inner}, 1.0f, 0.3f);
  t.matrix(name("ssm_out"), heavy, m.d_inner, o.n_embd);
}

void write_nemotron_h_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                            const RandomTensorAdder& add) {
  const std::string p = o.arch + ".";
  if (o.arch == "mamba") {
    write_mamba1_keys(o, w);
  } else {
    write_mamba2_keys(o, w);
  }
  if (o.arch == "mamba2" || o.arch == "mamba") {  // as their converters write them: no attention, no FFN
    for (const char* key : {"attention.head_count", "attention.head_count_kv", "feed_forward_length"}) {
      w.set(p + key, gguf::Value(uint32_t{0}));
    }
  } else {
    std::vector<int32_t> ff, kv;
    for (int64_t l = 0; l < o.n_layer; ++l) {
      ff.push_back(block_of(o, l) == Block::Ffn ? static_cast<int32_t>(o.n_ff) : 0);
      kv.push_back(block_of(o, l) == Block::Attention ? static_cast<int32_t>(o.n_head_kv) : 0);
    }
    w.set(p + "feed_forward_length", gguf::Value::i32_array(ff));
    w.set(p + "attention.head_count_kv", gguf::Value::i32_array(kv));
    // llama.cpp's loader requires it (the multi-token prediction head's norm) beside the RMS one.
    w.set(p + "attention.layer_norm_epsilon", gguf::Value(static_cast<float>(o.rms_eps)));
  }
  if (o.n_expert > 0) {  // nemotron_h_moe: Nemotron Nano 3's routing, every FFN layer a mixture
    w.set(p + "leading_dense_block_count", gguf::Value(uint32_t{0}));
    w.set(p + "expert_feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));
    w.set(p + "expert_shared_count", gguf::Value(uint32_t{1}));
    w.set(p + "expert_shared_feed_forward_length", gguf::Value(static_cast<uint32_t>(2 * o.n_ff)));
    w.set(p + "expert_weights_norm", gguf::Value(true));
    w.set(p + "expert_weights_scale", gguf::Value(2.5f));
  }

  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  const int64_t n_q = o.n_head * head_dim, n_kv = o.n_head_kv * head_dim;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    t.norm(name("attn_norm"), o.n_embd);  // every block's one norm
    switch (block_of(o, l)) {
      case Block::Mamba2:
        add_mamba2_tensors(o, l, base, heavy, add);
        break;
      case Block::Mamba1:
        add_mamba1_tensors(o, l, base, heavy, add);
        break;
      case Block::Attention:
        t.attention(l, base, heavy, n_q, n_kv);
        break;
      case Block::Ffn:
        if (o.n_expert == 0) {
          t.matrix(name("ffn_up"), base, o.n_embd, o.n_ff);
          t.matrix(name("ffn_down"), heavy, o.n_ff, o.n_embd);
          break;
        }
        // The router (f32), its selection bias, ungated experts and a shared expert twice as wide.
        t.matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert);
        add("blk." + std::to_string(l) + ".exp_probs_b.bias", DType::F32, {o.n_expert}, 0.0f, 0.1f);
        t.experts(name("ffn_up_exps"), base, o.n_embd, o.n_ff, o.n_expert);
        t.experts(name("ffn_down_exps"), heavy, o.n_ff, o.n_embd, o.n_expert);
        t.matrix(name("ffn_up_shexp"), base, o.n_embd, 2 * o.n_ff);
        t.matrix(name("ffn_down_shexp"), heavy, 2 * o.n_ff, o.n_embd);
        break;
    }
  }
}

}  // namespace tc::profiler
