// Writing an LFM2 file (llama.cpp's lfm2 and lfm2moe keys and tensor names).
#include "profiler/make_lfm2.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"

namespace tc::profiler {
namespace {

using kernels::DType;

constexpr int64_t kTaps = 3;
constexpr int64_t kDenseLead = 2;

bool attends(int64_t layer) { return layer % 3 == 2; }

}  // namespace

void check_lfm2_options(const MakeModelOptions& o) {
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  if (o.n_head * head_dim != o.n_embd) {
    throw std::invalid_argument("lfm2: the attention's heads must span n_embd (--n-head x head_dim = --n-embd)");
  }
  if (o.n_expert > 0 && o.n_layer <= kDenseLead) {
    throw std::invalid_argument("lfm2moe: more than " + std::to_string(kDenseLead) + " layers (the first are dense)");
  }
}

void write_lfm2_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                      const RandomTensorAdder& add) {
  const std::string p = o.arch + ".";
  std::vector<int32_t> kv_heads;
  for (int64_t l = 0; l < o.n_layer; ++l) kv_heads.push_back(attends(l) ? static_cast<int32_t>(o.n_head_kv) : 0);
  w.set(p + "attention.head_count_kv", gguf::Value::i32_array(kv_heads));
  w.set(p + "shortconv.l_cache", gguf::Value(static_cast<uint32_t>(kTaps)));
  w.set(p + "feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));  // the dense FFNs'
  const int64_t n_ff_expert = std::max<int64_t>(32, o.n_ff / 2);
  if (o.n_expert > 0) {  // LFM2-8B-A1B's routing
    w.set(p + "leading_dense_block_count", gguf::Value(static_cast<uint32_t>(kDenseLead)));
    w.set(p + "expert_feed_forward_length", gguf::Value(static_cast<uint32_t>(n_ff_expert)));
    w.set(p + "expert_gating_func", gguf::Value(uint32_t{2}));  // sigmoid
    w.set(p + "expert_shared_count", gguf::Value(uint32_t{0}));
    w.set(p + "expert_weights_norm", gguf::Value(true));
    w.set(p + "expert_weights_scale", gguf::Value(1.0f));
  }

  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.n_embd / o.n_head, n_kv = o.n_head_kv * head_dim;
  t.norm("token_embd_norm.weight", o.n_embd);  // the output norm, under LFM2's name
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    t.norm(name("attn_norm"), o.n_embd);
    if (attends(l)) {
      t.matrix(name("attn_q"), base, o.n_embd, o.n_embd);
      t.matrix(name("attn_k"), base, o.n_embd, n_kv);
      t.matrix(name("attn_v"), heavy, o.n_embd, n_kv);
      t.matrix(name("attn_output"), base, o.n_embd, o.n_embd);
      t.norm(name("attn_q_norm"), head_dim);
      t.norm(name("attn_k_norm"), head_dim);
    } else {  // the short convolution
      t.matrix(name("shortconv.in_proj"), base, o.n_embd, 3 * o.n_embd);
      add(name("shortconv.conv"), DType::F32, {kTaps, o.n_embd}, 0.0f, 0.5f);
      t.matrix(name("shortconv.out_proj"), heavy, o.n_embd, o.n_embd);
    }
    t.norm(name("ffn_norm"), o.n_embd);
    if (o.n_expert == 0 || l < kDenseLead) {
      t.swiglu_ffn(l, base, heavy, o.n_ff);
      continue;
    }
    t.matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert);
    add("blk." + std::to_string(l) + ".exp_probs_b.bias", DType::F32, {o.n_expert}, 0.0f, 0.1f);
    t.experts(name("ffn_gate_exps"), base, o.n_embd, n_ff_expert, o.n_expert);
    t.experts(name("ffn_up_exps"), base, o.n_embd, n_ff_expert, o.n_expert);
    t.experts(name("ffn_down_exps"), heavy, n_ff_expert, o.n_embd, o.n_expert);
  }
}

}  // namespace tc::profiler
