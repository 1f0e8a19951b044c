// TEAL calibration: records the magnitudes of every layer's linear inputs
// (model::LinearInput) over a corpus and turns them into the per-tensor
// threshold ladder of sparse::TealCalibration (engine/sparse/teal.h), which
// `thermocline profile` stores in the stats file.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/teal.h"
#include "engine/text/vocab.h"
#include "kernels/backend.h"
#include "profiler/profile.h"

namespace tc::profiler {

// Keeps, per layer and site, a deterministic strided sample of |x| spread
// over `expected_tokens` tokens: the stride is ceil(expected_tokens * n /
// max_samples) entries, raised until it is coprime to the row length n so
// that the sample visits every column. Entries past max_samples are
// ignored. Memory: n_layer * 4 * max_samples floats. Called on the engine
// thread; not thread-safe.
class TealCalibrator final : public model::ForwardObserver {
 public:
  TealCalibrator(const model::ModelSpec& spec, int64_t expected_tokens, int64_t max_samples,
                 std::vector<float> levels = sparse::teal_default_levels());

  void on_ffn(int64_t, int64_t, const float*, const float*, const float*) override {}
  void on_linear_input(int64_t layer, model::LinearInput site, int64_t n_tokens, int64_t n,
                       const float* x) override;

  int64_t n_tokens() const { return n_tokens_; }
  // The quantiles of the samples at each level: threshold j is the sorted
  // sample at index floor(levels[j] * n_samples), so that a fraction
  // levels[j] of the samples lies strictly below it (ties aside). Frees the
  // samples. Throws std::invalid_argument when no tokens were seen.
  sparse::TealCalibration finish();

 private:
  struct Site {
    int64_t n = 0;       // row length: n_embd, or n_ff for FfnDown
    int64_t stride = 1;  // entries between samples
    int64_t seen = 0;    // entries shown so far
    int64_t next = 0;    // index (over all entries shown) of the next one to sample
    std::vector<float> samples;  // f32 [<= max_samples], |x|
  };
  int64_t n_layer_;
  int64_t max_samples_;
  std::vector<float> levels_;
  std::vector<Site> sites_;  // [n_layer][kLinearInputCount]
  int64_t n_tokens_ = 0;
};

struct TealCalibrationOptions {
  int64_t n_ctx = 512;                // tokens per chunk; lowered to half the corpus when it is shorter
  int64_t n_batch = 512;              // tokens per forward step inside a chunk
  int64_t max_tokens = 0;             // corpus tokens to use at most; 0: all of them
  int64_t max_samples = int64_t{1} << 18;  // |x| values kept per layer and site (1 MiB each)
  std::vector<float> levels = sparse::teal_default_levels();
};

// Runs the dense model over `tokens` (the corpus tokenized, BOS first as the
// vocab asks) as runtime::perplexity() evaluates a text: whole chunks of
// n_ctx from an empty KV cache with `bos` first (-1: none); the tail that
// does not fill a chunk is not used. Throws std::invalid_argument for fewer
// than 8 tokens, an n_ctx below 4, or options out of range.
sparse::TealCalibration calibrate_teal(const model::LoadedModel& model, kernels::Backend& backend,
                                       std::span<const text::TokenId> tokens, text::TokenId bos,
                                       const TealCalibrationOptions& options, const ProfileProgress& progress = {});

}  // namespace tc::profiler
