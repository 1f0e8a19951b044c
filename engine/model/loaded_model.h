// LoadedModel: a model file opened for serving: the mapped GGUF, its
// validated spec, its tokenizer, and the sparsity data that goes with it
// (predictors from the file itself or from a `profile` stats file).
// Immutable after load_model(); shared read-only by the HTTP threads and the
// engine thread.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/predictors.h"
#include "engine/text/tokenizer.h"

namespace tc::model {

struct LoadOptions {
  // A `thermocline profile` stats file recorded on this model (empty: none):
  // its predictors are used when the model file has none, and its TEAL
  // calibration by `--sparsity teal:X`.
  std::filesystem::path stats;
};

struct LoadedModel {
  gguf::GgufFile file;
  ModelSpec spec;
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::optional<gguf::GgufFile> stats_file;  // LoadOptions::stats, checked to belong to this model
  sparse::PredictorSet predictors;           // the model file's, else stats_file's; empty: none
};

// Opens, validates (spec, tensors, tokenizer, stats and predictors) and
// returns the model. Throws gguf::ModelLoadError naming the file and the key
// or tensor at fault.
std::unique_ptr<LoadedModel> load_model(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace tc::model
