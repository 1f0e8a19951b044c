// SparseFfnBlock: one layer's FFN over the neurons its predictor says fire,
// for decode steps (PowerInfer's CPU path):
//   1. scores = fc2 · relu(fc1 · x) on the residual x entering the block;
//      the predicted set P = neurons whose score exceeds the layer's
//      threshold for any token of the step (ascending);
//   2. gate over P (row-gathered GEMV); each token keeps only its own
//      predicted neurons (so a token's output does not depend on the other
//      tokens of the step: the same bits alone or batched); neurons whose
//      gate is <= 0 for every token are exactly zero after the ReLU and are
//      dropped: the live set L;
//   3. up over L (gated forms; an ungated FFN's one matrix is the gate), the
//      activation, and down as a sum of the scaled ffn_down_t rows of L
//      (zeros skipped, deterministic).
// Neurons a predictor misses are not computed: that is the approximation.
// Not thread-safe: the engine thread's. Workspace grows to the largest step.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/sparse/predictors.h"
#include "kernels/backend.h"

namespace tc::model {

// What the sparse FFN did, summed over the steps since reset (per layer).
struct SparseFfnCounters {
  std::vector<int64_t> token_layers;  // [n_layer] tokens that went through the sparse path
  std::vector<int64_t> predicted;     // [n_layer] neurons in P, summed over steps
  std::vector<int64_t> computed;      // [n_layer] neurons in L, summed over steps
  int64_t sparse_steps = 0;           // steps that ran the sparse FFN
  int64_t dense_steps = 0;            // steps that ran dense (more tokens than the crossover)
};

class SparseFfnBlock {
 public:
  // `spec` and the memory the predictor views point into must outlive this
  // object (the views are copied: the CPU backend may have repacked them,
  // engine/model/cpu_repack.h); `activation` is the model's (ReGLU, DReLU
  // or Relu: the live-set rule needs relu(gate)).
  SparseFfnBlock(const ModelSpec& spec, kernels::Backend& backend, std::vector<sparse::LayerPredictor> predictors,
                 kernels::Activation activation);

  // out = FFN(ffn_norm(x)) over the predicted neurons of layer `layer`.
  // x: f32 [n_tokens, n_embd], the residual entering the block (predictor input);
  // cur: f32 [n_tokens, n_embd], ffn_norm(x);
  // out: f32 [n_tokens, n_embd], overwritten.
  void run(int64_t layer, const LayerWeights& w, const float* x, const float* cur, int64_t n_tokens, float* out);

  SparseFfnCounters& counters() { return counters_; }

 private:
  void reserve(int64_t n_tokens);

  const ModelSpec& spec_;
  kernels::Backend& backend_;
  std::vector<sparse::LayerPredictor> predictors_;  // [n_layer]
  kernels::Activation activation_;
  SparseFfnCounters counters_;
  int64_t capacity_tokens_ = 0;
  int64_t max_rank_ = 0;
  std::vector<float> hidden_;     // f32 [T, max rank]: relu(fc1 · x)
  std::vector<float> scores_;     // f32 [T, n_ff]: fc2 · hidden
  std::vector<int32_t> rows_;     // i32 [n_ff]: P, then L (ascending neuron ids)
  std::vector<int32_t> live_;     // i32 [n_ff]: positions in P of the neurons of L
  std::vector<float> gate_;       // f32 [T, |P|]: gate over P, then compacted to [T, |L|]
  std::vector<float> up_;         // f32 [T, |L|]: up over L, then the activation
};

}  // namespace tc::model
