// The model options every running subcommand shares (--device, --stats,
// --sparsity, --sparse-max-tokens, --placement) and the set-up they drive:
// load, backend(s), sparsity plan, forward pass. Used by generate, bench and
// perplexity.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
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
};

// Returns the --sparse-max-tokens option (to tell whether it was given).
CLI::Option* add_model_options(CLI::App* sub, ModelCliOptions& options);

// A model ready to run: members in construction order.
struct CliModel {
  std::unique_ptr<model::LoadedModel> loaded;
  std::unique_ptr<kernels::Backend> backend;
  std::unique_ptr<kernels::Backend> cold_backend;  // hybrid mode: the CPU backend of the cold neurons
  sparse::SparsityPlan plan;
  std::unique_ptr<model::LlamaModel> llama;
};

// Loads `path` with the options' stats file, creates the --device backend
// (CPU: `threads` threads), resolves the sparsity setting and builds the
// forward pass; with --placement in hybrid mode (the cold neurons' CPU
// backend gets `threads` threads). Prints the plan's summary on stderr. Throws what the steps
// throw (gguf::ModelLoadError, kernels::BackendUnavailable,
// std::invalid_argument with the option named).
CliModel open_cli_model(const std::string& path, int threads, const ModelCliOptions& options);

}  // namespace tc::cli
