// The model options every running subcommand shares (--device, --stats,
// --sparsity, --sparse-max-tokens, --placement, --prefetch,
// --offload-layers, --vram-budget) and the set-up they drive: load,
// backend(s), sparsity plan, forward pass, KV cache. Used by generate, bench
// and perplexity.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/placement_costs.h"
#include "engine/sparse/sparsity_plan.h"
#include "kernels/backend.h"

namespace tc::cli {

struct ModelCliOptions {
  std::string device = "cpu";        // --device: cpu | cuda | cuda:N
  std::string stats;                 // --stats: a `thermocline profile` stats file
  std::string sparsity = "auto";     // --sparsity: dense | auto | relu | teal:X
  int64_t sparse_max_tokens = config::kDefaultSparseMaxTokens;
  // --placement: a .generated.gpuidx (`thermocline place`): hybrid mode, its
  // hot neurons on the --device GPU, the cold ones on the CPU. Empty: none.
  std::string placement;
  // --prefetch: hybrid mode's VRAM neuron cache and prefetch thread: on,
  // off, or auto (the per-layer cost model decides).
  std::string prefetch = "auto";
  // --offload-layers K: layer offload (the llama.cpp-style baseline), the
  // first K layers on the --device GPU, the rest on the CPU. -1: off.
  int64_t offload_layers = -1;
  // --vram-budget B: layer offload with the largest K whose device bytes
  // (weights, KV cache, workspace, head with every layer) fit B. Empty: off.
  std::string vram_budget;
};

// Returns the --sparse-max-tokens option (to tell whether it was given).
CLI::Option* add_model_options(CLI::App* sub, ModelCliOptions& options);

// The KV cache and step shape a subcommand runs (n_parallel slots of n_ctx
// positions, steps of up to n_batch tokens), from the model's spec: what
// --vram-budget's accounting and the KV cache use.
using ShapeOf = std::function<sparse::PlacementShape(const model::ModelSpec&)>;

// A model ready to run: members in construction order.
struct CliModel {
  std::unique_ptr<model::LoadedModel> loaded;
  std::unique_ptr<kernels::Backend> backend;
  // The CPU backend of hybrid mode's cold neurons, or of layer offload's host layers; null otherwise.
  std::unique_ptr<kernels::Backend> cold_backend;
  sparse::SparsityPlan plan;
  std::unique_ptr<model::LlamaModel> llama;
  sparse::PlacementShape shape;  // shape_of(spec)

  // The KV cache of `shape` (split in layer offload mode).
  runtime::KvCache make_kv_cache() { return llama->make_kv_cache(static_cast<int>(shape.n_parallel), shape.n_ctx); }
};

// Loads `path` with the options' stats file, creates the --device backend
// (CPU: `threads` threads), resolves the sparsity setting and builds the
// forward pass; with --placement in hybrid mode (the cold neurons' CPU
// backend gets `threads` threads), or in layer offload mode with
// --offload-layers / --vram-budget (the host layers' CPU backend gets
// `threads` threads). Prints the plan's summary on stderr. Throws what the
// steps throw (gguf::ModelLoadError, kernels::BackendUnavailable,
// std::invalid_argument with the option named).
CliModel open_cli_model(const std::string& path, int threads, const ModelCliOptions& options,
                        const ShapeOf& shape_of);

}  // namespace tc::cli
