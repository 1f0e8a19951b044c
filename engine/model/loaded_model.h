// LoadedModel: a model file opened for serving: the mapped GGUF, its
// validated spec, and its tokenizer. Immutable after load_model(); shared
// read-only by the HTTP threads and the engine thread.
#pragma once

#include <filesystem>
#include <memory>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/text/tokenizer.h"

namespace tc::model {

struct LoadedModel {
  gguf::GgufFile file;
  ModelSpec spec;
  std::unique_ptr<text::Tokenizer> tokenizer;
};

// Opens, validates (spec, tensors, tokenizer) and returns the model.
// Throws gguf::ModelLoadError naming the file and the key or tensor at fault.
std::unique_ptr<LoadedModel> load_model(const std::filesystem::path& path);

}  // namespace tc::model
