// NeuronCache: the directory of one layer's VRAM neuron cache in hybrid
// mode: which cold neuron each of its slots holds (slot s = row n_hot + s of
// the layer's device gate/up/down_t matrices), whether that neuron's rows
// have landed there, and which slot to give up next. Host bookkeeping only,
// the engine thread's; the prefetcher copies the rows it plans.
// Eviction: least recently used, a use being the neuron in the layer's
// predicted set P or in the lookahead's guess for it. Temporal locality is
// what a cache of cold neurons lives on (a neuron that fired in the last
// tokens is the likeliest to fire again, LLM in a flash's "windowing"), and
// LRU needs no statistics that could be stale; among the neurons wanting a
// slot, the caller's order decides (HybridPrefetch: most often fired first).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tc::model {

// One planned copy: neuron `neuron`'s three rows into slot `slot`.
struct SlotFill {
  int32_t neuron = 0;
  int32_t slot = 0;
  bool operator==(const SlotFill&) const = default;
};

class NeuronCache {
 public:
  // A cache of n_slots (>= 0) slots for neurons in [0, n_ff), all empty.
  NeuronCache(int64_t n_ff, int64_t n_slots);

  int64_t n_slots() const { return static_cast<int64_t>(neuron_of_slot_.size()); }
  // The slot whose rows hold `neuron` on the device, or -1 (not in the
  // directory, or its copy has not landed).
  int32_t resident_slot(int32_t neuron) const {
    const int32_t s = slot_of_neuron_[static_cast<size_t>(neuron)];
    return s >= 0 && resident_[static_cast<size_t>(s)] ? s : -1;
  }
  // Whether `neuron` has a slot, landed or not (what the cache would serve
  // were every planned copy made: the cost model's hit count).
  bool listed(int32_t neuron) const { return slot_of_neuron_[static_cast<size_t>(neuron)] >= 0; }
  // A use of `neuron` at time `tick` (non-decreasing over calls); no-op
  // when it has no slot.
  void touch(int32_t neuron, uint64_t tick);

  // Slots for `wanted` (distinct neuron ids, in priority order) at time
  // `tick`: a listed neuron is touched (and, with `refill`, appended to
  // `fills` when its rows have not landed); the others take, in order, the
  // least recently used slots not touched at `tick` (empty ones first),
  // until none is left, and are appended to `fills`. Planned pairs are not
  // resident until land(). Never lists more neurons than n_slots.
  // refill = false plans "as if every listed neuron had landed": the
  // directory a measuring run keeps without copying anything.
  void plan(std::span<const int32_t> wanted, uint64_t tick, bool refill, std::vector<SlotFill>& fills);
  // The copies of `fills` have landed (the device's stream waits for them):
  // those still listed in their slot become resident.
  void land(std::span<const SlotFill> fills);

  int64_t n_listed() const;    // slots holding a neuron
  int64_t n_resident() const;  // of those, with their rows landed

 private:
  std::vector<int32_t> slot_of_neuron_;  // i32 [n_ff]: the neuron's slot, or -1
  std::vector<int32_t> neuron_of_slot_;  // i32 [n_slots]: the slot's neuron, or -1 (empty)
  std::vector<uint8_t> resident_;        // u8 [n_slots]: 1 once the slot's rows landed
  std::vector<uint64_t> last_use_;       // u64 [n_slots]: tick of the last use (0: never)
  std::vector<int32_t> victims_;         // i32 [n_slots]: scratch of plan()
};

}  // namespace tc::model
