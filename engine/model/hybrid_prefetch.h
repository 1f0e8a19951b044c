// HybridPrefetch: hybrid mode's prefetch path on one GPU, driven by
// HybridFfnBlock on the engine thread. Per layer a VRAM neuron cache
// (NeuronCache, the directory; its rows follow the hot rows in
// HybridWeights), the lookahead (layer l + 1's predictor run on layer l's
// FFN input, one layer ahead as Deja Vu predicts), the prefetch thread
// (NeuronPrefetcher) and, in auto mode, the per-layer cost model
// (sparse::estimate_prefetch) choosing which layers copy. Per run of layer l:
//   begin_layer(l): the layer's fill, once issued, lands (the device's
//     stream waits for its copies);
//   resident_slot(l, i): the partition computes neuron i of P on the device
//     when its rows are in a slot;
//   end_layer(l, ...) (sparse runs): statistics, then the guess for layer
//     l + 1 planned into that layer's cache and, when it copies, posted.
// Correctness never depends on the guess: a neuron whose rows are not
// resident is computed by the CPU, and each neuron of P on one side only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/model/hybrid_weights.h"
#include "engine/model/model_spec.h"
#include "engine/model/neuron_cache.h"
#include "engine/model/neuron_prefetcher.h"
#include "engine/sparse/predictors.h"
#include "engine/sparse/prefetch_cost.h"
#include "kernels/backend.h"

namespace tc::model {

enum class PrefetchMode {
  Off,   // no cache, no lookahead, no thread: every cold neuron on the CPU
  On,    // every layer with a lookahead copies its guesses
  Auto,  // the cost model decides per layer, from measured traffic
};
std::string_view prefetch_mode_name(PrefetchMode mode);  // "off", "on", "auto"

struct PrefetchOptions {
  PrefetchMode mode = PrefetchMode::Off;
  // Cache slots per layer for layers 1 .. n_layer - 1 (layer 0 has no
  // layer before it to guess from), at most the layer's cold neurons.
  // -1: n_ff / 16.
  int64_t cache_slots = -1;
  // The cost model's inputs (auto). Not known(): measured at start
  // (sparse::measure_bandwidths).
  sparse::Bandwidths bandwidths;
  // Auto: a layer is measured for `window_runs` sparse runs without copying
  // (shadow), judged by the cost model on them, and keeps the verdict for
  // `hold_runs` runs before it is measured again.
  int64_t window_runs = 16;
  int64_t hold_runs = 240;
  // The engine thread waits until a layer's posted fill is issued before
  // the layer runs: the same split on every run (tests), less overlap.
  bool wait_for_issue = false;
  // Rewrites the lookahead's guess for `layer` (cold neuron ids, ascending)
  // before it is planned. Tests give deliberately wrong guesses. Empty: none.
  std::function<void(int64_t layer, std::vector<int32_t>& guess)> rewrite_guess;
};

// The cache slots of each layer (split_hybrid_weights' cache_slots) for
// `options` (mode Off: none) and the hot counts of `placement`: layer 0
// none, every other layer min(cache_slots_per_layer, its cold neurons).
std::vector<int64_t> cache_slot_counts(const PrefetchOptions& options, const NeuronPlacement& placement, int64_t n_ff);
// The most slots a layer's cache gets (0 with mode Off), whatever the
// placement: what a VRAM budget must keep free for the cache.
int64_t cache_slots_per_layer(const PrefetchOptions& options, int64_t n_ff);

// What the prefetch path did per layer ([n_layer] each), summed over sparse
// runs since reset.
struct PrefetchCounters {
  std::vector<int64_t> cold;         // |cold ∩ P|, served from the cache or not
  std::vector<int64_t> guessed;      // cold neurons the lookahead named for the layer
  std::vector<int64_t> guessed_hit;  // of those, in cold ∩ P when the layer ran (recall = guessed_hit / cold)
  std::vector<int64_t> filled;       // neurons copied into the layer's slots
  std::vector<int64_t> copying_runs; // runs of the layer after a guess that was copied
};

class HybridPrefetch {
 public:
  // Everything must outlive this object. `cpu` measures the host's
  // bandwidth when auto mode needs it. Starts the prefetch thread.
  HybridPrefetch(const ModelSpec& spec, kernels::Backend& device, kernels::Backend& cpu,
                 const HybridWeights& weights, const sparse::PredictorSet& predictors, PrefetchOptions options);

  // Whether this run of `layer` must guess for layer + 1 (run its predictor
  // on the layer's FFN input and pass the bitmask to end_layer).
  bool guesses_next(int64_t layer) const;
  // Before the partition of `layer`: lands its fill if issued.
  void begin_layer(int64_t layer);
  // The slot whose rows hold `neuron` of `layer` on the device, or -1.
  int32_t resident_slot(int64_t layer, int32_t neuron) const {
    return layers_[static_cast<size_t>(layer)].cache.resident_slot(neuron);
  }
  // After a sparse run of `layer` issued its device ops. cold: cold ∩ P
  // (ascending ids, cached ones included); n_hot: |hot ∩ P|; guess_bits: u32
  // [n_tokens, n_words], the lookahead's bitmask for layer + 1 (host memory;
  // null unless guesses_next(layer)).
  void end_layer(int64_t layer, std::span<const int32_t> cold, int64_t n_hot, const uint32_t* guess_bits,
                 int64_t n_tokens);

  PrefetchCounters& counters() { return counters_; }
  const NeuronCache& cache(int64_t layer) const { return layers_[static_cast<size_t>(layer)].cache; }
  // One line for the start-up log: the mode, the cache's slots and bytes,
  // the bandwidths the cost model takes.
  std::string summary() const;

 private:
  enum class LayerState : uint8_t {
    Copy,    // guesses planned and copied
    Shadow,  // guesses planned as if copied, nothing copied: measuring for the cost model (auto)
    Idle,    // no guesses (auto, after the cost model chose the CPU; layers without slots)
  };
  struct LayerPrefetch {
    explicit LayerPrefetch(NeuronCache empty_cache) : cache(std::move(empty_cache)) {}
    NeuronCache cache;
    LayerState state = LayerState::Idle;
    int64_t runs_in_state = 0;
    std::vector<uint32_t> fire_count;   // u32 [n_ff]: runs in which the neuron was in cold ∩ P
    std::vector<uint32_t> guess;        // u32 [n_words]: the pending guess for this layer
    bool guess_pending = false;
    sparse::PrefetchTraffic window;     // sums over the shadow runs of the window (neuron_bytes,
    int64_t window_runs = 0;            // lookahead_bytes: this layer's, fixed)
  };

  // Auto: the cost model's verdict on the window that just ended.
  void decide(int64_t layer);
  // The guess for `target` from `guess_bits`, planned (and posted when copying).
  void plan_guess(int64_t target, const uint32_t* guess_bits, int64_t n_tokens);

  const ModelSpec& spec_;
  const HybridWeights& weights_;
  PrefetchOptions options_;
  sparse::Bandwidths bandwidths_;
  int64_t n_words_ = 0;
  uint64_t tick_ = 0;  // one per end_layer: the caches' clock
  std::vector<LayerPrefetch> layers_;
  PrefetchCounters counters_;
  std::vector<int32_t> guess_ids_;  // i32 [n_ff]: scratch, the guess as ids
  std::vector<SlotFill> fills_;     // scratch: one plan
  std::unique_ptr<NeuronPrefetcher> prefetcher_;
};

}  // namespace tc::model
