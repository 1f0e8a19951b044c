// ModelLoadError: every problem found while reading a model or statistics
// file. The message names the file, the key or tensor, and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace tc::gguf {

class ModelLoadError : public std::runtime_error {
 public:
  // file: the path (or a name for in-memory data); item: the metadata key or
  // tensor name at fault, empty when the fault is in the file's framing;
  // problem: what was wrong and what was expected.
  ModelLoadError(std::string file, std::string item, const std::string& problem);

  const std::string& file() const { return file_; }
  const std::string& item() const { return item_; }

 private:
  std::string file_;
  std::string item_;
};

}  // namespace tc::gguf
