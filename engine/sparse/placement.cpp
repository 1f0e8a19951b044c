// solve_placement: the fixed part first, then neurons by firings per byte.
#include "engine/sparse/placement.h"

#include <algorithm>

#include "engine/sparse/vram_budget.h"

namespace tc::sparse {
namespace {

struct Candidate {
  int32_t count;   // firings
  int32_t layer;
  int32_t neuron;
  uint64_t bytes;  // the layer's bytes per neuron
};

// a before b: more firings per byte (count_a / bytes_a > count_b / bytes_b,
// cross-multiplied in 128 bits, so exact), then lower layer, then lower index.
bool hotter(const Candidate& a, const Candidate& b) {
  const auto lhs = static_cast<unsigned __int128>(static_cast<uint64_t>(a.count)) * b.bytes;
  const auto rhs = static_cast<unsigned __int128>(static_cast<uint64_t>(b.count)) * a.bytes;
  if (lhs != rhs) return lhs > rhs;
  if (a.layer != b.layer) return a.layer < b.layer;
  return a.neuron < b.neuron;
}

void check_counts(const PlacementCosts& costs, const std::vector<std::vector<int32_t>>& fire_counts) {
  if (fire_counts.size() != costs.layers.size()) {
    throw std::invalid_argument("placement: fire counts for " + std::to_string(fire_counts.size()) +
                                " layers, the model has " + std::to_string(costs.layers.size()));
  }
  for (size_t l = 0; l < fire_counts.size(); ++l) {
    if (static_cast<int64_t>(fire_counts[l].size()) != costs.n_ff) {
      throw std::invalid_argument("placement: layer " + std::to_string(l) + " has " +
                                  std::to_string(fire_counts[l].size()) + " fire counts, the model's n_ff is " +
                                  std::to_string(costs.n_ff));
    }
    if (std::any_of(fire_counts[l].begin(), fire_counts[l].end(), [](int32_t c) { return c < 0; })) {
      throw std::invalid_argument("placement: layer " + std::to_string(l) + " has a negative fire count");
    }
  }
}

}  // namespace

uint64_t PlacementPlan::hot_bytes() const {
  uint64_t sum = 0;
  for (const auto& l : layers) sum += l.hot_bytes;
  return sum;
}

int64_t PlacementPlan::n_hot() const {
  int64_t n = 0;
  for (const auto& l : layers) n += static_cast<int64_t>(l.hot.size());
  return n;
}

double PlacementPlan::gpu_share() const {
  uint64_t hot = 0, all = 0;
  for (const auto& l : layers) {
    hot += l.hot_firings;
    all += l.all_firings;
  }
  return all == 0 ? 0.0 : static_cast<double>(hot) / static_cast<double>(all);
}

std::string describe_fixed_costs(const PlacementCosts& costs) {
  const FixedCosts& f = costs.fixed;
  return "attention and norms " + describe_bytes(f.attention) + ", predictors " +
         (f.predictors == 0 ? std::string("none") : describe_bytes(f.predictors)) + ", output head " +
         describe_bytes(f.output_head) + ", KV cache " + describe_bytes(f.kv_cache) + " (n_ctx " +
         std::to_string(costs.shape.n_ctx) + " x " + std::to_string(costs.shape.n_parallel) +
         " slots, f16), workspace " + describe_bytes(f.workspace) + " (batch " + std::to_string(costs.shape.n_batch) +
         ")";
}

PlacementPlan solve_placement(const PlacementCosts& costs, const std::vector<std::vector<int32_t>>& fire_counts,
                              uint64_t vram_budget) {
  check_counts(costs, fire_counts);
  const uint64_t fixed = costs.fixed.total();
  if (vram_budget < fixed) {
    throw PlacementError("VRAM budget " + describe_bytes(vram_budget) + " is below the fixed cost " +
                         describe_bytes(fixed) + " that comes before any FFN neuron: " + describe_fixed_costs(costs) +
                         "; raise --vram-budget, or lower --ctx, --parallel or --batch");
  }
  PlacementPlan plan;
  plan.vram_budget = vram_budget;
  plan.costs = costs;
  plan.layers.resize(costs.layers.size());

  std::vector<Candidate> order;
  order.reserve(static_cast<size_t>(costs.n_ff) * costs.layers.size());
  for (size_t l = 0; l < costs.layers.size(); ++l) {
    const uint64_t bytes = costs.layers[l].bytes();
    for (size_t i = 0; i < fire_counts[l].size(); ++i) {
      const int32_t count = fire_counts[l][i];
      order.push_back({count, static_cast<int32_t>(l), static_cast<int32_t>(i), bytes});
      plan.layers[l].all_firings += static_cast<uint64_t>(count);
    }
  }
  std::sort(order.begin(), order.end(), hotter);

  uint64_t left = vram_budget - fixed;
  for (const Candidate& c : order) {
    if (c.bytes > left) continue;
    left -= c.bytes;
    auto& layer = plan.layers[static_cast<size_t>(c.layer)];
    layer.hot.push_back(c.neuron);
    layer.hot_bytes += c.bytes;
    layer.hot_firings += static_cast<uint64_t>(c.count);
  }
  for (auto& layer : plan.layers) std::sort(layer.hot.begin(), layer.hot.end());
  return plan;
}

}  // namespace tc::sparse
