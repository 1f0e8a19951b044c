// The placement solver: spends a VRAM budget in the order of
// ../shared/design/architecture.md ("Memory kinds"): attention and norms,
// predictors, output head, KV cache, workspace, then the FFN neurons with the
// most firings per byte across all layers, until no further neuron fits.
// Exact bytes, single neurons (no group multiples). Pure function of its
// inputs; deterministic.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/sparse/placement_costs.h"

namespace tc::sparse {

// The budget cannot hold the fixed part; the message gives both numbers and
// what the fixed part consists of.
class PlacementError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LayerPlacement {
  std::vector<int32_t> hot;   // i32 [k]: indices of the neurons placed on the GPU, ascending
  uint64_t hot_bytes = 0;     // k * the layer's NeuronCost::bytes()
  uint64_t hot_firings = 0;   // firings (profiled tokens x neurons) of the hot neurons
  uint64_t all_firings = 0;   // firings of all the layer's neurons
  // Expected share of the layer's firings computed from VRAM:
  // hot_firings / all_firings (0 when the layer never fired).
  double gpu_share() const {
    return all_firings == 0 ? 0.0 : static_cast<double>(hot_firings) / static_cast<double>(all_firings);
  }
};

struct PlacementPlan {
  uint64_t vram_budget = 0;          // bytes
  PlacementCosts costs;              // what was paid for; costs.fixed is spent first
  std::vector<LayerPlacement> layers;  // [n_layer]

  uint64_t neuron_budget() const { return vram_budget - costs.fixed.total(); }  // left for neurons
  uint64_t hot_bytes() const;
  uint64_t used_bytes() const { return costs.fixed.total() + hot_bytes(); }  // <= vram_budget
  int64_t n_hot() const;
  int64_t n_neurons() const { return costs.n_ff * static_cast<int64_t>(layers.size()); }
  double gpu_share() const;          // hot firings / all firings over every layer (0: none fired)
};

// Places neurons under `vram_budget`. fire_counts: i32 [n_layer][n_ff],
// non-negative (ActivationStats::fire_counts). Neurons are taken in
// descending fire_count / neuron bytes (compared exactly), ties by layer
// then neuron index, ascending; one that does not fit in what is left is
// skipped and a cheaper later one may still be taken. Throws PlacementError
// when vram_budget < costs.fixed.total(), std::invalid_argument when the
// counts do not match the costs' shape.
PlacementPlan solve_placement(const PlacementCosts& costs, const std::vector<std::vector<int32_t>>& fire_counts,
                              uint64_t vram_budget);

// The fixed part in words with bytes: "attention and norms 1.2 MiB (...),
// predictors ..., output head ..., KV cache ... (n_ctx 4096 x 4 slots),
// workspace ... (batch 512)".
std::string describe_fixed_costs(const PlacementCosts& costs);

}  // namespace tc::sparse
