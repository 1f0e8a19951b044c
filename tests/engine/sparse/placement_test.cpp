// The placement solver on hand-made costs: fixed part first, the order by
// firings per byte across layers of different dtypes (checked against an
// order worked out by hand), exact budget boundaries, a budget below the
// fixed part, everything fitting, and deterministic ties.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/sparse/placement.h"

using tc::kernels::DType;
using tc::sparse::NeuronCost;
using tc::sparse::PlacementCosts;
using tc::sparse::PlacementError;
using tc::sparse::PlacementPlan;
using tc::sparse::solve_placement;

namespace {

using Counts = std::vector<std::vector<int32_t>>;
using Hot = std::vector<std::vector<int32_t>>;

NeuronCost neuron(DType dtype, int64_t n_embd) {
  NeuronCost c;
  c.gate_dtype = dtype;
  c.up_dtype = dtype;
  c.down_t_dtype = dtype;
  c.gate_bytes = c.up_bytes = c.down_t_bytes = static_cast<uint64_t>(tc::kernels::row_bytes(dtype, n_embd));
  return c;
}

PlacementCosts costs_of(std::vector<NeuronCost> layers, int64_t n_ff) {
  PlacementCosts c;
  c.n_ff = n_ff;
  c.layers = std::move(layers);
  c.fixed = {.attention = 1000, .predictors = 300, .output_head = 2000, .kv_cache = 4096, .workspace = 777};
  return c;
}

Hot hot_sets(const PlacementPlan& plan) {
  Hot h;
  for (const auto& l : plan.layers) h.push_back(l.hot);
  return h;
}

}  // namespace

TEST_CASE("placement: the solver takes the most firings per byte first, across layers of different dtypes",
          "[sparse][placement]") {
  // n_embd 256: a neuron is 3 rows of f16 (512 B each) = 1536 B, of q4_0
  // (144 B) = 432 B, of q8_0 (272 B) = 816 B.
  const auto costs = costs_of({neuron(DType::F16, 256), neuron(DType::Q4_0, 256), neuron(DType::Q8_0, 256)}, 4);
  REQUIRE(costs.layers[0].bytes() == 1536);
  REQUIRE(costs.layers[1].bytes() == 432);
  REQUIRE(costs.layers[2].bytes() == 816);
  const Counts counts = {{300, 10, 0, 150}, {100, 50, 5, 200}, {80, 400, 1, 160}};
  // Firings per byte, by hand: (2,1) 0.490, (1,3) 0.463, (1,0) 0.2315,
  // (2,3) 0.19608 > (0,0) 0.19531, (1,1) 0.1157, (2,0) 0.09804 > (0,3)
  // 0.09766, (1,2) 0.0116, (0,1) 0.0065, (2,2) 0.0012, (0,2) 0.
  // By raw counts the order would start (2,1), (0,0), (1,3).
  const std::vector<std::pair<int, int>> order = {{2, 1}, {1, 3}, {1, 0}, {2, 3}, {0, 0}, {1, 1},
                                                  {2, 0}, {0, 3}, {1, 2}, {0, 1}, {2, 2}, {0, 2}};
  const uint64_t fixed = costs.fixed.total();
  REQUIRE(fixed == 8173);
  uint64_t prefix = 0;
  Hot expected(3);
  for (size_t k = 0; k <= order.size(); ++k) {
    INFO("k = " << k);
    // Exactly the bytes of the first k: those k, nothing else fits.
    const auto plan = solve_placement(costs, counts, fixed + prefix);
    Hot sorted = expected;
    for (auto& s : sorted) std::sort(s.begin(), s.end());
    CHECK(hot_sets(plan) == sorted);
    CHECK(plan.hot_bytes() == prefix);
    CHECK(plan.used_bytes() == fixed + prefix);
    CHECK(plan.n_hot() == static_cast<int64_t>(k));
    if (k == order.size()) break;
    const auto [layer, idx] = order[k];
    expected[static_cast<size_t>(layer)].push_back(idx);
    prefix += costs.layers[static_cast<size_t>(layer)].bytes();
  }
}

TEST_CASE("placement: a neuron that does not fit is skipped and a cheaper colder one still goes in",
          "[sparse][placement]") {
  const auto costs = costs_of({neuron(DType::F16, 256), neuron(DType::Q4_0, 256)}, 2);
  // Order: (0,0) 100/1536, (1,0) 20/432, (0,1) 10/1536, (1,1) 1/432.
  const Counts counts = {{100, 10}, {20, 1}};
  // Room for (0,0) and (1,0), then 1000 bytes: (0,1) (1536) does not fit, (1,1) (432) does.
  const auto plan = solve_placement(costs, counts, costs.fixed.total() + 1536 + 432 + 1000);
  CHECK(hot_sets(plan) == Hot{{0}, {0, 1}});
  CHECK(plan.hot_bytes() == 1536 + 432 + 432);
}

TEST_CASE("placement: exactly enough for k neurons places k, one byte less places k - 1", "[sparse][placement]") {
  const auto costs = costs_of({neuron(DType::F16, 64), neuron(DType::F16, 64)}, 16);
  const uint64_t bytes = costs.layers[0].bytes();
  REQUIRE(bytes == 384);
  Counts counts(2, std::vector<int32_t>(16));
  for (int l = 0; l < 2; ++l) {
    for (int i = 0; i < 16; ++i) counts[static_cast<size_t>(l)][static_cast<size_t>(i)] = 1000 - 37 * i - 11 * l;
  }
  for (const int64_t k : {1, 2, 7, 20, 31, 32}) {
    INFO("k = " << k);
    const uint64_t budget = costs.fixed.total() + static_cast<uint64_t>(k) * bytes;
    const auto plan = solve_placement(costs, counts, budget);
    CHECK(plan.n_hot() == k);
    CHECK(plan.used_bytes() == budget);
    const auto less = solve_placement(costs, counts, budget - 1);
    CHECK(less.n_hot() == k - 1);
    CHECK(less.vram_budget - less.used_bytes() == bytes - 1);
  }
  // Counts interleave the layers (layer 1 is 11 below layer 0 at the same
  // index, 37 separates indices): the 3 hottest are (0,0), (1,0), (0,1).
  CHECK(hot_sets(solve_placement(costs, counts, costs.fixed.total() + 3 * bytes)) == Hot{{0, 1}, {0}});
}

