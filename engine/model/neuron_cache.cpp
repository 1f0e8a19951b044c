// NeuronCache: LRU directory of a layer's cache slots.
#include "engine/model/neuron_cache.h"

#include <algorithm>

#include "kernels/check.h"

namespace tc::model {

NeuronCache::NeuronCache(int64_t n_ff, int64_t n_slots)
    : slot_of_neuron_(static_cast<size_t>(n_ff), -1),
      neuron_of_slot_(static_cast<size_t>(n_slots), -1),
      resident_(static_cast<size_t>(n_slots), 0),
      last_use_(static_cast<size_t>(n_slots), 0) {
  victims_.reserve(static_cast<size_t>(n_slots));
}

void NeuronCache::touch(int32_t neuron, uint64_t tick) {
  const int32_t s = slot_of_neuron_[static_cast<size_t>(neuron)];
  if (s >= 0) last_use_[static_cast<size_t>(s)] = std::max(last_use_[static_cast<size_t>(s)], tick);
}

void NeuronCache::plan(std::span<const int32_t> wanted, uint64_t tick, bool refill, std::vector<SlotFill>& fills) {
  TC_CHECK(tick > 0, "NeuronCache: ticks start at 1 (0 marks a slot never used)");
  // Listed neurons first: touched, so no newcomer evicts them; refilled when not landed.
  for (const int32_t neuron : wanted) {
    const int32_t s = slot_of_neuron_[static_cast<size_t>(neuron)];
    if (s < 0) continue;
    last_use_[static_cast<size_t>(s)] = tick;
    if (refill && !resident_[static_cast<size_t>(s)]) fills.push_back({neuron, s});
  }
  // Victims: slots not used at `tick`, least recently used first (empty
  // slots have tick 0), ties by slot.
  victims_.clear();
  for (int32_t s = 0; s < static_cast<int32_t>(neuron_of_slot_.size()); ++s) {
    if (last_use_[static_cast<size_t>(s)] < tick) victims_.push_back(s);
  }
  size_t n_new = 0;
  for (const int32_t neuron : wanted) n_new += slot_of_neuron_[static_cast<size_t>(neuron)] < 0 ? 1 : 0;
  const size_t n_taken = std::min(n_new, victims_.size());
  const auto older = [this](int32_t a, int32_t b) {
    const uint64_t ua = last_use_[static_cast<size_t>(a)], ub = last_use_[static_cast<size_t>(b)];
    return ua != ub ? ua < ub : a < b;
  };
  std::partial_sort(victims_.begin(), victims_.begin() + static_cast<std::ptrdiff_t>(n_taken), victims_.end(), older);
  size_t next = 0;
  for (const int32_t neuron : wanted) {
    if (next == n_taken) break;
    if (slot_of_neuron_[static_cast<size_t>(neuron)] >= 0) continue;
    const int32_t s = victims_[next++];
    const int32_t evicted = neuron_of_slot_[static_cast<size_t>(s)];
    if (evicted >= 0) slot_of_neuron_[static_cast<size_t>(evicted)] = -1;
    neuron_of_slot_[static_cast<size_t>(s)] = neuron;
    slot_of_neuron_[static_cast<size_t>(neuron)] = s;
    resident_[static_cast<size_t>(s)] = 0;
    last_use_[static_cast<size_t>(s)] = tick;
    fills.push_back({neuron, s});
  }
}

void NeuronCache::land(std::span<const SlotFill> fills) {
  for (const SlotFill& f : fills) {
    if (neuron_of_slot_[static_cast<size_t>(f.slot)] == f.neuron) resident_[static_cast<size_t>(f.slot)] = 1;
  }
}

int64_t NeuronCache::n_listed() const {
  return std::count_if(neuron_of_slot_.begin(), neuron_of_slot_.end(), [](int32_t n) { return n >= 0; });
}

int64_t NeuronCache::n_resident() const { return std::count(resident_.begin(), resident_.end(), uint8_t{1}); }

}  // namespace tc::model
