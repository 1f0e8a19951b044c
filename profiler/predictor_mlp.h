// The low-rank predictor MLP score = fc2 · relu(fc1 · x) in float32: its
// scores over recorded samples, and its training by Adam on a
// recall-weighted binary cross-entropy (PowerInfer trains the same shape in
// PyTorch; this is the C++ equivalent, deterministic for any thread count).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "profiler/predictor_samples.h"

namespace tc::profiler {

// A predictor's weights as float32 (before, or after, rounding to the
// file's dtype). Laid out as the file stores them.
struct LowRankMlp {
  int64_t rank = 0;
  std::vector<float> fc1;  // f32 [rank, n_embd]: row k = hidden unit k, applied to the raw ffn_in
  std::vector<float> fc2;  // f32 [n_ff, rank]: row i = neuron i's score weights
};

// A standard normal draw by Box-Muller (std::normal_distribution differs
// between standard libraries; this does not).
double standard_normal(std::mt19937_64& rng);

// scores f32 [idx.size(), n_ff]: row t = fc2 · relu(fc1 · x) for sample idx[t]
// of `layer`, with kernels::matmul (deterministic for any thread count).
void predictor_scores(const LowRankMlp& mlp, const PredictorSamples& samples, int64_t layer,
                      std::span<const int64_t> idx, float* scores, kernels::ThreadPool& pool);

struct MlpTrainOptions {
  int64_t rank = 64;
  int epochs = 30;              // passes over the training samples
  int64_t batch = 256;          // samples per Adam step
  float learning_rate = 3e-3f;  // peak; linear warm-up over 5% of the steps, cosine decay to 10%
  // Weight of the loss on firing neurons: -[w y log p + (1 - y) log(1 - p)],
  // p = sigmoid(score). Above 1 the optimum moves the score-0 boundary toward recall.
  float pos_weight = 4.0f;
  uint64_t seed = 1;
  float init_logit_rms = 4.0f;  // with an initial predictor: the RMS its scores are scaled to
};

// Steps done, steps in all.
using MlpProgress = std::function<void(int64_t step, int64_t n_steps)>;

// Trains on the samples `train` of `layer`. Inputs are scaled per channel
// to unit RMS during training and the scale is folded into fc1, so the
// result applies to the raw ffn_in as the runtime evaluates it. `init`
// (optional, rank <= options.rank, e.g. the gate-SVD predictor) is the
// starting point of its hidden units, its scores rescaled to an RMS of
// options.init_logit_rms; the other units start random (He init for fc1, small fc2).
LowRankMlp train_low_rank_mlp(const PredictorSamples& samples, int64_t layer, std::span<const int64_t> train,
                              const MlpTrainOptions& options, kernels::ThreadPool& pool,
                              const MlpProgress& progress = {}, const LowRankMlp* init = nullptr);

}  // namespace tc::profiler
