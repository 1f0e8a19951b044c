// The model options every running subcommand shares (--device, --stats,
// --sparsity, --sparse-max-tokens, --placement, --prefetch,
// --offload-layers, --vram-budget) and open_cli_model, which parses them, loads the model and
// hands it to the engine's set-up (engine/runtime/model_setup.h, the code
// `serve` runs too). Used by generate, bench and perplexity.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "config/sparsity_setting.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/model_setup.h"
#include "engine/sparse/placement_costs.h"

namespace tc::cli {

struct ModelCliOptions {
  std::string device = "cpu";        // --device: cpu | cuda | cuda:N
  std::string stats;                 // --stats: a `thermocline profile` stats file
  std::string sparsity = "auto";     // --sparsity: dense | auto | relu | teal:X
  int64_t sparse_max_tokens = config::kDefaultSparseMaxTokens;
  // The GPU split (config/gpu_split_setting.h). --placement: hybrid mode, a
  // .generated.gpuidx (`thermocline place`) or "auto" (solved at load from
  // --stats); empty: none.
  std::string placement;
  // --prefetch: hybrid mode's VRAM neuron cache and prefetch thread: on,
  // off, or auto (the per-layer cost model decides).
  std::string prefetch = "auto";
  // --offload-layers K: layer offload, the first K layers on the --device
  // GPU, the rest on the CPU. -1: off.
  int64_t offload_layers = -1;
  // --vram-budget B: --placement auto's budget, or else layer offload with
  // the largest K that fits. Empty: none.
  std::string vram_budget;
  // --repack auto|off: whether the CPU backend's Q4_0, Q4_1, Q8_0, Q3_K-Q6_K and IQ4_XS matrices
  // are copied into the matmul's lane layouts at load (kernels::CpuRepack,
  // engine/model/cpu_repack.h); --no-repack is --repack off.
  std::string repack = "auto";
  bool no_repack = false;
  // --cache-type-k, --cache-type-v: the KV cache's element types, f16 or
  // q8_0 (CPU backend only).
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
};

// Returns the --sparse-max-tokens option (to tell whether it was given).
CLI::Option* add_model_options(CLI::App* sub, ModelCliOptions& options);

// The KV cache and step shape a subcommand runs (n_parallel slots of n_ctx
// positions, steps of up to n_batch tokens), from the model's spec: what
// the GPU split's budgets and the KV cache use.
using ShapeOf = std::function<sparse::PlacementShape(const model::ModelSpec&)>;

// Parses the options (std::invalid_argument naming the flag), loads `path`
// with the stats file, and sets it up for shape_of(spec) with `threads` CPU
// threads per backend (runtime::set_up_model); prints what was set up on
// stderr. Throws what those throw (gguf::ModelLoadError,
// kernels::BackendUnavailable, std::invalid_argument naming the option).
runtime::RunnableModel open_cli_model(const std::string& path, int threads, const ModelCliOptions& options,
                                      const ShapeOf& shape_of);

}  // namespace tc::cli
