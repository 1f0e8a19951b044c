// The one set-up of a loaded model for running, shared by `serve`'s Engine
// and the CLI's generate, bench and perplexity: the backend(s), the
// sparsity plan, the GPU split (hybrid mode's placement, from a file or
// solved at load; layer offload's k) and the forward pass, plus the KV cache
// that goes with them. Runs on the thread that will own the model.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/device_setting.h"
#include "config/gpu_split_setting.h"
#include "config/sparsity_setting.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/placement_costs.h"
#include "engine/sparse/sparsity_plan.h"
#include "kernels/backend.h"

namespace tc::runtime {

// Makes the backend of a device with `n_threads` CPU threads (0: physical
// cores); throws kernels::BackendUnavailable with the reason when this build
// or machine has no such device. Tests pass one that makes a fake GPU.
using BackendFactory =
    std::function<std::unique_ptr<kernels::Backend>(const config::DeviceSetting& device, int n_threads)>;

// How a model runs. The settings are parsed and checked for contradictions
// by config/ (parse_device_setting, parse_sparsity_setting,
// parse_gpu_split_setting); what depends on the model is checked here.
struct ModelSetup {
  config::DeviceSetting device;                                 // the backend that runs the model
  int threads = 0;                                              // CPU threads of every backend; 0: physical cores
  config::SparsitySetting sparsity;                             // FFN mode (engine/sparse/sparsity_plan.h)
  int64_t sparse_max_tokens = config::kDefaultSparseMaxTokens;  // larger prompt chunks run the dense FFN
  config::GpuSplitSetting gpu_split;                            // hybrid mode or layer offload (device cuda)
  kernels::CpuRepack cpu_repack = kernels::CpuRepack::Auto;      // ForwardOptions::cpu_repack
  kernels::KvCacheTypes kv_types;                               // the KV cache's (f16; q8_0 on the CPU backend)
  BackendFactory create_backend;                                // empty: kernels::create_backend
};

// A model ready to run; members in construction order (destroyed in reverse).
struct RunnableModel {
  std::shared_ptr<const model::LoadedModel> loaded;
  std::unique_ptr<kernels::Backend> backend;  // ModelSetup::device's
  // The CPU backend of hybrid mode's cold neurons or of layer offload's host
  // layers; null without a GPU split.
  std::unique_ptr<kernels::Backend> cpu_backend;
  sparse::SparsityPlan plan;                  // outlives llama (its sparsifier is installed there)
  std::unique_ptr<model::LlamaModel> llama;
  sparse::PlacementShape shape;               // the KV cache and step shape it was set up for
  kernels::KvCacheTypes kv_types;             // the KV cache's element types (ModelSetup::kv_types)
  // What was set up, one line each for the log: "sparsity: ...", and
  // "hybrid: ..." and "prefetch: ..." or "layer offload: ..." with a GPU
  // split.
  std::vector<std::string> summary;

  // The KV cache of `shape` (n_parallel slots of n_ctx positions), split at
  // layer k in layer offload mode. Must not outlive this model's backends.
  KvCache make_kv_cache() const {
    return llama->make_kv_cache(static_cast<int>(shape.n_parallel), shape.n_ctx, kv_types);
  }
};

// Creates the backend first (so a machine without the device stops with
// the backend's reason before anything else), then the plan and the forward
// pass for `shape`:
//   hybrid mode    the sparse FFN split by the placement file (read and
//                  checked against the model), or by the placement solved
//                  from the model's stats file within the GPU split's
//                  budget (default: the device's free memory minus a margin)
//                  less the largest size of the prefetch caches;
//   layer offload  the dense FFN, the first k layers on the device (k given,
//                  or the largest that fits the budget).
// Throws what the steps throw: kernels::BackendUnavailable,
// gguf::ModelLoadError (placement file), sparse::PlacementError (budget
// below the fixed cost), std::invalid_argument naming the option at fault.
RunnableModel set_up_model(std::shared_ptr<const model::LoadedModel> loaded, const ModelSetup& setup,
                           const sparse::PlacementShape& shape);

}  // namespace tc::runtime
