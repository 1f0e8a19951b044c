// NeuronCache, the directory of a layer's VRAM neuron cache: least recently
// used eviction worked by hand, wanted neurons protected from each other,
// refills of neurons whose rows never landed, and on random plans the
// budget (never more neurons than slots) and a consistent directory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "engine/model/neuron_cache.h"

using tc::model::NeuronCache;
using tc::model::SlotFill;

namespace {

std::vector<SlotFill> plan(NeuronCache& cache, std::vector<int32_t> wanted, uint64_t tick, bool refill = true) {
  std::vector<SlotFill> fills;
  cache.plan(wanted, tick, refill, fills);
  return fills;
}

}  // namespace

TEST_CASE("neuron cache: empty slots first, then the least recently used", "[model][prefetch]") {
  NeuronCache cache(100, 3);
  CHECK(cache.resident_slot(7) == -1);
  const auto first = plan(cache, {7, 8}, 1);
  CHECK(first == std::vector<SlotFill>{{7, 0}, {8, 1}});
  CHECK(cache.resident_slot(7) == -1);  // planned, not landed
  CHECK(cache.listed(7));
  cache.land(first);
  CHECK(cache.resident_slot(7) == 0);
  CHECK(cache.resident_slot(8) == 1);
  // Slot 2 is empty: 9 goes there although 7 and 8 were not used since.
  CHECK(plan(cache, {9}, 2) == std::vector<SlotFill>{{9, 2}});
  cache.touch(7, 3);  // 7 used at 3: 8 (tick 1) is now the oldest
  const auto evict = plan(cache, {10}, 4);
  CHECK(evict == std::vector<SlotFill>{{10, 1}});
  CHECK_FALSE(cache.listed(8));
  CHECK(cache.resident_slot(8) == -1);
  CHECK(cache.resident_slot(7) == 0);
  CHECK(cache.resident_slot(10) == -1);
  cache.land(evict);
  CHECK(cache.resident_slot(10) == 1);
  CHECK(cache.n_listed() == 3);
  CHECK(cache.n_resident() == 2);  // 9 never landed
}

TEST_CASE("neuron cache: wanted neurons never evict each other, the first ones win", "[model][prefetch]") {
  NeuronCache cache(50, 2);
  cache.land(plan(cache, {1, 2}, 1));
  // 2 is wanted again and listed: only slot 0 (neuron 1) can go, to 3, the first newcomer.
  const auto second = plan(cache, {2, 3, 4}, 2);
  CHECK(second == std::vector<SlotFill>{{3, 0}});
  cache.land(second);
  CHECK(cache.resident_slot(2) == 1);
  CHECK_FALSE(cache.listed(4));
  // Every slot wanted at this tick: nothing to plan.
  CHECK(plan(cache, {2, 3, 5}, 3).empty());
}

TEST_CASE("neuron cache: listed neurons whose rows never landed are refilled in place, or kept as if landed",
          "[model][prefetch]") {
  NeuronCache cache(20, 2);
  const auto shadow = plan(cache, {4, 5}, 1, false);  // a measuring run: nothing will land
  CHECK(shadow == std::vector<SlotFill>{{4, 0}, {5, 1}});
  CHECK(plan(cache, {5}, 2, false).empty());              // as if landed: nothing to do
  CHECK(plan(cache, {5}, 3, true) == std::vector<SlotFill>{{5, 1}});  // copying: refill its slot
  // land() ignores pairs whose slot went to another neuron meanwhile.
  cache.land(std::vector<SlotFill>{{9, 1}});
  CHECK(cache.resident_slot(9) == -1);
  CHECK(cache.resident_slot(5) == -1);
  cache.land(std::vector<SlotFill>{{5, 1}});
  CHECK(cache.resident_slot(5) == 1);
}

TEST_CASE("neuron cache: random plans never list more neurons than slots and keep the directory consistent",
          "[model][prefetch]") {
  constexpr int32_t kNeurons = 300;
  for (const int64_t n_slots : {0, 1, 17, 64}) {
    INFO(n_slots << " slots");
    NeuronCache cache(kNeurons, n_slots);
    std::mt19937 rng(static_cast<uint32_t>(n_slots) + 5);
    for (uint64_t tick = 1; tick <= 400; ++tick) {
      std::vector<int32_t> all(kNeurons);
      for (int32_t i = 0; i < kNeurons; ++i) all[static_cast<size_t>(i)] = i;
      std::shuffle(all.begin(), all.end(), rng);
      all.resize(rng() % 90);
      std::vector<SlotFill> fills;
      cache.plan(all, tick, rng() % 4 != 0, fills);
      if (rng() % 3 != 0) cache.land(fills);
      REQUIRE(cache.n_listed() <= n_slots);
      REQUIRE(cache.n_resident() <= cache.n_listed());
      // Distinct slots and neurons, each within range, and the directory agrees.
      std::set<int32_t> slots, neurons;
      for (const SlotFill& f : fills) {
        REQUIRE(f.slot >= 0);
        REQUIRE(f.slot < n_slots);
        REQUIRE(slots.insert(f.slot).second);
        REQUIRE(neurons.insert(f.neuron).second);
        REQUIRE(cache.listed(f.neuron));
      }
      int64_t listed = 0;
      std::set<int32_t> resident_slots;
      for (int32_t i = 0; i < kNeurons; ++i) {
        listed += cache.listed(i) ? 1 : 0;
        const int32_t s = cache.resident_slot(i);
        if (s >= 0) REQUIRE(resident_slots.insert(s).second);
      }
      REQUIRE(listed == cache.n_listed());
      REQUIRE(static_cast<int64_t>(resident_slots.size()) == cache.n_resident());
      // Every wanted neuron is listed unless the slots ran out.
      const auto n_wanted_listed = std::count_if(all.begin(), all.end(), [&](int32_t i) { return cache.listed(i); });
      REQUIRE(n_wanted_listed == std::min<int64_t>(static_cast<int64_t>(all.size()), n_slots));
    }
  }
}
