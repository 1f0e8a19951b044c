// HybridPrefetch: the per-layer state machine (copy / shadow / idle), the
// guess turned into a cache plan, and the cost model's verdicts.
#include "engine/model/hybrid_prefetch.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <stdexcept>

#include "engine/sparse/bandwidth_probe.h"
#include "engine/sparse/vram_budget.h"

namespace tc::model {
namespace {

int64_t packed_bytes(const kernels::Tensor& t) { return kernels::row_bytes(t.dtype, t.n_cols()) * t.n_rows(); }
int64_t packed_row(const kernels::Tensor& t) { return kernels::row_bytes(t.dtype, t.n_cols()); }

}  // namespace

std::string_view prefetch_mode_name(PrefetchMode mode) {
  switch (mode) {
    case PrefetchMode::Off: return "off";
    case PrefetchMode::On: return "on";
    case PrefetchMode::Auto: return "auto";
  }
  return "?";
}

int64_t cache_slots_per_layer(const PrefetchOptions& options, int64_t n_ff) {
  if (options.mode == PrefetchMode::Off) return 0;
  return options.cache_slots >= 0 ? options.cache_slots : n_ff / 16;
}

std::vector<int64_t> cache_slot_counts(const PrefetchOptions& options, const NeuronPlacement& placement,
                                       int64_t n_ff) {
  std::vector<int64_t> slots(placement.hot.size(), 0);
  const int64_t per_layer = cache_slots_per_layer(options, n_ff);
  if (per_layer == 0) return slots;
  for (size_t l = 1; l < slots.size(); ++l) {
    slots[l] = std::min(per_layer, n_ff - static_cast<int64_t>(placement.hot[l].size()));
  }
  return slots;
}

HybridPrefetch::HybridPrefetch(const ModelSpec& spec, kernels::Backend& device, kernels::Backend& cpu,
                               const HybridWeights& weights, const sparse::PredictorSet& predictors,
                               PrefetchOptions options)
    : spec_(spec), weights_(weights), options_(std::move(options)), bandwidths_(options_.bandwidths) {
  if (options_.window_runs < 1 || options_.hold_runs < 0) {
    throw std::invalid_argument("prefetch: window_runs must be at least 1 and hold_runs at least 0");
  }
  n_words_ = (spec.n_ff + 31) / 32;
  const auto n_layer = static_cast<size_t>(spec.n_layer);
  int64_t max_slots = 0;
  for (const HybridLayerWeights& w : weights.layers) max_slots = std::max(max_slots, w.n_slots);
  const bool prefetching = max_slots > 0 && options_.mode != PrefetchMode::Off;
  if (prefetching && options_.mode == PrefetchMode::Auto && !bandwidths_.known()) {
    bandwidths_ = sparse::measure_bandwidths(device, cpu);
  }
  layers_.reserve(n_layer);
  for (size_t l = 0; l < n_layer; ++l) {
    const HybridLayerWeights& w = weights.layers[l];
    const auto& p = predictors.layers[l];
    LayerPrefetch& lp = layers_.emplace_back(NeuronCache(spec.n_ff, w.n_slots));
    if (l > 0 && w.n_slots > 0 && options_.mode != PrefetchMode::Off) {
      lp.state = options_.mode == PrefetchMode::On ? LayerState::Copy : LayerState::Shadow;
    }
    lp.fire_count.assign(static_cast<size_t>(spec.n_ff), 0);
    lp.guess.assign(static_cast<size_t>(n_words_), 0);
    lp.window.neuron_bytes =
        static_cast<double>(packed_row(w.host_gate) + packed_row(w.host_up) + packed_row(w.host_down_t));
    lp.window.lookahead_bytes = static_cast<double>(packed_bytes(p.fc1) + packed_bytes(p.fc2));
  }
  for (auto* v : {&counters_.cold, &counters_.guessed, &counters_.guessed_hit, &counters_.filled,
                  &counters_.copying_runs}) {
    v->assign(n_layer, 0);
  }
  guess_ids_.reserve(static_cast<size_t>(spec.n_ff));
  fills_.reserve(static_cast<size_t>(max_slots));
  if (prefetching) prefetcher_ = std::make_unique<NeuronPrefetcher>(device, weights);
}

std::string HybridPrefetch::summary() const {
  int64_t max_slots = 0;
  double cache_bytes = 0;
  for (const LayerPrefetch& lp : layers_) {
    max_slots = std::max(max_slots, lp.cache.n_slots());
    cache_bytes += static_cast<double>(lp.cache.n_slots()) * lp.window.neuron_bytes;
  }
  std::string line = std::string(prefetch_mode_name(options_.mode)) + ", up to " + std::to_string(max_slots) +
                     " cache slots per layer (" + sparse::human_bytes(static_cast<uint64_t>(cache_bytes)) +
                     " of VRAM beyond the placement)";
  if (options_.mode == PrefetchMode::Auto && bandwidths_.known()) {
    char rates[160];
    std::snprintf(rates, sizeof rates, "; PCIe %.1f GB/s, host DRAM %.1f GB/s, GPU %.1f GB/s",
                  bandwidths_.pcie_h2d / 1e9, bandwidths_.host_dram / 1e9, bandwidths_.gpu / 1e9);
    line += rates;
  }
  return line;
}

bool HybridPrefetch::guesses_next(int64_t layer) const {
  return layer + 1 < spec_.n_layer && layers_[static_cast<size_t>(layer + 1)].state != LayerState::Idle;
}

void HybridPrefetch::begin_layer(int64_t layer) {
  if (prefetcher_ != nullptr && prefetcher_->busy(layer)) {
    layers_[static_cast<size_t>(layer)].cache.land(prefetcher_->collect(layer, options_.wait_for_issue));
  }
}

void HybridPrefetch::end_layer(int64_t layer, std::span<const int32_t> cold, int64_t n_hot, const uint32_t* guess_bits,
                               int64_t n_tokens) {
  const auto l = static_cast<size_t>(layer);
  LayerPrefetch& lp = layers_[l];
  ++tick_;
  int64_t listed = 0, guessed_hit = 0;
  for (const int32_t neuron : cold) {
    const auto i = static_cast<size_t>(neuron);
    ++lp.fire_count[i];
    listed += lp.cache.listed(neuron) ? 1 : 0;
    guessed_hit += (lp.guess[i / 32] >> (i % 32)) & 1u;
    lp.cache.touch(neuron, tick_);
  }
  if (lp.guess_pending) {
    counters_.cold[l] += static_cast<int64_t>(cold.size());
    counters_.guessed_hit[l] += guessed_hit;
    lp.guess_pending = false;
  }
  counters_.copying_runs[l] += lp.state == LayerState::Copy ? 1 : 0;
  ++lp.runs_in_state;
  if (lp.state == LayerState::Shadow) {
    lp.window.hot += static_cast<double>(n_hot);
    lp.window.cold += static_cast<double>(cold.size());
    lp.window.hits += static_cast<double>(listed);
    ++lp.window_runs;
    if (lp.window_runs >= options_.window_runs) decide(layer);
  } else if (options_.mode == PrefetchMode::Auto && lp.cache.n_slots() > 0 && layer > 0 &&
             lp.runs_in_state >= options_.hold_runs) {
    lp.state = LayerState::Shadow;  // measure again
    lp.runs_in_state = 0;
  }
  if (guess_bits != nullptr) plan_guess(layer + 1, guess_bits, n_tokens);
}

void HybridPrefetch::decide(int64_t layer) {
  LayerPrefetch& lp = layers_[static_cast<size_t>(layer)];
  sparse::PrefetchTraffic mean = lp.window;
  const auto runs = static_cast<double>(lp.window_runs);
  mean.hot /= runs;
  mean.cold /= runs;
  mean.hits /= runs;
  mean.fills /= runs;
  lp.state = sparse::estimate_prefetch(bandwidths_, mean).prefetch ? LayerState::Copy : LayerState::Idle;
  lp.runs_in_state = 0;
  lp.window.hot = lp.window.cold = lp.window.hits = lp.window.fills = 0;
  lp.window_runs = 0;
}

void HybridPrefetch::plan_guess(int64_t target, const uint32_t* guess_bits, int64_t n_tokens) {
  const auto t = static_cast<size_t>(target);
  const HybridLayerWeights& w = weights_.layers[t];
  LayerPrefetch& lp = layers_[t];
  guess_ids_.clear();
  for (int64_t word_idx = 0; word_idx < n_words_; ++word_idx) {
    uint32_t word = 0;
    for (int64_t k = 0; k < n_tokens; ++k) word |= guess_bits[k * n_words_ + word_idx];
    for (; word != 0; word &= word - 1) {
      const int64_t neuron = 32 * word_idx + std::countr_zero(word);
      if (neuron < spec_.n_ff && w.hot_position[static_cast<size_t>(neuron)] < 0) {
        guess_ids_.push_back(static_cast<int32_t>(neuron));
      }
    }
  }
  // The guess as a bitmask (for the recall when the layer runs); a rewritten
  // guess loses ids out of range, hot or repeated.
  std::fill(lp.guess.begin(), lp.guess.end(), 0u);
  if (options_.rewrite_guess) options_.rewrite_guess(target, guess_ids_);
  size_t kept = 0;
  for (const int32_t neuron : guess_ids_) {
    if (neuron < 0 || neuron >= spec_.n_ff || w.hot_position[static_cast<size_t>(neuron)] >= 0) continue;
    uint32_t& word = lp.guess[static_cast<size_t>(neuron / 32)];
    const uint32_t bit = 1u << (neuron % 32);
    if ((word & bit) != 0) continue;
    word |= bit;
    guess_ids_[kept++] = neuron;
  }
  guess_ids_.resize(kept);
  lp.guess_pending = true;
  counters_.guessed[t] += static_cast<int64_t>(kept);
  if (lp.state == LayerState::Idle) return;
  if (prefetcher_->busy(target)) lp.cache.land(prefetcher_->collect(target, false));
  if (prefetcher_->busy(target)) return;  // the last fill is still being issued: skip this guess
  // The neurons that fired most often so far take the slots first.
  std::sort(guess_ids_.begin(), guess_ids_.end(), [&lp](int32_t a, int32_t b) {
    const uint32_t fa = lp.fire_count[static_cast<size_t>(a)], fb = lp.fire_count[static_cast<size_t>(b)];
    return fa != fb ? fa > fb : a < b;
  });
  fills_.clear();
  const bool copy = lp.state == LayerState::Copy;
  lp.cache.plan(guess_ids_, tick_, copy, fills_);
  if (!copy) lp.window.fills += static_cast<double>(fills_.size());
  if (copy && !fills_.empty()) {
    prefetcher_->post(target, fills_);
    counters_.filled[t] += static_cast<int64_t>(fills_.size());
  }
}

}  // namespace tc::model
