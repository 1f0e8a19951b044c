// placement_report: the plan as markdown (per layer, fixed costs, totals).
#include <cstdio>
#include <string>

#include "engine/sparse/place_model.h"
#include "engine/sparse/vram_budget.h"
#include "kernels/device_scratch.h"

namespace tc::sparse {
namespace {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string neuron_dtypes(const NeuronCost& c) {
  std::string s = c.gate_dtype ? std::string(kernels::dtype_name(*c.gate_dtype)) : std::string("-");
  return s + "/" + std::string(kernels::dtype_name(c.up_dtype)) + "/" +
         std::string(kernels::dtype_name(c.down_t_dtype));
}

std::string row(const std::string& label, uint64_t bytes, const std::string& note = "") {
  return "| " + label + " | " + std::to_string(bytes) + " | " + human_bytes(bytes) + " | " + note + " |\n";
}

}  // namespace

std::string placement_report(const PlaceResult& r) {
  const PlacementPlan& plan = r.plan;
  const PlacementCosts& costs = plan.costs;
  std::string out;
  out += "# Neuron placement\n\n";
  out += "model " + r.model_path + " ('" + r.model_name + "', " + r.ffn_form + ", " +
         std::to_string(costs.layers.size()) + " layers x " + std::to_string(costs.n_ff) + " neurons)\n";
  out += "stats " + r.stats_path + " (" + std::to_string(r.stats_tokens) + " tokens)\n";
  const uint64_t budget = plan.vram_budget + r.cache_reserve;
  out += "VRAM budget " + describe_bytes(budget) + " from " + r.budget_source + "\n\n";

  out += "| layer | hot neurons | hot bytes | bytes/neuron | gate/up/down_t | GPU share of firings |\n";
  out += "| ---: | ---: | ---: | ---: | :--- | ---: |\n";
  for (size_t l = 0; l < plan.layers.size(); ++l) {
    const auto& layer = plan.layers[l];
    const auto& cost = costs.layers[l];
    out += "| " + std::to_string(l) + " | " + std::to_string(layer.hot.size()) + " / " + std::to_string(costs.n_ff) +
           " | " + std::to_string(layer.hot_bytes) + " | " + std::to_string(cost.bytes()) + " | " +
           neuron_dtypes(cost) + " | " + percent(layer.gpu_share()) + " |\n";
  }

  const FixedCosts& f = costs.fixed;
  const auto& shape = costs.shape;
  out += "\n| VRAM, in spending order | bytes | size | what |\n| :--- | ---: | ---: | :--- |\n";
  out += row("attention and norms", f.attention, "attn_norm, attn_q/k/v/output, ffn_norm, all layers");
  out += row("predictors", f.predictors, f.predictors == 0 ? "none in the model or stats" : "fc1 + fc2, all layers");
  out += row("output head", f.output_head, "output (or tied token_embd) + output_norm");
  out += row("KV cache", f.kv_cache,
             "f16 K and V, n_ctx " + std::to_string(shape.n_ctx) + " x " + std::to_string(shape.n_parallel) + " slots");
  out += row("workspace", f.workspace,
             "one step of " + std::to_string(shape.step_tokens()) + " tokens, and cuBLAS's " +
                 human_bytes(kernels::kCublasWorkspaceBytes));
  out += row("**fixed total**", f.total());
  if (r.cache_reserve > 0) {
    out += row("prefetch caches", r.cache_reserve,
               "kept free: n_ff / 16 neurons in every layer but the first (--prefetch on or auto)");
  }
  out += row("hot FFN neurons", plan.hot_bytes(),
             std::to_string(plan.n_hot()) + " of " + std::to_string(plan.n_neurons()) + " neurons");
  out += row("**used**", plan.used_bytes() + r.cache_reserve);
  out += row("unused", budget - plan.used_bytes() - r.cache_reserve);
  out += row("**budget**", budget);
  out += "\nhot neurons " + std::to_string(plan.n_hot()) + " / " + std::to_string(plan.n_neurons()) + " (" +
         percent(plan.n_neurons() == 0 ? 0.0
                                       : static_cast<double>(plan.n_hot()) / static_cast<double>(plan.n_neurons())) +
         "), expected share of all firings served by the GPU " + percent(plan.gpu_share()) + "\n";
  return out;
}

}  // namespace tc::sparse
