// Mamba2Block: Mamba-2, the selective state space layer Granite 4.0-H's
// recurrent layers run in place of attention (ModelSpec::mamba2), as
// llama.cpp's build_mamba2_layer and ggml's ssm_conv and ssm_scan compute
// it. Per token t of a sequence, with ssm_in · x = [z, xBC, dt]:
//   xBC = silu(causal conv of xBC (conv_kernel taps) + conv bias): x (n_head
//         heads of head_dim), then B and C (n_group groups of d_state)
//   per head h (its group g = h / (n_head / n_group)):
//     dt' = softplus(dt_h + ssm_dt.bias_h); S_h = S_h * exp(dt' A_h) + dt' x_h B_g^T
//     y_h = S_h C_g + D_h x_h
//   out = ssm_out · (grouped rms_norm(y * silu(z)) * ssm_norm)
// S (head_dim x d_state per head) and the convolution's last inputs carry
// over between steps in the slot's recurrent state (KvCache). Host memory,
// the CPU backend. Owns its workspace, grown to the largest step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/recurrent_mixer.h"
#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"

namespace tc::model {

class Mamba2Block : public RecurrentMixer {
 public:
  Mamba2Block(const ModelSpec& spec, kernels::Backend& backend);

  void run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
           std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) override;

 private:
  // The scan of one head over one sequence's rows (of in_), its state S
  // advanced, its outputs (before the skip) into y_.
  void scan_head(int64_t h, const LayerWeights& w, int64_t first, int64_t n, float* state);

  const ModelSpec& spec_;
  kernels::Backend& backend_;
  std::vector<float> in_;      // [T, in_dim]: z, xBC (convolved in place), dt
  std::vector<float> y_;       // [T, d_inner]: the heads' outputs, then gated and normed
  std::vector<float> window_;  // [conv_kernel - 1 + T] one channel's state and inputs
};

}  // namespace tc::model
