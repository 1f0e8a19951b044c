// layer_offload_costs / plan_layer_offload: bytes per offloaded layer and the
// largest k that fits a budget.
#include "engine/sparse/layer_offload_plan.h"

#include <stdexcept>
#include <string_view>

#include "engine/sparse/vram_budget.h"

namespace tc::sparse {

uint64_t LayerOffloadCosts::device_bytes(int64_t k) const {
  const auto n_layer = static_cast<int64_t>(layer_weights.size());
  if (k < 0 || k > n_layer) throw std::invalid_argument("layer offload: k out of [0, n_layer]");
  if (k == 0) return 0;
  uint64_t bytes = workspace.total(k == n_layer) + kv_per_layer * static_cast<uint64_t>(k);
  for (int64_t l = 0; l < k; ++l) bytes += layer_weights[static_cast<size_t>(l)];
  if (k == n_layer) bytes += output_head;
  return bytes;
}

LayerOffloadCosts layer_offload_costs(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                      const PlacementShape& shape) {
  // placement_costs checks the shape and measures the head and KV cache the
  // same way for the hybrid solver; its neuron costs are unused.
  const PlacementCosts placed = placement_costs(file, spec, PredictorSet{}, shape);
  LayerOffloadCosts costs;
  costs.layer_weights.assign(static_cast<size_t>(spec.n_layer), 0);
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    // The tensors LayerWeights maps (and place_leading_layers uploads): all of blk.N but the predictors.
    const std::string prefix = "blk." + std::to_string(l) + ".";
    for (const auto& info : file.tensors()) {
      if (info.name.rfind(prefix, 0) != 0) continue;
      const std::string_view t = std::string_view(info.name).substr(prefix.size());
      if (t != "fc1.weight" && t != "fc2.weight") costs.layer_weights[static_cast<size_t>(l)] += info.n_bytes;
    }
  }
  costs.kv_per_layer = kv_cache_bytes(spec, shape) / static_cast<uint64_t>(spec.n_layer);
  costs.output_head = placed.fixed.output_head;
  costs.workspace = dense_step_workspace(file, spec, shape);
  return costs;
}

LayerOffloadPlan plan_layer_offload(const LayerOffloadCosts& costs, uint64_t budget) {
  const auto n_layer = static_cast<int64_t>(costs.layer_weights.size());
  LayerOffloadPlan plan;
  for (int64_t k = n_layer; k > 0; --k) {  // device_bytes grows with k
    if (costs.device_bytes(k) <= budget) {
      plan.n_device_layers = k;
      plan.device_bytes = costs.device_bytes(k);
      break;
    }
  }
  plan.summary = std::to_string(plan.n_device_layers) + " of " + std::to_string(n_layer) + " layers on the GPU" +
                 (plan.n_device_layers == n_layer ? " with the output head" : "") + ": " +
                 human_bytes(plan.device_bytes) + " of the " + human_bytes(budget) + " budget";
  if (plan.n_device_layers < n_layer) {
    plan.summary += " (" + std::to_string(plan.n_device_layers + 1) + " would need " +
                    human_bytes(costs.device_bytes(plan.n_device_layers + 1)) + ")";
  }
  return plan;
}

}  // namespace tc::sparse
