// FfnActivity: what the FFN did per layer over the engine's last sparse
// steps (the engine view of GET /v1/engine/stats), and the ring of counter
// snapshots the engine thread fills after each step to compute it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tc::model {
struct SparseFfnCounters;
struct HybridSplitCounters;
}  // namespace tc::model

namespace tc::runtime {

struct FfnActivity {
  // "dense": no per-neuron counters (the dense FFN, TEAL, layer offload; every
  // field below is empty or 0); "sparse": the CPU's sparse FFN; "hybrid":
  // hot neurons on the GPU, cold ones on the CPU.
  std::string mode = "dense";
  int64_t n_ff = 0;
  int64_t window_steps = 0;         // sparse steps the sums below cover (at most FfnActivityRing::kSteps)
  // Sums over the window, [n_layer] each:
  std::vector<int64_t> tokens;      // tokens that went through the sparse FFN
  std::vector<int64_t> predicted;   // neurons predicted active (per step: the union over its tokens)
  std::vector<int64_t> computed;    // neurons computed (gate > 0 after the prediction)
  // Hybrid only (empty otherwise): the predicted set by where it ran.
  std::vector<int64_t> hot;         // on the GPU, from the hot neurons placed there
  std::vector<int64_t> cached;      // on the GPU, from the neuron cache (prefetched cold neurons)
  std::vector<int64_t> cold;        // on the CPU
  // Since the engine started.
  int64_t sparse_steps_total = 0;
  int64_t dense_steps_total = 0;    // steps with a dense FFN part (prefill chunks above sparse_max_tokens)
};

// Thread-safe: record() on the engine thread, window() from any thread.
// Holds kSteps + 1 snapshots of the cumulative counters, allocated up front,
// so record() allocates nothing.
class FfnActivityRing {
 public:
  static constexpr size_t kSteps = 32;

  // Dense: records nothing; window() says "dense".
  FfnActivityRing() = default;
  // `mode`: "sparse" or "hybrid" (which also keeps the hot/cached/cold split).
  FfnActivityRing(std::string mode, int64_t n_layer, int64_t n_ff);

  // The counters after a step; a step that ran no sparse FFN only updates
  // the dense step total.
  void record(const model::SparseFfnCounters& ffn, const model::HybridSplitCounters* split);
  FfnActivity window() const;

 private:
  struct Snapshot {
    std::vector<int64_t> tokens, predicted, computed, hot, cached, cold;  // cumulative, [n_layer]
    int64_t sparse_steps = 0;
  };

  mutable std::mutex mutex_;
  std::string mode_ = "dense";
  int64_t n_ff_ = 0;
  std::vector<Snapshot> ring_;  // [kSteps + 1]; ring_[newest_] is the latest
  size_t newest_ = 0;
  size_t filled_ = 0;           // snapshots held (the first is all zeros)
  int64_t dense_steps_ = 0;
};

}  // namespace tc::runtime
