// Mamba1Block: Mamba-1, the selective state space layer of the mamba
// architecture (Mamba, Falcon-Mamba; ModelSpec::mamba1), as llama.cpp's
// build_mamba_layer and ggml's ssm_conv and ssm_scan compute it. Per token
// of a sequence, with ssm_in · x = [x, z]:
//   x   = silu(causal conv of x (conv_kernel taps) + conv bias)
//   ssm_x · x = [dt, B, C] (RMS-normed: without a weight where dt_b_c_rms,
//               with Jamba's ssm_dt_norm, ssm_b_norm, ssm_c_norm where present)
//   dt' = softplus(ssm_dt · dt + ssm_dt.bias), one per channel i
//   per channel: s_i = s_i * exp(dt'_i A_i) + B x_i dt'_i (d_state values),
//                y_i = s_i · C + D_i x_i
//   out = ssm_out · (y * silu(z))
// s (d_inner x d_state) and the convolution's last inputs carry over between
// steps in the slot's recurrent state (KvCache). Host memory, the CPU
// backend. Owns its workspace, grown to the largest step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "engine/model/recurrent_mixer.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"

namespace tc::model {

class Mamba1Block : public RecurrentMixer {
 public:
  Mamba1Block(const ModelSpec& spec, kernels::Backend& backend);

  void run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
           std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) override;

 private:
  // Channels [c0, c1) of one sequence's rows scanned, their states advanced
  // and outputs (before the skip) into y_.
  void scan_channels(int64_t c0, int64_t c1, const LayerWeights& w, int64_t first, int64_t n, float* state);

  const ModelSpec& spec_;
  kernels::Backend& backend_;
  std::vector<float> in_;      // f32 [T, 2 d_inner]: x (convolved in place), z
  std::vector<float> x_;       // f32 [T, d_inner]: the convolved x, contiguous
  std::vector<float> xdb_;     // f32 [T, dt_rank + 2 d_state]: dt, B, C
  std::vector<float> dt_low_;  // f32 [T, dt_rank]
  std::vector<float> dt_;      // f32 [T, d_inner]: ssm_dt · dt + bias
  std::vector<float> y_;       // f32 [T, d_inner]
  std::vector<float> ones_;    // f32 [max(dt_rank, d_state)] of 1: the weightless norms
  std::vector<float> window_;  // the convolution's scratch
};

}  // namespace tc::model
