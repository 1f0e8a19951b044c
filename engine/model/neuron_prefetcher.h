// NeuronPrefetcher: the prefetch thread of one GPU in hybrid mode. The
// engine thread posts one fill per layer at a time (NeuronCache::plan's
// (neuron, slot) pairs); the thread gathers those neurons' ffn_gate, ffn_up
// and ffn_down_t rows from host memory into pinned staging and copies them
// into the layer's cache slots over the device's CopyQueue, after the
// device's stream has passed the point where the fill was posted (so no op
// still reads a slot's old occupant), then records an event after the
// copies. The engine thread polls, never blocking, whether the fill was
// issued; once it was, its stream waits on that event (on the device) and
// the slots count as landed. A fill not issued yet costs only speed: its
// neurons are computed on the CPU meanwhile.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/model/hybrid_weights.h"
#include "engine/model/neuron_cache.h"
#include "kernels/backend.h"

namespace tc::model {

class NeuronPrefetcher {
 public:
  // `device` (the hybrid model's GPU backend) and `weights` (whose layers
  // have their cache slots, HybridLayerWeights::n_slots) must outlive this
  // object. Starts the thread. Throws what the backend throws.
  NeuronPrefetcher(kernels::Backend& device, const HybridWeights& weights);
  // Stops the thread after its current fill and waits for its copies.
  ~NeuronPrefetcher();
  NeuronPrefetcher(const NeuronPrefetcher&) = delete;
  NeuronPrefetcher& operator=(const NeuronPrefetcher&) = delete;

  // Engine thread. Whether layer `layer` has a fill posted and not collected.
  bool busy(int64_t layer) const { return busy_[static_cast<size_t>(layer)] != 0; }
  // Engine thread. Hands `fills` (at most the layer's n_slots, slots of
  // that layer) to the thread, after recording on the device's stream the
  // point the copies must wait for. The layer must not be busy.
  void post(int64_t layer, std::span<const SlotFill> fills);
  // Engine thread. When the layer's fill has been issued (`wait`: once it
  // is): makes the device's stream wait for its copies and returns its pairs
  // (valid until the next post for the layer); the layer is no longer busy.
  // Otherwise an empty span. Rethrows an error the thread met.
  std::span<const SlotFill> collect(int64_t layer, bool wait);

 private:
  enum class JobState : uint8_t { Idle, Posted, Issued, Failed };
  struct LayerJob {
    std::vector<SlotFill> fills;             // the pairs posted (capacity n_slots)
    std::unique_ptr<kernels::Event> slots_free;  // recorded on the device's stream at post
    std::unique_ptr<kernels::Event> copied;      // recorded on the copy queue after the copies
  };

  void thread_main();
  // The thread: gathers and copies one layer's fill.
  void issue(int64_t layer);

  kernels::Backend& device_;
  const HybridWeights& weights_;
  std::vector<LayerJob> jobs_;         // [n_layer]: fills written by the engine before post, read by the thread after
  std::vector<uint8_t> busy_;          // [n_layer]: engine thread only
  std::unique_ptr<kernels::CopyQueue> queue_;  // the thread's
  kernels::Buffer staging_;            // pinned: the gathered rows of one fill, tensor by tensor, in slot order
  std::vector<SlotFill> sorted_;       // the thread's scratch: a fill in slot order

  // Shared between the engine thread and the prefetch thread, under `mutex`.
  struct Shared {
    std::mutex mutex;
    std::condition_variable wake;     // the thread sleeps here when no fill is posted
    std::condition_variable issued;   // collect(wait = true) sleeps here until its fill is issued
    std::vector<JobState> state;      // [n_layer]
    std::vector<int64_t> posted;      // layers posted, in order (a ring of n_layer entries)
    size_t head = 0;                  // the oldest posted layer's index in `posted`
    size_t n_posted = 0;
    std::exception_ptr error;         // what the thread met (state Failed)
    bool stop = false;
  } shared_;

  std::thread thread_;  // last: started once everything above exists
};

}  // namespace tc::model
