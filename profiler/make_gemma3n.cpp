// Writing a Gemma 3n file (llama.cpp's gemma3n keys and tensor names).
#include "profiler/make_gemma3n.h"

#include <algorithm>
#include <string>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"

namespace tc::profiler {

using kernels::DType;

void write_gemma3n_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                         const RandomTensorAdder& add) {
  const std::string p = "gemma3n.";
  constexpr int64_t kStreams = 4, kLaurelRank = 64, kPerLayer = 256, kPeriod = 5;
  w.set(p + "attention.sliding_window",
        gguf::Value(static_cast<uint32_t>(o.sliding_window > 0 ? o.sliding_window : 512)));
  w.set(p + "rope.freq_base_swa", gguf::Value(10000.0f));
  gguf::Value::Array pattern;  // as the converter writes it: windowed or not, per layer
  for (int64_t l = 0; l < o.n_layer; ++l) pattern.emplace_back(l % kPeriod < kPeriod - 1);
  w.set(p + "attention.sliding_window_pattern", gguf::Value::array(gguf::ValueType::BOOL, std::move(pattern)));
  w.set(p + "altup.active_idx", gguf::Value(uint32_t{0}));
  w.set(p + "altup.num_inputs", gguf::Value(static_cast<uint32_t>(kStreams)));
  w.set(p + "embedding_length_per_layer_input", gguf::Value(static_cast<uint32_t>(kPerLayer)));
  const int64_t n_shared = std::max<int64_t>(0, o.n_layer - model::AltUpShape::kKvLayers);
  w.set(p + "attention.shared_kv_layers", gguf::Value(static_cast<uint32_t>(n_shared)));

  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  const int64_t n_q = o.n_head * head_dim, n_kv = o.n_head_kv * head_dim;
  // LAuReL's 64-wide input cannot be a 256-weight block type: f16 there.
  const DType laurel_r_type = kLaurelRank % kernels::dtype_traits(base).block_size == 0 ? base : DType::F16;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view s) { return model::layer_tensor_name(l, s); };
    t.norm(name("attn_norm"), o.n_embd);
    t.attention(l, base, heavy, n_q, n_kv);
    t.norm(name("attn_q_norm"), head_dim);
    t.norm(name("attn_k_norm"), head_dim);
    t.norm(name("post_attention_norm"), o.n_embd);
    t.norm(name("ffn_norm"), o.n_embd);
    t.matrix(name("ffn_gate"), base, o.n_embd, o.n_ff);
    t.matrix(name("ffn_up"), base, o.n_embd, o.n_ff);
    t.matrix(name("ffn_down"), heavy, o.n_ff, o.n_embd);
    t.norm(name("post_ffw_norm"), o.n_embd);
    t.matrix(name("inp_gate"), base, o.n_embd, kPerLayer);
    t.matrix(name("proj"), base, kPerLayer, o.n_embd);
    t.norm(name("post_norm"), o.n_embd);
    // AltUp's small coefficient matrices and router in f32, as llama.cpp's quantizer leaves them.
    add(name("altup_correct_coef"), DType::F32, {kStreams, kStreams}, 0.0f, 0.3f);
    t.norm(name("altup_correct_scale"), o.n_embd);
    add(name("altup_predict_coef"), DType::F32, {kStreams, kStreams * kStreams}, 0.0f, 0.3f);
    t.matrix(name("altup_router"), DType::F32, o.n_embd, kStreams);
    t.norm(name("altup_router_norm"), o.n_embd);
    t.matrix(name("laurel_l"), base, o.n_embd, kLaurelRank);
    t.matrix(name("laurel_r"), laurel_r_type, kLaurelRank, o.n_embd);
    t.norm(name("laurel_post_norm"), o.n_embd);
  }
  t.experts("altup_proj.weight", base, o.n_embd, o.n_embd, kStreams - 1);
  t.experts("altup_unembd_proj.weight", base, o.n_embd, o.n_embd, kStreams - 1);
  const int64_t n_all = kPerLayer * o.n_layer;
  add("per_layer_token_embd.weight", base, {n_all, o.n_vocab}, 0.0f, 1.0f);
  t.matrix("per_layer_model_proj.weight", base, o.n_embd, n_all);
  t.norm("per_layer_proj_norm.weight", kPerLayer);
}

}  // namespace tc::profiler
