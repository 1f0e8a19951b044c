// `thermocline place` as one call: open the model and its activation
// statistics (checked to belong to it), measure the costs, solve the
// placement, and turn the plan into a report and a gpuidx file. Synchronous;
// no shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/model/hybrid_prefetch.h"
#include "engine/sparse/gpu_index.h"
#include "engine/sparse/placement.h"

namespace tc::model {
struct LoadedModel;
}

namespace tc::sparse {

struct PlaceRequest {
  std::filesystem::path model;   // GGUF or PWRI model file
  std::filesystem::path stats;   // `thermocline profile` stats file recorded on this model
  // Bytes; nullopt: default_vram_budget(kernels::query_gpus()) (resolve_vram_budget).
  std::optional<uint64_t> vram_budget;
  std::string vram_budget_text;  // as the user wrote it, for the report ("12GiB")
  // n_ctx 0: serve's default context (4096) capped at the model's training context.
  PlacementShape shape{.n_ctx = 0};
  // The prefetch path the plan is for (serve's default: auto): with on or
  // auto its caches' largest size is kept out of the budget, as
  // `--placement auto` does, so the file's plan and the caches fit together.
  model::PrefetchMode prefetch = model::PrefetchMode::Auto;
};

struct PlaceResult {
  PlacementPlan plan;            // solved within the budget less cache_reserve
  uint64_t cache_reserve = 0;    // bytes kept free for the prefetch caches (0: prefetch off)
  std::string budget_source;     // "--vram-budget 12GiB" or the default's description
  std::string model_path;
  std::string model_name;        // general.name
  std::string ffn_form;          // "reglu", ...
  std::string stats_path;
  uint64_t stats_tokens = 0;     // tokens the statistics were recorded over
  uint64_t model_tensor_hash = 0;
};

// Throws gguf::ModelLoadError (model or stats file, stats of another model),
// std::invalid_argument (no budget and no GPU, bad shape) and PlacementError
// (budget below the fixed cost).
PlaceResult place_model(const PlaceRequest& request);

// The solver over `loaded`'s activation statistics (its stats file) and
// costs for `shape` under `vram_budget` bytes: what place_model and hybrid
// mode's `--placement auto` (engine/runtime/model_setup.h) run. Throws
// std::invalid_argument when the model was opened without a stats file,
// PlacementError when the budget is below the fixed cost.
PlacementPlan place_loaded_model(const model::LoadedModel& loaded, uint64_t vram_budget, const PlacementShape& shape);

// The bytes the prefetch path's neuron caches take at most: every layer but
// the first gets up to cache_slots_per_layer(prefetch) neurons (fewer when
// it has fewer cold ones), each at that layer's bytes per neuron. 0 with
// prefetch off.
uint64_t prefetch_cache_reserve(const PlacementCosts& costs, const model::PrefetchOptions& prefetch);

// place_loaded_model within `vram_budget` less the prefetch caches' reserve
// (returned in *cache_reserve). Caches of the default size (cache_slots
// -1) that would take more than half of the budget left after the fixed
// part shrink to fit that half: prefetch.cache_slots is then set to the
// size to build them with. std::invalid_argument, naming `budget_source`
// and --prefetch off, when the budget holds the fixed part but not one
// cache slot per layer (or not an explicit cache_slots); PlacementError
// when it does not hold the fixed part.
PlacementPlan place_with_prefetch_caches(const model::LoadedModel& loaded, uint64_t vram_budget,
                                         const std::string& budget_source, const PlacementShape& shape,
                                         model::PrefetchOptions& prefetch, uint64_t* cache_reserve);

// The plan as PowerInfer's file: split.vram_capacity = the budget left after
// the fixed part and the caches' reserve, plus thermocline.placement.* notes
// (vram_budget, fixed_bytes, hot_bytes, cache_reserve, n_ctx, n_parallel,
// n_batch) and the model hash.
GpuIndex to_gpu_index(const PlaceResult& result);

// Markdown: per layer the hot neurons, their bytes, bytes per neuron and
// dtypes, the expected GPU share of firings; then the fixed-cost breakdown
// and the totals.
std::string placement_report(const PlaceResult& result);

// Where `place` writes by default: "<model>.generated.gpuidx" (PowerInfer's
// convention, next to the model).
std::filesystem::path default_gpu_index_path(const std::filesystem::path& model);

}  // namespace tc::sparse
