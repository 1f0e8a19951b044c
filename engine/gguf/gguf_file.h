// GgufFile: a read-only, validated view of a GGUF v2/v3 file (magic `GGUF`)
// or a PowerInfer file (magic `PWRI`, same container). The file is memory
// mapped and tensor data is returned as zero-copy spans into the mapping.
// Every structural problem is a ModelLoadError naming the file and the key or
// tensor; nothing is read out of bounds. Immutable after open: thread-safe.
// A split model (gguf_split.h) is opened from its first shard: the other
// shards are mapped too and their tensors listed with the first's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/gguf/model_load_error.h"
#include "engine/gguf/value.h"
#include "kernels/dtype.h"

namespace tc::gguf {

enum class Magic { GGUF, PWRI };
std::string_view magic_name(Magic magic);

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;
// Deepest nesting of metadata arrays accepted (an array of arrays is depth 2);
// bounds the reader's recursion on hostile files.
inline constexpr int kMaxArrayDepth = 16;

struct TensorInfo {
  std::string name;
  kernels::DType dtype = kernels::DType::F32;
  // GGUF order: ne[0] is the innermost (contiguous) dimension, so a matrix
  // with `rows` rows of `cols` elements has ne = {cols, rows}.
  std::vector<int64_t> ne;
  uint64_t offset = 0;   // bytes from the start of the data section (of its shard)
  uint64_t n_bytes = 0;  // bytes of data (derived from dtype and ne)
  uint32_t shard = 0;    // split models: the file holding the data (0: the first, the one opened)

  int64_t n_elements() const;
  int64_t n_rows() const;   // product of ne[1..]
  std::string shape_string() const;  // "[4096, 32000]"
};

// A tensor whose dtype Thermocline does not read (GgufFile::open with
// UnsupportedDtypes::kList): kept out of tensors(), its data unchecked.
struct UnsupportedTensor {
  std::string name;
  uint32_t type_id = 0;       // ggml type id as stored
  std::string type_name;      // ggml's name ("iq2_xxs"), empty for an id ggml does not know
  std::vector<int64_t> ne;    // GGUF order
  std::string problem;        // "dtype iq2_xxs (ggml type id 16) is not supported"
};

// What open() does with a tensor of a dtype Thermocline does not support:
// throw (a model cannot run without it), or list it and go on (inspect).
enum class UnsupportedDtypes { kReject, kList };

class GgufFile {
 public:
  // Maps and parses `path`, and for the first shard of a split model every
  // other shard beside it. Throws ModelLoadError on any problem (a missing
  // shard, a later shard opened first, tensors that do not add up).
  static GgufFile open(const std::filesystem::path& path, UnsupportedDtypes unsupported = UnsupportedDtypes::kReject);
  // Parses bytes held in memory (copied); `name` stands in for the path in
  // errors. Used by the fuzzer and by tests. A split model's shard is refused.
  static GgufFile from_bytes(std::span<const std::byte> bytes, std::string name);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& path() const { return path_; }
  Magic magic() const { return magic_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute file offset of the data section
  uint64_t file_size() const;  // bytes, every shard of a split model together
  // 1, or a split model's shards; shard_path(0) is path().
  int shard_count() const { return 1 + static_cast<int>(shards_.size()); }
  const std::string& shard_path(int i) const { return i == 0 ? path_ : shards_.at(static_cast<size_t>(i - 1)).path_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: throw ModelLoadError naming the key when it is missing or
  // has an incompatible type (integers of any width are accepted when the
  // value fits). get_* with a default return it when the key is absent.
  std::string get_string(std::string_view key) const;
  std::string get_string(std::string_view key, std::string_view fallback) const;
  uint64_t get_u64(std::string_view key) const;
  uint64_t get_u64(std::string_view key, uint64_t fallback) const;
  int64_t get_i64(std::string_view key) const;
  int64_t get_i64(std::string_view key, int64_t fallback) const;
  double get_f64(std::string_view key) const;
  double get_f64(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;
  // Arrays: element type must match (integers widened to the requested type).
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // The tensors left out of tensors() for their dtype (kList only), in file order.
  const std::vector<UnsupportedTensor>& unsupported_tensors() const { return unsupported_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Throws ModelLoadError naming the tensor when it is absent.
  const TensorInfo& tensor(std::string_view name) const;
  // Throws unless the tensor exists with exactly this shape (GGUF ne order).
  const TensorInfo& tensor(std::string_view name, std::initializer_list<int64_t> expected_ne) const;
  // Zero-copy view of a tensor's bytes inside the mapping.
  std::span<const std::byte> tensor_data(const TensorInfo& info) const;

  // A ModelLoadError about this file.
  ModelLoadError error(std::string item, const std::string& problem) const;

 private:
  struct Storage;
  GgufFile();
  static GgufFile open_file(const std::filesystem::path& path, UnsupportedDtypes unsupported);
  void parse(UnsupportedDtypes unsupported);
  void open_shards(UnsupportedDtypes unsupported);  // gguf_split.cpp

  std::unique_ptr<Storage> storage_;  // the mapping or the in-memory copy
  const std::byte* base_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
  Magic magic_ = Magic::GGUF;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
  std::vector<UnsupportedTensor> unsupported_;
  std::vector<GgufFile> shards_;  // a split model's other shards, in order
};

}  // namespace tc::gguf
