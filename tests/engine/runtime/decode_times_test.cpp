// DecodeTimeRing: the window sums the last kSteps decode steps exactly (the
// older ones drop out), the hybrid split is summed only when timed, and
// split_difference subtracts two timer readings field by field.
#include <catch2/catch.hpp>

#include "engine/runtime/decode_times.h"

using tc::model::HybridTimeSplit;
using tc::runtime::DecodeTimeRing;

TEST_CASE("the decode time window sums the last steps", "[engine][decode_times]") {
  DecodeTimeRing ring;
  const auto empty = ring.window();
  CHECK(empty.window_steps == 0);
  CHECK(empty.tokens == 0);
  CHECK(empty.wall_s == 0);
  CHECK_FALSE(empty.split_timed);

  // Step i (1-based) decodes i % 3 + 1 sequences in i milliseconds.
  const int64_t n = static_cast<int64_t>(DecodeTimeRing::kSteps) + 10;
  for (int64_t i = 1; i <= n; ++i) ring.record(i % 3 + 1, 1e-3 * static_cast<double>(i), nullptr);
  const auto w = ring.window();
  int64_t tokens = 0;
  double wall = 0;
  for (int64_t i = n - static_cast<int64_t>(DecodeTimeRing::kSteps) + 1; i <= n; ++i) {
    tokens += i % 3 + 1;
    wall += 1e-3 * static_cast<double>(i);
  }
  CHECK(w.window_steps == static_cast<int64_t>(DecodeTimeRing::kSteps));
  CHECK(w.tokens == tokens);
  CHECK(w.wall_s == Approx(wall).epsilon(1e-12));
  CHECK(w.decode_steps_total == n);
  // Without the split the hybrid fields stay zero even if a split is passed.
  HybridTimeSplit s;
  s.gpu_s = 1;
  ring.record(1, 1e-3, &s);
  CHECK(ring.window().gpu_s == 0);
}

TEST_CASE("the decode time window sums a timed hybrid split", "[engine][decode_times]") {
  DecodeTimeRing ring(true);
  HybridTimeSplit step;
  step.steps = 1;
  step.gpu_timed = true;
  step.gpu_s = 2e-3;
  step.cpu_s = 3e-3;
  step.wait_s = 1e-3;
  step.bus_bytes = 4096;
  for (int i = 0; i < 5; ++i) ring.record(1, 5e-3, &step);
  const auto w = ring.window();
  CHECK(w.split_timed);
  CHECK(w.gpu_timed);
  CHECK(w.window_steps == 5);
  CHECK(w.gpu_s == Approx(10e-3));
  CHECK(w.cpu_s == Approx(15e-3));
  CHECK(w.wait_s == Approx(5e-3));
  CHECK(w.bus_bytes == 5 * 4096);
}

TEST_CASE("split_difference subtracts two timer readings", "[engine][decode_times]") {
  HybridTimeSplit before, after;
  before.steps = 3;
  before.wall_s = 1.0;
  before.gpu_s = 0.5;
  before.cpu_s = 0.25;
  before.wait_s = 0.125;
  before.bus_bytes = 100;
  after = before;
  after.steps = 4;
  after.wall_s = 1.5;
  after.gpu_s = 0.75;
  after.cpu_s = 0.5;
  after.wait_s = 0.25;
  after.bus_bytes = 164;
  after.gpu_timed = true;
  const auto d = tc::runtime::split_difference(after, before);
  CHECK(d.steps == 1);
  CHECK(d.wall_s == 0.5);
  CHECK(d.gpu_s == 0.25);
  CHECK(d.cpu_s == 0.25);
  CHECK(d.wait_s == 0.125);
  CHECK(d.bus_bytes == 64);
  CHECK(d.gpu_timed);
}
