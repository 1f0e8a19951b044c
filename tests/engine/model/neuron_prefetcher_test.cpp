// NeuronPrefetcher, the prefetch thread, on HostDeviceBackend (whose copy
// queue lands a copy only when the stream waits for it): a posted fill is
// gathered and copied into the cache rows by runs of consecutive slots, after
// the stream's point at posting, and lands only once collected.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/model/hybrid_weights.h"
#include "engine/model/neuron_prefetcher.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/engine/model/hybrid_fixtures.h"

using tc::model::SlotFill;
using tc::test::QueueLogEntry;

namespace {

// Whether the copy queue has recorded an event (the fill was issued), waiting up to 10 s.
bool issued(const tc::test::HostDeviceBackend& device) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const QueueLogEntry& e : device.queue_log()) {
      if (e.queue == QueueLogEntry::Queue::Copy && e.kind == QueueLogEntry::Kind::Record) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace

TEST_CASE("neuron prefetcher: a fill lands in its cache rows once the stream waits for it", "[model][prefetch]") {
  const auto loaded = tc::test::planted_model("prefetcher", true, "f32", 2);
  const auto& spec = loaded->spec;
  const auto host = tc::model::map_llama_weights(loaded->file, spec);
  tc::test::HostDeviceBackend device(1);
  const std::vector<int64_t> slots = {0, 8};
  const auto split = tc::model::split_hybrid_weights(host.layers, tc::test::none_hot(spec), device, slots);
  const auto& w = split.layers[1];
  REQUIRE(w.n_slots == 8);
  tc::model::NeuronPrefetcher prefetcher(device, split);

  // Slots 3 and 4 are consecutive: one copy per tensor for them, one for slot 0.
  const std::vector<SlotFill> fills = {{17, 3}, {5, 4}, {400, 0}};
  CHECK_FALSE(prefetcher.busy(1));
  CHECK(prefetcher.collect(1, false).empty());  // nothing posted
  prefetcher.post(1, fills);
  CHECK(prefetcher.busy(1));
  REQUIRE(issued(device));
  const auto row_bytes = static_cast<size_t>(tc::kernels::row_bytes(w.hot_gate.dtype, spec.n_embd));
  const auto slot_row_is = [&](const tc::kernels::Tensor& device_rows, int32_t slot, const tc::kernels::Tensor& src,
                               int32_t neuron) {
    return std::memcmp(device_rows.row(w.n_hot + slot), src.row(neuron), row_bytes) == 0;
  };
  const std::vector<std::byte> zeros(row_bytes);
  // Issued but not landed: the stream has not waited, the rows are still the zeros of load.
  for (const SlotFill& f : fills) {
    CHECK(std::memcmp(w.hot_gate.row(w.n_hot + f.slot), zeros.data(), row_bytes) == 0);
  }
  const auto landed = prefetcher.collect(1, true);
  REQUIRE(landed.size() == fills.size());
  CHECK_FALSE(prefetcher.busy(1));
  for (size_t k = 0; k < fills.size(); ++k) {
    const SlotFill& f = fills[k];
    INFO("neuron " << f.neuron << " in slot " << f.slot);
    CHECK(landed[k] == f);
    CHECK(slot_row_is(w.hot_gate, f.slot, w.host_gate, f.neuron));
    CHECK(slot_row_is(w.hot_up, f.slot, w.host_up, f.neuron));
    CHECK(slot_row_is(w.hot_down_t, f.slot, w.host_down_t, f.neuron));
  }
  // Untouched slots stay zero.
  CHECK(std::memcmp(w.hot_up.row(w.n_hot + 1), zeros.data(), row_bytes) == 0);
  CHECK(device.prefetch_bytes.load() == 3 * 3 * row_bytes);
  CHECK(device.prefetch_copies.load() == 3 * 2);
  // The copies waited for the stream's point at posting, and the stream for the copies.
  int copy_waits = 0, stream_waits = 0;
  for (const QueueLogEntry& e : device.queue_log()) {
    if (e.kind != QueueLogEntry::Kind::Wait) continue;
    (e.queue == QueueLogEntry::Queue::Copy ? copy_waits : stream_waits) += 1;
  }
  CHECK(copy_waits == 1);
  CHECK(stream_waits == 1);
}
