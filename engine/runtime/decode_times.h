// DecodeTimes: where the engine's time went over its last decode steps (the
// engine view's "time per token", GET /v1/engine/stats), and the ring of
// cumulative sums the engine thread adds each decode step to. A decode step
// is one in which every sequence decodes one token (no prefill chunk): its
// wall time per sequence is the serving counterpart of a benchmark's time
// per token. In hybrid mode with the time split on (`--time-split`), the
// step's GPU, CPU and wait times come from model::HybridStepTimer.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/model/hybrid_time_split.h"

namespace tc::runtime {

struct DecodeTimes {
  int64_t window_steps = 0;  // decode steps the sums below cover (at most DecodeTimeRing::kSteps)
  int64_t tokens = 0;        // tokens they decoded (one per sequence per step)
  double wall_s = 0;         // the model's forward passes, host clock
  // Hybrid with the time split on (split_timed); 0 otherwise.
  bool split_timed = false;
  bool gpu_timed = false;    // the device times its stream (HybridTimeSplit::gpu_timed)
  double gpu_s = 0;
  double cpu_s = 0;
  double wait_s = 0;
  uint64_t bus_bytes = 0;
  int64_t decode_steps_total = 0;  // since the engine started
};

// Thread-safe: record() on the engine thread, window() from any thread.
// Holds kSteps + 1 cumulative snapshots, allocated up front.
class DecodeTimeRing {
 public:
  static constexpr size_t kSteps = 32;

  explicit DecodeTimeRing(bool split_timed = false);

  // One decode step of `tokens` sequences that took `wall_s`; `split` is
  // the hybrid timer's part of that step (its sums after the step minus
  // before), null without the time split.
  void record(int64_t tokens, double wall_s, const model::HybridTimeSplit* split);
  DecodeTimes window() const;

 private:
  struct Snapshot {
    int64_t steps = 0, tokens = 0;
    double wall_s = 0, gpu_s = 0, cpu_s = 0, wait_s = 0;
    uint64_t bus_bytes = 0;
  };

  mutable std::mutex mutex_;
  bool split_timed_ = false;
  bool gpu_timed_ = false;
  std::vector<Snapshot> ring_;  // [kSteps + 1]; ring_[newest_] is the latest
  size_t newest_ = 0;
  size_t filled_ = 1;           // ring_[0]: all zeros, before the first step
};

// The hybrid timer's sums of the steps between `before` and `after` (two
// readings of HybridStepTimer::split()).
model::HybridTimeSplit split_difference(const model::HybridTimeSplit& after, const model::HybridTimeSplit& before);

}  // namespace tc::runtime
