// ModelLoadError: every problem found while reading a model or statistics
// file. The message names the file, the key or tensor, and what was expected.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace tc::gguf {

class ModelLoadError : public std::runtime_error {
 public:
  // file: the path (or a name for in-memory data); item: the metadata key or
  // tensor name at fault, empty when the fault is in the file's framing;
  // problem: what was wrong and what was expected.
  // what() reads "file: 'item': problem" ("file: problem" without an item).
  ModelLoadError(std::string file, std::string item, const std::string& problem);

  // The same error with the item labelled by its kind:
  // "model.gguf: key 'general.alignment': ..." and
  // "model.gguf: tensor 'blk.0.attn_q.weight': ...".
  static ModelLoadError for_key(std::string file, std::string key, const std::string& problem);
  static ModelLoadError for_tensor(std::string file, std::string name, const std::string& problem);

  const std::string& file() const { return file_; }
  const std::string& item() const { return item_; }

 private:
  ModelLoadError(std::string file, std::string item, std::string_view kind,
                 const std::string& problem);

  std::string file_;
  std::string item_;
};

// `s` made printable for an error message: control and non-ASCII bytes as
// \xNN, cut after `max_len` bytes with "..." (names in bad files can be
// arbitrary bytes).
std::string printable(std::string_view s, size_t max_len = 120);

}  // namespace tc::gguf
