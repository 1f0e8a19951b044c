// SparsityPlan: what the `--sparsity` setting means for one loaded model:
// the FFN mode of the forward pass, and the TEAL sparsifier when asked for.
//   dense   every neuron, no thresholds;
//   auto    the predicted sparse FFN when the model is ReLU-family and has
//           predictors (its own or the --stats file's), else dense;
//   relu    the predicted sparse FFN, or an error saying what is missing;
//   teal:X  TEAL thresholds at target sparsity X from the --stats file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/sparsity_setting.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/teal.h"

namespace tc::sparse {

struct SparsityPlan {
  model::ForwardOptions forward;
  std::unique_ptr<TealSparsifier> teal;  // teal:X only
  std::string summary;                   // one line for logs: "sparse FFN (predictors: FILE, steps <= 8 tokens)"

  // Installs the plan's sparsifier (if any) on a model built with `forward`.
  void attach(model::LlamaModel& llama) const {
    if (teal) llama.set_input_sparsifier(teal.get());
  }
};

// Throws std::invalid_argument saying what is missing (predictors, a ReLU
// model, a stats file with a TEAL section) when the setting cannot apply.
// cpu_backend false (the model runs on a GPU without a neuron placement):
// "auto" resolves to dense, as the sparse FFN on a GPU is hybrid mode
// (--placement). Pass true for the CPU backend and for hybrid mode.
SparsityPlan plan_sparsity(const model::LoadedModel& model, const config::SparsitySetting& setting,
                           int64_t sparse_max_tokens = config::kDefaultSparseMaxTokens, bool cpu_backend = true);

}  // namespace tc::sparse
