// Training data for activation predictors: per layer, a bounded sample of
// tokens' FFN inputs (the residual entering the FFN block, what a predictor
// reads) and which neurons fired on them, recorded by a ForwardObserver over
// a corpus. Plain data once recorded.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/activation_stats.h"
#include "engine/text/vocab.h"
#include "kernels/backend.h"

namespace tc::profiler {

struct PredictorSamples {
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  int64_t n_samples = 0;  // tokens kept (the same tokens in every layer)
  int64_t n_seen = 0;     // tokens observed
  std::vector<std::vector<float>> x;         // [n_layer] f32 [n_samples, n_embd]: ffn_in rows
  std::vector<std::vector<uint64_t>> fired;  // [n_layer] u64 [n_samples, n_words()]: bit i = neuron i fired

  int64_t n_words() const { return (n_ff + 63) / 64; }
  const float* x_row(int64_t layer, int64_t s) const { return x[static_cast<size_t>(layer)].data() + s * n_embd; }
  const uint64_t* fired_row(int64_t layer, int64_t s) const {
    return fired[static_cast<size_t>(layer)].data() + s * n_words();
  }
  bool fires(int64_t layer, int64_t s, int64_t i) const { return (fired_row(layer, s)[i / 64] >> (i % 64)) & 1u; }
};

// Memory a recorder holds at most: n_layer * max_samples * (4 n_embd + 8 ceil(n_ff / 64)) bytes.
uint64_t predictor_samples_bytes(int64_t n_layer, int64_t n_embd, int64_t n_ff, int64_t max_samples);

// Throws std::invalid_argument unless the model's FFN form is ReLU-family
// (reglu, drelu): SwiGLU activations have no exact zeros to predict.
void require_relu_ffn(const model::ModelSpec& spec);

// Keeps up to max_samples tokens by reservoir sampling (Algorithm R) with a
// seeded generator: the sample depends only on the token stream and the
// seed. The decision is taken once per token (on layer 0), so every layer
// keeps the same tokens. Firing per sparse::firing_rule_for(spec.ffn_form).
// Engine thread only.
class PredictorRecorder final : public model::ForwardObserver {
 public:
  PredictorRecorder(const model::ModelSpec& spec, int64_t max_samples, uint64_t seed);
  void on_ffn(int64_t layer, int64_t n_tokens, const float* ffn_in, const float* gate, const float* up) override;
  PredictorSamples take();  // the samples so far; the recorder is empty afterwards

 private:
  sparse::FiringRule rule_;
  int64_t max_samples_;
  std::mt19937_64 rng_;
  std::vector<int64_t> step_slots_;  // [n_tokens of the step]: reservoir slot, -1: not kept
  PredictorSamples samples_;
};

struct RecordOptions {
  int64_t n_ctx = 512;          // tokens per chunk (each from an empty KV cache, BOS first)
  int64_t n_batch = 512;        // tokens per forward step
  int64_t max_samples = 16384;  // tokens kept per layer
  // Tokens to run: 0 means min(corpus, 4 * max_samples). The chunks run are
  // spread evenly over the corpus.
  int64_t n_tokens = 0;
  uint64_t seed = 0x7072656469637431;
};

// Tokens evaluated so far, tokens to evaluate in all.
using RecordProgress = std::function<void(int64_t done, int64_t total)>;

// Runs the model over `tokens` with a PredictorRecorder. Throws
// std::invalid_argument for a SwiGLU model, an empty corpus or options out
// of range.
PredictorSamples record_predictor_samples(const model::LoadedModel& model, kernels::Backend& backend,
                                          std::span<const text::TokenId> tokens, text::TokenId bos,
                                          const RecordOptions& options, const RecordProgress& progress = {});

// Disjoint sample indices: train, calibration (rank choice and thresholds)
// and evaluation (the reported figures), from a seeded shuffle.
struct SampleSplit {
  std::vector<int64_t> train, calib, eval;
};
// holdout in (0, 1): the fraction not trained on, halved between calib and eval.
SampleSplit split_samples(int64_t n_samples, double holdout, uint64_t seed);

// Uniform in [0, n) from a 64-bit draw (portable, unlike std::uniform_int_distribution).
inline uint64_t draw_below(uint64_t draw, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(draw) * n) >> 64);
}

}  // namespace tc::profiler
