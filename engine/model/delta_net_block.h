// DeltaNetBlock: Qwen 3.5's gated delta net, the linear attention its
// recurrent layers run in place of attention (ModelSpec::delta_net), as
// llama.cpp's qwen35 and qwen3next graphs and ggml's ssm_conv and
// gated_delta_net ops compute it. Per token t of a sequence, per value head
// h (its query and key head DeltaNetShape::key_head(h): h % n_k_heads,
// Qwen3-Next's h / (n_v_heads / n_k_heads)):
//   qkv = causal conv (conv_kernel taps per channel) of attn_qkv · x, silu
//   q, k = l2-normed heads of qkv; v = its value heads
//   beta = sigmoid(ssm_beta · x); decay = exp(softplus(ssm_alpha · x + ssm_dt) * ssm_a)
//   S = S * decay; S += k (beta (v - S^T k))^T; o = S^T q / sqrt(head_dim)
//   out = ssm_out · (rms_norm(o, ssm_norm) * silu(attn_gate · x)), per head
// S (head_dim x head_dim per value head) and the convolution's last inputs
// carry over between steps in the slot's recurrent state (KvCache). Host
// memory, the CPU backend. Owns its workspace, grown to the largest step.
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

class DeltaNetBlock : public RecurrentMixer {
 public:
  DeltaNetBlock(const ModelSpec& spec, kernels::Backend& backend);

  void run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
           std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) override;

 private:
  // Qwen3-Next's fused projections (rows grouped by key head) into qkv_ and z_, beta_ and decay_.
  void ungroup_qkvz(const float* qkvz, int64_t n_tokens);
  void ungroup_ba(const float* ba, int64_t n_tokens);
  // The recurrence of one value head over one sequence's rows.
  void run_head(int64_t h, const float* qkv, const float* beta, const float* decay, int64_t n, float* state,
                float* o) const;

  const ModelSpec& spec_;
  kernels::Backend& backend_;
  std::vector<float> qkv_;    // [T, conv_dim]: projected, then convolved and silu'd, q and k l2-normed
  std::vector<float> z_;      // [T, value_dim]
  std::vector<float> beta_;   // [T, n_v_heads]
  std::vector<float> decay_;  // [T, n_v_heads]: alpha, then the decay exp(g)
  std::vector<float> o_;      // [T, value_dim]: the heads' outputs, then gated
  std::vector<float> window_;  // [conv_kernel - 1 + T] one channel's state and inputs
  std::vector<float> fused_;   // [T, conv_dim + value_dim] ssm_in's rows, then [T, 2 n_v_heads] ssm_ba's
};

}  // namespace tc::model
