// inspect: a readable report of a GGUF/PWRI file: container facts, model
// hyperparameters, tokenizer summary, chat template, all metadata and every
// tensor (name, dtype, shape, bytes, offset), as a text table or JSON.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace tc::profiler {

struct InspectOptions {
  bool json = false;
  size_t max_array_items = 8;   // longer metadata arrays are elided (count shown)
};

// Throws tc::gguf::ModelLoadError when the file cannot be read. A file that
// is valid GGUF but not a model we can run still gets a report, with the
// reason the model spec could not be read.
std::string inspect_file(const std::filesystem::path& path, const InspectOptions& options);

}  // namespace tc::profiler
