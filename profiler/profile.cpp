// profile_activations(): a ForwardObserver that counts firings (or, for SwiGLU,
// first samples |activation| to set the per-layer thresholds), driven over
// the corpus in chunks by run_corpus_chunks().
#include "profiler/profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/perplexity.h"

namespace tc::profiler {
namespace {

// |activation| values kept per layer for the SwiGLU threshold (a strided sample).
constexpr int64_t kCalibrationSamples = int64_t{1} << 20;

class FiringCounter final : public model::ForwardObserver {
 public:
  // n_ctx: the chunk length (a token at a multiple of it starts a chunk,
  // with no token before it).
  FiringCounter(sparse::FiringRule rule, int64_t n_layer, int64_t n_ff, int64_t n_ctx)
      : rule_(rule), n_ff_(n_ff),
        counts_(static_cast<size_t>(n_layer), std::vector<int64_t>(static_cast<size_t>(n_ff), 0)),
        thresholds_(static_cast<size_t>(n_layer), 0.0f), samples_(static_cast<size_t>(n_layer)), n_ctx_(n_ctx),
        previous_(static_cast<size_t>(n_layer), std::vector<uint8_t>(static_cast<size_t>(n_ff), 0)),
        seen_(static_cast<size_t>(n_layer), 0), shared_(static_cast<size_t>(n_layer), 0),
        fired_after_first_(static_cast<size_t>(n_layer), 0) {}

  void set_calibrating(bool on) { calibrating_ = on; }

  void on_ffn(int64_t layer, int64_t n_tokens, const float* /*ffn_in*/, const float* gate,
              const float* up) override {
    const auto l = static_cast<size_t>(layer);
    if (calibrating_) {
      sample(l, n_tokens, gate, up);
      return;
    }
    int64_t* count = counts_[l].data();
    uint8_t* previous = previous_[l].data();
    const float threshold = thresholds_[l];
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* g = gate + t * n_ff_;  // f32 [n_ff]
      const float* u = up + t * n_ff_;    // f32 [n_ff]
      const bool has_previous = seen_[l]++ % n_ctx_ != 0;
      for (int64_t i = 0; i < n_ff_; ++i) {
        const int fired = sparse::fires(rule_, g[i], u[i], threshold);
        count[i] += fired;
        if (has_previous) {
          fired_after_first_[l] += fired;
          shared_[l] += fired & previous[i];
        }
        previous[i] = static_cast<uint8_t>(fired);
      }
    }
  }

  // Per layer: of the firings of tokens that have one before them in their
  // chunk, the share whose neuron fired for that token too.
  std::vector<double> consecutive_overlap() const {
    std::vector<double> out;
    for (size_t l = 0; l < shared_.size(); ++l) {
      out.push_back(fired_after_first_[l] == 0 ? 0.0
                                               : static_cast<double>(shared_[l]) /
                                                     static_cast<double>(fired_after_first_[l]));
    }
    return out;
  }

  // Sets each layer's threshold to the (1 - fraction) quantile of its samples.
  void finish_calibration(float fraction) {
    for (size_t l = 0; l < samples_.size(); ++l) {
      auto& s = samples_[l];
      if (s.empty()) continue;
      const auto k = std::min(s.size() - 1, static_cast<size_t>(static_cast<double>(1.0f - fraction) *
                                                                static_cast<double>(s.size())));
      std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
      thresholds_[l] = s[k];
      s = {};
    }
    calibrating_ = false;
  }

  const std::vector<std::vector<int64_t>>& counts() const { return counts_; }
  const std::vector<float>& thresholds() const { return thresholds_; }

 private:
  void sample(size_t l, int64_t n_tokens, const float* gate, const float* up) {
    const int64_t n = n_tokens * n_ff_;
    const int64_t stride = std::max<int64_t>(1, n / kCalibrationSamples);
    auto& s = samples_[l];
    for (int64_t i = 0; i < n && static_cast<int64_t>(s.size()) < kCalibrationSamples; i += stride) {
      s.push_back(std::fabs(sparse::swiglu(gate[i], up[i])));
    }
  }

  sparse::FiringRule rule_;
  int64_t n_ff_;
  bool calibrating_ = false;
  std::vector<std::vector<int64_t>> counts_;  // [n_layer][n_ff]
  std::vector<float> thresholds_;             // [n_layer]
  std::vector<std::vector<float>> samples_;   // [n_layer][<= kCalibrationSamples], calibration only
  int64_t n_ctx_;
  std::vector<std::vector<uint8_t>> previous_;  // [n_layer][n_ff]: fired for the layer's last token
  std::vector<int64_t> seen_;                   // [n_layer]: tokens counted
  std::vector<int64_t> shared_;                 // [n_layer]: firings whose neuron fired for the token before
  std::vector<int64_t> fired_after_first_;      // [n_layer]: firings of tokens with one before them
};

// Detaches the observer however the run ends.
struct ObserverGuard {
  model::LlamaModel& model;
  ~ObserverGuard() { model.set_observer(nullptr); }
};

}  // namespace

