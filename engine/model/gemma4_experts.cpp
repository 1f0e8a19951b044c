// LlamaModel::add_gemma4_experts: Gemma 4's mixture of experts beside each
// layer's dense FFN (26B A4B), in llama.cpp's gemma4 graph order.
#include <cmath>

#include "engine/model/llama_model.h"

namespace tc::model {

void LlamaModel::add_gemma4_experts(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* x,
                                    int64_t n_tokens, float* ffn_out) {
  const int64_t n_embd = spec_.n_embd;
  const auto n = static_cast<size_t>(n_tokens * n_embd);
  const auto eps = static_cast<float>(spec_.rms_eps);
  auto f32 = [](const kernels::Tensor& t) { return static_cast<const float*>(t.data); };
  if (gemma4_experts_.input.size() < n) {
    gemma4_experts_.input.resize(n);
    gemma4_experts_.router.resize(n);
    gemma4_experts_.output.resize(n);
  }
  float* input = gemma4_experts_.input.data();
  float* router = gemma4_experts_.router.data();
  float* output = gemma4_experts_.output.data();
  // The dense FFN's output, normed.
  b.rms_norm(ffn_out, f32(w.ffn_post_norm_1), n_tokens, n_embd, eps, ffn_out);
  // The experts read pre_ffw_norm_2(x); the router rms_norm(x) / sqrt(n_embd) * ffn_gate_inp.scale.
  b.rms_norm(x, f32(w.ffn_pre_norm_2), n_tokens, n_embd, eps, input);
  b.rms_norm(x, unit_weights_.data(), n_tokens, n_embd, eps, router);
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(n_embd));
  const float* scale = f32(w.ffn_gate_inp_s);
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* row = router + t * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) row[i] = (row[i] * inv_sqrt) * scale[i];
  }
  moe_ffn_->run(layer, w, input, n_tokens, output, router);
  b.rms_norm(output, f32(w.ffn_post_norm_2), n_tokens, n_embd, eps, output);
  b.add(ffn_out, output, n_tokens * n_embd);
}

}  // namespace tc::model
