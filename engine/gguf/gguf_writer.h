// GgufWriter: writes GGUF v3 files (magic `GGUF` or `PWRI`) for the repo's
// own tools (make-model, profile, convert). Tensor data can be produced
// lazily by a filler called at write time, so multi-GB models are written
// without holding them in memory. Not thread-safe; write() is synchronous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/value.h"
#include "kernels/dtype.h"

namespace tc::gguf {

class GgufWriter {
 public:
  // Fills exactly `out.size()` bytes of a tensor's data.
  using TensorFiller = std::function<void(std::span<std::byte> out)>;
  // Reports progress: bytes written so far, total bytes.
  using Progress = std::function<void(uint64_t done, uint64_t total)>;

  explicit GgufWriter(Magic magic = Magic::GGUF, uint32_t alignment = kDefaultAlignment);

  // Sets a metadata key; a key set twice keeps its first position and the
  // last value. `general.alignment` is written from the constructor's value.
  void set(const std::string& key, Value value);
  // Adds a tensor (ne in GGUF order, innermost first). Throws
  // std::invalid_argument for a duplicate name, > 4 dims, or a row length
  // that is not a multiple of the dtype's block size.
  void add_tensor(const std::string& name, kernels::DType dtype, std::vector<int64_t> ne,
                  TensorFiller fill);
  void add_tensor(const std::string& name, kernels::DType dtype, std::vector<int64_t> ne,
                  std::vector<std::byte> data);

  // Writes the file atomically (to `path.tmp`, then renamed). Throws
  // std::runtime_error naming the path on I/O failure.
  void write(const std::filesystem::path& path, const Progress& progress = {}) const;

 private:
  struct PendingTensor {
    TensorInfo info;
    TensorFiller fill;
  };
  Magic magic_;
  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t next_offset_ = 0;
};

}  // namespace tc::gguf