sparse::ActivationStats profile_activations(const model::LoadedModel& loaded, kernels::Backend& backend,
                                            std::span<const text::TokenId> tokens, text::TokenId bos,
                                            const ProfileOptions& options, const ProfileProgress& progress) {
  const auto& spec = loaded.spec;
  if (options.n_ctx < 1) throw std::invalid_argument("profile: the context must hold at least 1 token");
  if (options.n_batch < 1) throw std::invalid_argument("profile: the batch size must be at least 1");
  const sparse::FiringRule rule = sparse::firing_rule_for(spec.ffn_form);
  if (rule == sparse::FiringRule::AbsAboveThreshold &&
      !(options.silu_fire_fraction > 0.0f && options.silu_fire_fraction < 1.0f)) {
    throw std::invalid_argument("profile: the SwiGLU fire fraction must be in (0, 1), got " +
                                std::to_string(options.silu_fire_fraction));
  }
  auto n_use = static_cast<int64_t>(tokens.size());
  if (options.max_tokens > 0) n_use = std::min(n_use, options.max_tokens);
  if (n_use == 0) throw std::invalid_argument("profile: the corpus has no tokens");
  if (n_use > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument("profile: " + std::to_string(n_use) + " tokens is more than a stats file counts (" +
                                std::to_string(std::numeric_limits<int32_t>::max()) + "); lower --tokens");
  }

  const int64_t n_ctx = std::min(options.n_ctx, n_use);
  const int64_t n_batch = std::min(options.n_batch, n_ctx);
  model::LlamaModel llama(loaded, backend);
  runtime::KvCache kv(backend, spec, 1, n_ctx);
  FiringCounter counter(rule, spec.n_layer, spec.n_ff, n_ctx);
  llama.set_observer(&counter);
  const ObserverGuard guard{llama};

  const bool calibrate = rule == sparse::FiringRule::AbsAboveThreshold;
  const auto corpus = tokens.first(static_cast<size_t>(n_use));
  // Calibration runs the first chunk once more; progress counts it too.
  const int64_t total = n_use + (calibrate ? n_ctx : 0);
  int64_t done_before = 0;
  const ProfileProgress report = [&](int64_t done, int64_t /*pass_total*/) {
    if (progress) progress(done_before + done, total);
  };
  std::vector<int64_t> starts;
  for (int64_t start = 0; start < n_use; start += n_ctx) starts.push_back(start);
  if (calibrate) {
    counter.set_calibrating(true);
    run_corpus_chunks(llama, kv, corpus, bos, std::span(starts).first(1), n_ctx, n_batch, "profile", report);
    counter.finish_calibration(options.silu_fire_fraction);
    done_before = n_ctx;
  }
  run_corpus_chunks(llama, kv, corpus, bos, starts, n_ctx, n_batch, "profile", report);

  sparse::ActivationStats stats;
  stats.model = sparse::fingerprint_model(loaded.file, spec);
  stats.rule = rule;
  stats.n_tokens = static_cast<uint64_t>(n_use);
  stats.n_ctx = n_ctx;
  stats.corpus = options.corpus_name;
  stats.fire_fraction = calibrate ? options.silu_fire_fraction : 0.0f;
  stats.thresholds = counter.thresholds();
  for (const auto& layer : counter.counts()) stats.fire_counts.emplace_back(layer.begin(), layer.end());
  if (options.consecutive_overlap) *options.consecutive_overlap = counter.consecutive_overlap();
  return stats;
}

void run_corpus_chunks(model::LlamaModel& llama, runtime::KvCache& kv, std::span<const text::TokenId> tokens,
                       text::TokenId bos, std::span<const int64_t> starts, int64_t n_ctx, int64_t n_batch,
                       std::string_view what, const ProfileProgress& progress) {
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  int64_t total = 0;
  for (const int64_t start : starts) total += std::min(n_ctx, n_tokens - start);
  int64_t done = 0;
  std::vector<float> logits;
  for (const int64_t start : starts) {
    const int64_t len = std::min(n_ctx, n_tokens - start);
    const auto chunk = runtime::chunk_tokens(tokens, start, len, bos);
    kv.clear(0);
    for (int64_t b = 0; b < len; b += n_batch) {
      const int64_t n = std::min(n_batch, len - b);
      const model::StepSequence step{0, std::span(chunk).subspan(static_cast<size_t>(b), static_cast<size_t>(n)),
                                     false};
      if (llama.forward({&step, 1}, kv, logits) != model::StepStatus::Ok) {
        throw std::invalid_argument(std::string(what) + ": the corpus holds a token id outside [0, " +
                                    std::to_string(llama.spec().n_vocab) + ") near token " +
                                    std::to_string(start + b));
      }
      done += n;
      if (progress) progress(done, total);
    }
  }
  kv.clear(0);
}

}  // namespace tc::profiler
