// MoeFfnBlock: a mixture-of-experts FFN (Mixtral, Qwen3 MoE) on the CPU
// backend, as llama.cpp's build_moe_ffn computes it for these models: the
// router's logits ffn_gate_inp · x, a softmax over all experts, the
// n_expert_used most probable experts, their probabilities renormalised to
// sum to 1, and the output
//   sum over the chosen experts, in order of probability, of
//   p_e * down_e(silu(gate_e · x) * (up_e · x))
// (Qwen2 MoE: p_e not renormalised, plus a shared expert's output times
// sigmoid(ffn_gate_inp_shexp · x); gpt-oss: biases on the router and on
// each expert's three matmuls, p_e a softmax over the chosen logits, and
// its clamped SwiGLU; GLM-4.5: p_e sigmoids, experts chosen with a bias,
// weights scaled, plus an ungated shared expert; SmallThinker: ReGLU
// experts, the router reading the layer's input).
// Each expert runs once per step over the rows routed to it. A token's
// output does not depend on the other tokens of the step (the matmul's bits
// do not depend on its row count, and each token sums its experts in its own
// order). Owns its workspace, grown to the largest step seen. Not
// thread-safe: the engine thread's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "kernels/backend.h"

namespace tc::model {

// One token's routing: the chosen experts, most probable first (ties: the
// lower index), and their weights. For every token t of `logits`, f32
// [n_tokens, n_expert], writes experts[t * k + s] and weights[t * k + s]
// for s < k (k = n_expert_used). Gating Softmax: the weights are the
// softmax's probabilities of the chosen experts, the experts chosen by
// probability + selection_bias (f32 [n_expert], or null: ERNIE 4.5).
// Sigmoid: each logit's sigmoid, chosen likewise (DeepSeek V3). Either way `normalize` divides them by their sum (at least
// 6.1e-5, llama.cpp's clamp), and a `scale` other than 0 and 1 multiplies
// them after. SoftmaxOfChosen: a softmax over the k chosen logits
// (`normalize` changes nothing then).
// With groups > 1 the choice is among the experts of the groups_used
// groups (of groups equal ones) whose two best selection scores sum
// highest (DeepSeek V3).
struct Routing {
  bool normalize = true;
  ExpertGating gating = ExpertGating::Softmax;
  const float* selection_bias = nullptr;
  float scale = 0.0f;
  int64_t groups = 1;
  int64_t groups_used = 1;
};
void route_experts(const float* logits, int64_t n_tokens, int64_t n_expert, int64_t k, int32_t* experts,
                   float* weights, const Routing& routing = {});

class MoeFfnBlock {
 public:
  // `spec` (with experts) and `backend` (the CPU's) must outlive the block.
  MoeFfnBlock(const ModelSpec& spec, kernels::Backend& backend);

  // out = the mixture's output for rows [0, n_tokens) of in; f32 [n_tokens,
  // n_embd] both, host memory. `w` is layer `layer`'s (router and experts).
  // The router reads router_in, f32 [n_tokens, n_embd] (null: in;
  // SmallThinker's router reads the layer's input).
  void run(int64_t layer, const LayerWeights& w, const float* in, int64_t n_tokens, float* out,
           const float* router_in = nullptr);

  // How many (token, expert) pairs each expert has run since construction,
  // [n_layer][n_expert]: the routing's balance, for tests and reports.
  const std::vector<std::vector<int64_t>>& expert_tokens() const { return expert_tokens_; }

 private:
  void grow(int64_t n_tokens);
  // run() for a step of one token (a decode step), after routing.
  void run_one_token(int64_t layer, const LayerWeights& w, const float* in, float* out);
  // out += sigmoid(ffn_gate_inp_shexp · x) * shared_expert(x), per token
  // (the plain shared_expert(x) where it has no gate).
  void add_shared_expert(const LayerWeights& w, const float* in, int64_t n_tokens, float* out);

  const ModelSpec& spec_;
  kernels::Backend& backend_;
  kernels::Activation activation_;
  int64_t capacity_ = 0;                 // tokens the buffers hold
  std::vector<float> logits_;            // [T, n_expert] router logits
  std::vector<int32_t> chosen_;          // [T, k] experts per token, most probable first
  std::vector<float> weights_;           // [T, k] their weights
  std::vector<int32_t> by_expert_;       // [T * k] (token, slot) pairs t * k + s, grouped by expert
  std::vector<int64_t> expert_begin_;    // [n_expert + 1] offsets into by_expert_
  std::vector<int64_t> cursor_;          // [n_expert] the grouping's write positions
  std::vector<float> rows_in_;           // [T, n_embd] one expert's input rows, gathered
  std::vector<float> gate_;              // [T, n_ff]
  std::vector<float> up_;                // [T, n_ff]
  std::vector<float> rows_out_;          // [T, n_embd] one expert's output rows
  std::vector<float> slot_out_;          // [T, k, n_embd] each (token, slot)'s weighted output
  std::vector<float> shared_gate_;       // [T, n_ff_shared] the shared expert's gate, then activation
  std::vector<float> shared_up_;         // [T, n_ff_shared]
  std::vector<float> shared_out_;        // [T, n_embd]
  std::vector<kernels::MatmulTarget> gate_up_targets_;  // [2k] run_one_token's matmul_many
  std::vector<std::vector<int64_t>> expert_tokens_;
};

}  // namespace tc::model
