// place_model: model + stats + budget -> plan, and the plan as a gpuidx file.
#include "engine/sparse/place_model.h"

#include <algorithm>
#include <stdexcept>

#include "config/serve_options.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/placement_costs.h"
#include "engine/sparse/vram_budget.h"

namespace tc::sparse {

PlacementPlan place_loaded_model(const model::LoadedModel& loaded, uint64_t vram_budget,
                                 const PlacementShape& shape) {
  if (!loaded.stats_file) {
    throw std::invalid_argument("placing neurons needs the activation statistics `thermocline profile` recorded "
                                "on this model (a stats file)");
  }
  const ActivationStats stats = read_activation_stats(*loaded.stats_file);
  const PlacementCosts costs = placement_costs(loaded.file, loaded.spec, loaded.predictors, shape);
  return solve_placement(costs, stats.fire_counts, vram_budget);
}

uint64_t prefetch_cache_reserve(const PlacementCosts& costs, const model::PrefetchOptions& prefetch) {
  const int64_t per_layer = model::cache_slots_per_layer(prefetch, costs.n_ff);
  uint64_t bytes = 0;
  for (size_t l = 1; l < costs.layers.size(); ++l) bytes += static_cast<uint64_t>(per_layer) * costs.layers[l].bytes();
  return bytes;
}

PlacementPlan place_with_prefetch_caches(const model::LoadedModel& loaded, uint64_t vram_budget,
                                         const std::string& budget_source, const PlacementShape& shape,
                                         model::PrefetchOptions& prefetch, uint64_t* cache_reserve) {
  // A budget below the fixed part alone is the solver's PlacementError, as without prefetch.
  const PlacementCosts costs = placement_costs(loaded.file, loaded.spec, loaded.predictors, shape);
  const uint64_t fixed = costs.fixed.total();
  uint64_t reserve = prefetch_cache_reserve(costs, prefetch);
  if (reserve > 0 && vram_budget >= fixed && prefetch.cache_slots < 0 && reserve > (vram_budget - fixed) / 2) {
    // The default size would take most of what the hot neurons get: the
    // caches shrink to half of it (a tight budget's hot neurons serve more
    // firings per byte than a cache of guesses).
    model::PrefetchOptions one_slot;
    one_slot.mode = prefetch.mode;
    one_slot.cache_slots = 1;
    const uint64_t per_slot = prefetch_cache_reserve(costs, one_slot);
    prefetch.cache_slots = per_slot > 0 ? static_cast<int64_t>((vram_budget - fixed) / 2 / per_slot) : 0;
    reserve = prefetch_cache_reserve(costs, prefetch);
  }
  uint64_t solver_budget = vram_budget;
  if (prefetch.mode != model::PrefetchMode::Off && vram_budget >= fixed) {
    if (vram_budget - fixed < reserve || (reserve == 0 && costs.layers.size() > 1)) {
      throw std::invalid_argument("--vram-budget: " + budget_source + " holds the fixed part (" + human_bytes(fixed) +
                                  ") but not the prefetch path's neuron caches as well (" + human_bytes(reserve) +
                                  "): raise it, or --prefetch off");
    }
    solver_budget = vram_budget - reserve;
  }
  if (cache_reserve != nullptr) *cache_reserve = reserve;
  return place_loaded_model(loaded, solver_budget, shape);
}

PlaceResult place_model(const PlaceRequest& request) {
  // load_model validates the model and checks the stats' fingerprint against it.
  const auto loaded = model::load_model(request.model, {.stats = request.stats});
  const ActivationStats stats = read_activation_stats(*loaded->stats_file);  // for the report
  const model::ModelSpec& spec = loaded->spec;

  PlaceResult result;
  PlacementShape shape = request.shape;
  if (shape.n_ctx == 0) shape.n_ctx = std::min(config::ServeOptions{}.ctx_size, spec.n_ctx_train);
  const VramBudget budget = resolve_vram_budget(request.vram_budget, request.vram_budget_text);
  result.budget_source = budget.source;
  model::PrefetchOptions prefetch;
  prefetch.mode = request.prefetch;
  // (place_with_prefetch_caches may shrink prefetch.cache_slots to the budget.)
  result.plan = place_with_prefetch_caches(*loaded, budget.bytes, budget.source, shape, prefetch, &result.cache_reserve);
  result.model_path = request.model.string();
  result.model_name = spec.name;
  result.ffn_form = std::string(model::ffn_form_name(spec.ffn_form));
  result.stats_path = request.stats.string();
  result.stats_tokens = stats.n_tokens;
  result.model_tensor_hash = stats.model.tensor_hash;  // equal to the model's: checked by load_model
  return result;
}

GpuIndex to_gpu_index(const PlaceResult& result) {
  const PlacementPlan& plan = result.plan;
  GpuIndex index;
  index.vram_capacity = plan.neuron_budget();
  index.n_ff = plan.costs.n_ff;
  for (const auto& layer : plan.layers) index.hot.push_back(layer.hot);
  index.model_tensor_hash = result.model_tensor_hash;
  const auto& shape = plan.costs.shape;
  index.notes = {{"vram_budget", plan.vram_budget + result.cache_reserve},
                 {"fixed_bytes", plan.costs.fixed.total()},
                 {"hot_bytes", plan.hot_bytes()},
                 {"cache_reserve", result.cache_reserve},
                 {"n_ctx", static_cast<uint64_t>(shape.n_ctx)},
                 {"n_parallel", static_cast<uint64_t>(shape.n_parallel)},
                 {"n_batch", static_cast<uint64_t>(shape.n_batch)}};
  return index;
}

std::filesystem::path default_gpu_index_path(const std::filesystem::path& model) {
  return model.string() + ".generated.gpuidx";
}

}  // namespace tc::sparse
