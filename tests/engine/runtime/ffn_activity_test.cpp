// FfnActivityRing: the window is the difference of the newest and the oldest
// snapshot it holds (at most kSteps sparse steps), steps without a sparse
// FFN part are not snapshots, and a dense ring says so.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/model/hybrid_ffn_block.h"
#include "engine/model/sparse_ffn_block.h"
#include "engine/runtime/ffn_activity.h"

using tc::runtime::FfnActivityRing;

namespace {

// Cumulative counters after `steps` sparse steps of one token each, layer l
// predicting 10 + l neurons and computing 4 + l per step.
tc::model::SparseFfnCounters counters_after(int64_t steps, int64_t dense_steps = 0) {
  tc::model::SparseFfnCounters c;
  for (int64_t l = 0; l < 2; ++l) {
    c.token_layers.push_back(steps);
    c.predicted.push_back(steps * (10 + l));
    c.computed.push_back(steps * (4 + l));
  }
  c.sparse_steps = steps;
  c.dense_steps = dense_steps;
  return c;
}

}  // namespace

TEST_CASE("the FFN activity window covers the last sparse steps", "[engine][activity]") {
  FfnActivityRing ring("sparse", 2, 64);
  auto empty = ring.window();
  CHECK(empty.mode == "sparse");
  CHECK(empty.n_ff == 64);
  CHECK(empty.window_steps == 0);
  CHECK(empty.tokens == std::vector<int64_t>{0, 0});
  CHECK(empty.hot.empty());

  for (int64_t s = 1; s <= 5; ++s) ring.record(counters_after(s), nullptr);
  auto five = ring.window();
  CHECK(five.window_steps == 5);
  CHECK(five.tokens == std::vector<int64_t>{5, 5});
  CHECK(five.predicted == std::vector<int64_t>{50, 55});
  CHECK(five.computed == std::vector<int64_t>{20, 25});
  CHECK(five.sparse_steps_total == 5);

  // A step with only a dense part (a long prompt chunk) is no snapshot.
  ring.record(counters_after(5, 1), nullptr);
  CHECK(ring.window().window_steps == 5);
  CHECK(ring.window().dense_steps_total == 1);

  const int64_t total = 5 + static_cast<int64_t>(FfnActivityRing::kSteps) + 7;
  for (int64_t s = 6; s <= total; ++s) ring.record(counters_after(s, 1), nullptr);
  auto full = ring.window();
  const auto k = static_cast<int64_t>(FfnActivityRing::kSteps);
  CHECK(full.window_steps == k);
  CHECK(full.tokens == std::vector<int64_t>{k, k});
  CHECK(full.predicted == std::vector<int64_t>{10 * k, 11 * k});
  CHECK(full.sparse_steps_total == total);
}

TEST_CASE("a hybrid window splits the predicted neurons by side, a dense ring is empty", "[engine][activity]") {
  FfnActivityRing ring("hybrid", 2, 64);
  tc::model::HybridSplitCounters split;
  split.hot = {6, 7};
  split.cached = {1, 1};
  split.cold = {3, 3};
  ring.record(counters_after(1), &split);
  auto w = ring.window();
  CHECK(w.mode == "hybrid");
  CHECK(w.hot == std::vector<int64_t>{6, 7});
  CHECK(w.cached == std::vector<int64_t>{1, 1});
  CHECK(w.cold == std::vector<int64_t>{3, 3});

  FfnActivityRing dense;
  dense.record(counters_after(3), nullptr);
  auto d = dense.window();
  CHECK(d.mode == "dense");
  CHECK(d.tokens.empty());
  CHECK(d.window_steps == 0);
}
