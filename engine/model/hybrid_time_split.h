// Where hybrid mode's time goes (`thermocline bench --time-split`): the
// host's clock around the CPU's cold neurons, around every wait on the
// device and around whole steps, and timing events on the device's stream
// (CUDA events) for the GPU's busy time; with the bytes each side reads
// per token, the modelled limit max(GPU bytes / GPU bandwidth, CPU bytes /
// DRAM bandwidth, bus bytes / PCIe bandwidth) it is compared against.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/loaded_model.h"
#include "engine/sparse/prefetch_cost.h"
#include "kernels/backend.h"

namespace tc::model {

struct HybridSplitCounters;
struct SparseFfnCounters;
struct PrefetchCounters;

// Sums over the steps timed.
struct HybridTimeSplit {
  int64_t steps = 0;
  double wall_s = 0;   // forward() calls, start to return (host clock)
  // The device stream's busy time: its kernels and the copies queued on it,
  // from the step's start to the logits (timing events, read after the
  // step's last synchronize). Only where the backend times its work
  // (gpu_timed); gaps while the stream waits for the host are left out.
  double gpu_s = 0;
  bool gpu_timed = false;
  double cpu_s = 0;    // the CPU backend computing the cold neurons (host clock)
  double wait_s = 0;   // the host blocked on the device: each layer's synchronize and the step's last
  uint64_t bus_bytes = 0;  // copied between host and device on the stream (ids, activations, bitmasks, partial sums, logits)
};

// Records one step's marks on the device's stream, in order: begin (before
// the step's first copy); per layer PredictEnd (its FFN input and bitmasks
// queued to the host), HotBegin and HotEnd (around the device's neurons),
// MergeBegin and MergeEnd (around adding the CPU's partial sum); end (the
// logits queued). The GPU's busy time of a step is the sum of the spans
// begin..PredictEnd[0], HotBegin..HotEnd, MergeBegin..MergeEnd,
// MergeEnd[l]..PredictEnd[l + 1] (the next layer's attention and predictor,
// queued right after the merge) and MergeEnd[last]..end (the head). Left
// out: PredictEnd..HotBegin (the host synchronizes and partitions) and
// HotEnd..MergeBegin (the stream idle until the CPU's part is done). With
// the prefetch path, HotBegin..HotEnd includes the stream's wait for the
// layer's copies.
class HybridStepTimer {
 public:
  enum class Mark { PredictEnd, HotBegin, HotEnd, MergeBegin, MergeEnd };

  HybridStepTimer(kernels::Backend& device, int64_t n_layer);

  void begin_step();
  void mark(int64_t layer, Mark m);
  void end_step();     // before the step's last synchronize
  void finish_step();  // after it: the step's spans and wall time summed
  void add_cpu(double seconds) { split_.cpu_s += seconds; }
  void add_wait(double seconds) { split_.wait_s += seconds; }
  void add_bus(uint64_t bytes) { split_.bus_bytes += bytes; }

  const HybridTimeSplit& split() const { return split_; }
  void reset();

 private:
  static constexpr int kMarks = 5;
  kernels::Event& event(int64_t layer, Mark m) { return *marks_[static_cast<size_t>(layer * kMarks + static_cast<int>(m))]; }
  double span(kernels::Event& a, kernels::Event& b) const;

  kernels::Backend& device_;
  int64_t n_layer_;
  std::unique_ptr<kernels::Event> begin_, end_;
  std::vector<std::unique_ptr<kernels::Event>> marks_;  // [n_layer * kMarks]
  double wall_start_ = 0;
  HybridTimeSplit split_;
};

// Seconds on the host's steady clock (for the timer's host spans).
double host_seconds();

// The bytes one decode token reads on each side, from the run's counters:
// the GPU the dense parts (attention, predictors, head, KV) and the gate,
// up and down rows of its neurons (hot and cached ∩ P); the CPU the gate
// rows of its part of P and the up and down rows of its live neurons; the
// bus the stream's copies (split.bus_bytes) and the prefetch path's rows.
struct HybridBytes {
  double gpu = 0;
  double cpu = 0;
  double bus = 0;
};
HybridBytes hybrid_bytes_per_token(const LoadedModel& model, const SparseFfnCounters& ffn,
                                   const HybridSplitCounters& sides, const PrefetchCounters* prefetch,
                                   const HybridTimeSplit& split, double mean_context);

// The report: per token, wall = GPU | CPU | waits, the bus bytes, the
// modelled limit and the fraction of it achieved, e.g.
//   "hybrid decode, per token: 12.40 ms wall; GPU busy 9.10 ms, CPU (cold
//   neurons) 8.70 ms, waits 3.20 ms; bus 0.35 MB
//   modelled limit 10.50 ms = max(GPU 3.1 GB / 2900 GB/s, CPU 0.9 GB / 85
//   GB/s, bus 0.35 MB / 25 GB/s): 85% of it achieved"
std::string describe_time_split(const HybridTimeSplit& split, const HybridBytes& bytes,
                                const sparse::Bandwidths& bandwidths);

}  // namespace tc::model