TEST_CASE("placement: a budget below the fixed cost fails with both numbers and the breakdown", "[sparse][placement]") {
  auto costs = costs_of({neuron(DType::F16, 64)}, 4);
  costs.shape = {.n_ctx = 2048, .n_parallel = 3, .n_batch = 256};
  const Counts counts = {{1, 2, 3, 4}};
  const uint64_t fixed = costs.fixed.total();
  try {
    solve_placement(costs, counts, fixed - 1);
    FAIL("a budget one byte short of the fixed cost was accepted");
  } catch (const PlacementError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK_THAT(what, Catch::Contains(std::to_string(fixed - 1) + " bytes") &&
                         Catch::Contains(std::to_string(fixed) + " bytes") &&
                         Catch::Contains("attention and norms") && Catch::Contains("predictors") &&
                         Catch::Contains("output head") && Catch::Contains("KV cache") &&
                         Catch::Contains("n_ctx 2048 x 3 slots") && Catch::Contains("workspace") &&
                         Catch::Contains("--vram-budget"));
  }
  const auto plan = solve_placement(costs, counts, fixed);
  CHECK(plan.n_hot() == 0);
  CHECK(plan.neuron_budget() == 0);
}

TEST_CASE("placement: when everything fits every neuron is hot, never-firing ones too", "[sparse][placement]") {
  const auto costs = costs_of({neuron(DType::Q8_0, 64), neuron(DType::F16, 64)}, 5);
  const Counts counts = {{0, 3, 0, 9, 1}, {0, 0, 0, 0, 0}};
  const uint64_t everything = costs.fixed.total() + 5 * (costs.layers[0].bytes() + costs.layers[1].bytes());
  for (const uint64_t budget : {everything, everything + 12345}) {
    const auto plan = solve_placement(costs, counts, budget);
    CHECK(hot_sets(plan) == Hot{{0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}});
    CHECK(plan.used_bytes() == everything);
    CHECK(plan.layers[0].gpu_share() == 1.0);
    CHECK(plan.layers[1].gpu_share() == 0.0);  // never fired: no share to serve
    CHECK(plan.gpu_share() == 1.0);
  }
}

TEST_CASE("placement: ties are broken by layer, then neuron index, the same input gives the same plan",
          "[sparse][placement]") {
  // Equal counts and bytes everywhere: the lowest layers and indices win.
  const auto uniform = costs_of({neuron(DType::F16, 64), neuron(DType::F16, 64)}, 8);
  const Counts equal(2, std::vector<int32_t>(8, 5));
  const auto plan = solve_placement(uniform, equal, uniform.fixed.total() + 10 * 384);
  CHECK(hot_sets(plan) == Hot{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}});
  CHECK(hot_sets(solve_placement(uniform, equal, uniform.fixed.total() + 10 * 384)) == hot_sets(plan));

  // Equal firings per byte with different bytes: 32 / 1536 == 9 / 432.
  const auto mixed = costs_of({neuron(DType::F16, 256), neuron(DType::Q4_0, 256)}, 2);
  const Counts same_ratio = {{32, 32}, {9, 9}};
  CHECK(hot_sets(solve_placement(mixed, same_ratio, mixed.fixed.total() + 1536)) == Hot{{0}, {}});
  CHECK(hot_sets(solve_placement(mixed, same_ratio, mixed.fixed.total() + 1535)) == Hot{{}, {0, 1}});
}

TEST_CASE("placement: the GPU share of firings is hot firings over all firings, per layer and in total",
          "[sparse][placement]") {
  const auto costs = costs_of({neuron(DType::F16, 64), neuron(DType::F16, 64)}, 4);
  const Counts counts = {{50, 30, 15, 5}, {40, 40, 10, 10}};
  // 3 neurons: (0,0) 50, (1,0) 40, (1,1) 40.
  const auto plan = solve_placement(costs, counts, costs.fixed.total() + 3 * 384);
  CHECK(hot_sets(plan) == Hot{{0}, {0, 1}});
  CHECK(plan.layers[0].hot_firings == 50);
  CHECK(plan.layers[0].all_firings == 100);
  CHECK(plan.layers[0].gpu_share() == Approx(0.5));
  CHECK(plan.layers[1].gpu_share() == Approx(0.8));
  CHECK(plan.gpu_share() == Approx(130.0 / 200.0));
}

TEST_CASE("placement: fire counts of the wrong shape are rejected", "[sparse][placement]") {
  const auto costs = costs_of({neuron(DType::F16, 64), neuron(DType::F16, 64)}, 4);
  CHECK_THROWS_WITH(solve_placement(costs, Counts{{1, 2, 3, 4}}, 1 << 20), Catch::Contains("1 layers"));
  CHECK_THROWS_WITH(solve_placement(costs, Counts{{1, 2, 3, 4}, {1, 2, 3}}, 1 << 20), Catch::Contains("n_ff is 4"));
  CHECK_THROWS_WITH(solve_placement(costs, Counts{{1, 2, 3, 4}, {1, -2, 3, 4}}, 1 << 20),
                    Catch::Contains("negative"));
}
