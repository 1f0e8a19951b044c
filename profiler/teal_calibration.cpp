// TealCalibrator (strided |x| samples -> quantile ladder) and calibrate_teal(),
// which drives the forward pass through runtime::perplexity()'s chunking.
#include "profiler/teal_calibration.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "engine/runtime/kv_cache.h"
#include "engine/runtime/perplexity.h"
#include "kernels/check.h"

namespace tc::profiler {

TealCalibrator::TealCalibrator(const model::ModelSpec& spec, int64_t expected_tokens, int64_t max_samples,
                               std::vector<float> levels)
    : n_layer_(spec.n_layer), max_samples_(max_samples), levels_(std::move(levels)),
      sites_(static_cast<size_t>(spec.n_layer * model::kLinearInputCount)) {
  if (max_samples < 1) throw std::invalid_argument("TEAL calibration: max_samples must be at least 1");
  if (expected_tokens < 1) throw std::invalid_argument("TEAL calibration: expected_tokens must be at least 1");
  // The levels' checks, before a long run rather than after it.
  sparse::validate_teal_calibration(
      {levels_, std::vector<float>(sites_.size() * levels_.size(), 0.0f), n_layer_, 1});
  for (size_t i = 0; i < sites_.size(); ++i) {
    auto& s = sites_[i];
    const auto site = static_cast<model::LinearInput>(static_cast<int64_t>(i) % model::kLinearInputCount);
    s.n = site == model::LinearInput::FfnDown      ? spec.n_ff
          : site == model::LinearInput::AttnOutput ? spec.n_embd_q()
                                                   : spec.n_embd;
    const int64_t entries = expected_tokens * s.n;
    s.stride = std::max<int64_t>(1, (entries + max_samples - 1) / max_samples);
    // A stride sharing a factor with n would see only some columns of every row.
    while (std::gcd(s.stride, s.n) != 1) ++s.stride;
    s.samples.reserve(static_cast<size_t>(std::min(max_samples, entries)));
  }
}

void TealCalibrator::on_linear_input(int64_t layer, model::LinearInput site, int64_t n_tokens, int64_t n,
                                     const float* x) {
  TC_CHECK(layer >= 0 && layer < n_layer_, "TEAL calibrator: layer out of range");
  auto& s = sites_[static_cast<size_t>(layer * model::kLinearInputCount + static_cast<int64_t>(site))];
  TC_CHECK(n == s.n, "TEAL calibrator: a linear input's row length is not the model's");
  if (layer == 0 && site == model::LinearInput::AttnQkv) n_tokens_ += n_tokens;
  const int64_t count = n_tokens * n;
  int64_t i = s.next - s.seen;
  for (; i < count && static_cast<int64_t>(s.samples.size()) < max_samples_; i += s.stride) {
    s.samples.push_back(std::fabs(x[i]));
  }
  s.next = s.seen + i;
  s.seen += count;
}

sparse::TealCalibration TealCalibrator::finish() {
  if (n_tokens_ < 1) throw std::invalid_argument("TEAL calibration: no tokens were run");
  sparse::TealCalibration c;
  c.levels = levels_;
  c.n_layer = n_layer_;
  c.n_tokens = static_cast<uint64_t>(n_tokens_);
  c.thresholds.reserve(sites_.size() * levels_.size());
  for (auto& s : sites_) {
    TC_CHECK(!s.samples.empty(), "TEAL calibrator: a layer's linear input was never seen");
    std::sort(s.samples.begin(), s.samples.end());
    const auto n = static_cast<double>(s.samples.size());
    for (const float a : levels_) {
      const auto k = std::min(s.samples.size() - 1, static_cast<size_t>(std::floor(static_cast<double>(a) * n)));
      c.thresholds.push_back(s.samples[k]);
    }
    s.samples = {};
  }
  sparse::validate_teal_calibration(c);
  return c;
}

sparse::TealCalibration calibrate_teal(const model::LoadedModel& loaded, kernels::Backend& backend,
                                       std::span<const text::TokenId> tokens, text::TokenId bos,
                                       const TealCalibrationOptions& options, const ProfileProgress& progress) {
  auto n_use = static_cast<int64_t>(tokens.size());
  if (options.max_tokens > 0) n_use = std::min(n_use, options.max_tokens);
  if (n_use < 8) {
    throw std::invalid_argument("TEAL calibration: the corpus has " + std::to_string(n_use) +
                                " tokens, at least 8 are needed");
  }
  if (options.n_ctx < 4) throw std::invalid_argument("TEAL calibration: the context must hold at least 4 tokens");
  // perplexity() wants two whole chunks at least.
  const int64_t n_ctx = std::min(options.n_ctx, n_use / 2);
  const int64_t n_chunks = n_use / n_ctx;

  model::LlamaModel llama(loaded, backend);
  runtime::KvCache kv(backend, loaded.spec, 1, n_ctx);
  TealCalibrator calibrator(loaded.spec, n_chunks * n_ctx, options.max_samples, options.levels);
  llama.set_observer(&calibrator);
  runtime::PerplexityCallbacks callbacks;
  callbacks.on_progress = progress;
  runtime::perplexity(llama, kv, tokens.first(static_cast<size_t>(n_use)), bos, {n_ctx, options.n_batch, 0},
                      callbacks);
  return calibrator.finish();
}

}  // namespace tc::profiler
