// GgufFile: opening (mmap or in-memory copy), typed metadata getters and
// tensor lookups. The parser itself is in gguf_parse.cpp.
#include "engine/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/gguf/gguf_split.h"
#include "kernels/check.h"

namespace tc::gguf {

// Owns the bytes the parser and the tensor spans point into: either a
// read-only private mapping of the file or a heap copy.
struct GgufFile::Storage {
  void* map = nullptr;
  size_t map_size = 0;
  std::vector<std::byte> copy;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (map != nullptr) ::munmap(map, map_size);
  }
};

std::string_view magic_name(Magic magic) {
  return magic == Magic::PWRI ? "PWRI" : "GGUF";
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

int64_t TensorInfo::n_rows() const {
  int64_t n = 1;
  for (size_t i = 1; i < ne.size(); ++i) n *= ne[i];
  return n;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

GgufFile::GgufFile() = default;
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::filesystem::path& path, UnsupportedDtypes unsupported) {
  GgufFile f = open_file(path, unsupported);
  f.open_shards(unsupported);
  return f;
}

GgufFile GgufFile::open_file(const std::filesystem::path& path, UnsupportedDtypes unsupported) {
  GgufFile f;
  f.path_ = path.string();
  const auto os_error = [&f](const std::string& what) {
    return ModelLoadError(f.path_, "", what + ": " + std::strerror(errno));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw os_error("cannot open the file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const auto err = os_error("cannot stat the file");
    ::close(fd);
    throw err;
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw ModelLoadError(f.path_, "", "is a directory; expected a GGUF file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ModelLoadError(f.path_, "", "is not a regular file; expected a GGUF file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    throw ModelLoadError(f.path_, "",
                         "file is empty (0 bytes); expected a GGUF file starting with 'GGUF'");
  }
  f.storage_ = std::make_unique<Storage>();
  const auto size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) {
    const auto err = os_error("cannot map the file (" + std::to_string(size) + " bytes)");
    ::close(fd);
    throw err;
  }
  ::close(fd);
  // Ask for 2 MiB pages: where the page cache reads the file in 2 MiB
  // folios (after this hint, on kernels with large folios for the file
  // system) the weights are mapped by PMD entries, and the gathered rows of
  // the sparse FFN, one jump per row, stop paying a page walk per row. A
  // hint only: an error changes nothing.
  ::madvise(map, size, MADV_HUGEPAGE);
  f.storage_->map = map;
  f.storage_->map_size = size;
  f.base_ = static_cast<const std::byte*>(map);
  f.size_ = size;
  f.parse(unsupported);
  return f;
}

GgufFile GgufFile::from_bytes(std::span<const std::byte> bytes, std::string name) {
  GgufFile f;
  f.path_ = std::move(name);
  f.storage_ = std::make_unique<Storage>();
  f.storage_->copy.assign(bytes.begin(), bytes.end());
  f.base_ = f.storage_->copy.data();
  f.size_ = f.storage_->copy.size();
  f.parse(UnsupportedDtypes::kReject);
  if (f.get_u64(kSplitCount, 1) > 1) {
    throw f.error(std::string(kSplitCount), "is a shard of a split model, which is opened from its files");
  }
  return f;
}

uint64_t GgufFile::file_size() const {
  uint64_t total = size_;
  for (const GgufFile& s : shards_) total += s.size_;
  return total;
}

ModelLoadError GgufFile::error(std::string item, const std::string& problem) const {
  return ModelLoadError(path_, std::move(item), problem);
}

const Value* GgufFile::find(std::string_view key) const {
  const auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

namespace {

bool is_integer_type(ValueType t) {
  return t <= ValueType::INT32 || t == ValueType::UINT64 || t == ValueType::INT64;
}

bool is_float_type(ValueType t) { return t == ValueType::FLOAT32 || t == ValueType::FLOAT64; }

// "u32", or "arr[str]" for arrays.
std::string type_string(const Value& v) {
  std::string s(value_type_name(v.type()));
  if (v.is_array()) s += "[" + std::string(value_type_name(v.array_type())) + "]";
  return s;
}

}  // namespace

// Looks up `key` for a getter; throws naming the key and the expected type
// when it is absent.
#define TC_GGUF_REQUIRE(key, expected)                                                     \
  const Value* v = find(key);                                                              \
  if (v == nullptr) {                                                                      \
    throw ModelLoadError::for_key(path_, std::string(key),                                 \
                                  std::string("missing metadata key; expected ") + expected); \
  }

std::string GgufFile::get_string(std::string_view key) const {
  TC_GGUF_REQUIRE(key, "a string");
  if (const auto* s = v->as_string()) return *s;
  throw ModelLoadError::for_key(path_, std::string(key),
                                "has type " + type_string(*v) + ", expected a string");
}

std::string GgufFile::get_string(std::string_view key, std::string_view fallback) const {
  return has(key) ? get_string(key) : std::string(fallback);
}

uint64_t GgufFile::get_u64(std::string_view key) const {
  TC_GGUF_REQUIRE(key, "an unsigned integer");
  uint64_t out = 0;
  if (v->to_u64(out)) return out;
  throw ModelLoadError::for_key(
      path_, std::string(key),
      v->is_integer() ? "value " + v->to_display_string() + " is negative; expected >= 0"
                      : "has type " + type_string(*v) + ", expected an unsigned integer");
}

uint64_t GgufFile::get_u64(std::string_view key, uint64_t fallback) const {
  return has(key) ? get_u64(key) : fallback;
}

int64_t GgufFile::get_i64(std::string_view key) const {
  TC_GGUF_REQUIRE(key, "an integer");
  int64_t out = 0;
  if (v->to_i64(out)) return out;
  throw ModelLoadError::for_key(
      path_, std::string(key),
      v->is_integer() ? "value " + v->to_display_string() + " does not fit i64"
                      : "has type " + type_string(*v) + ", expected an integer");
}

int64_t GgufFile::get_i64(std::string_view key, int64_t fallback) const {
  return has(key) ? get_i64(key) : fallback;
}

double GgufFile::get_f64(std::string_view key) const {
  TC_GGUF_REQUIRE(key, "a number");
  double out = 0;
  if (v->to_f64(out)) return out;
  throw ModelLoadError::for_key(path_, std::string(key),
                                "has type " + type_string(*v) + ", expected a number");
}

double GgufFile::get_f64(std::string_view key, double fallback) const {
  return has(key) ? get_f64(key) : fallback;
}

bool GgufFile::get_bool(std::string_view key, bool fallback) const {
  const Value* v = find(key);
  if (v == nullptr) return fallback;
  if (const bool* b = v->as_bool()) return *b;
  throw ModelLoadError::for_key(path_, std::string(key),
                                "has type " + type_string(*v) + ", expected bool");
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  TC_GGUF_REQUIRE(key, "an array of strings");
  const auto* a = v->as_array();
  if (a == nullptr || v->array_type() != ValueType::STRING) {
    throw ModelLoadError::for_key(path_, std::string(key),
                                  "has type " + type_string(*v) + ", expected an array of str");
  }
  std::vector<std::string> out;
  out.reserve(a->size());
  for (const auto& e : *a) out.push_back(*e.as_string());
  return out;
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  TC_GGUF_REQUIRE(key, "an array of f32");
  const auto* a = v->as_array();
  if (a == nullptr || !(is_integer_type(v->array_type()) || is_float_type(v->array_type()))) {
    throw ModelLoadError::for_key(path_, std::string(key),
                                  "has type " + type_string(*v) + ", expected an array of f32");
  }
  std::vector<float> out;
  out.reserve(a->size());
  for (const auto& e : *a) {
    double d = 0;
    e.to_f64(d);
    out.push_back(static_cast<float>(d));
  }
  return out;
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  TC_GGUF_REQUIRE(key, "an array of i32");
  const auto* a = v->as_array();
  if (a == nullptr || !is_integer_type(v->array_type())) {
    throw ModelLoadError::for_key(path_, std::string(key),
                                  "has type " + type_string(*v) + ", expected an array of i32");
  }
  std::vector<int32_t> out;
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    int64_t x = 0;
    if (!(*a)[i].to_i64(x) || x < std::numeric_limits<int32_t>::min() ||
        x > std::numeric_limits<int32_t>::max()) {
      throw ModelLoadError::for_key(path_, std::string(key),
                                    "element " + std::to_string(i) + " = " +
                                        (*a)[i].to_display_string() + " does not fit i32");
    }
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

#undef TC_GGUF_REQUIRE

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  if (const TensorInfo* t = find_tensor(name)) return *t;
  throw ModelLoadError::for_tensor(path_, std::string(name), "tensor not found in the file");
}

const TensorInfo& GgufFile::tensor(std::string_view name,
                                   std::initializer_list<int64_t> expected_ne) const {
  const TensorInfo& t = tensor(name);
  if (!std::equal(t.ne.begin(), t.ne.end(), expected_ne.begin(), expected_ne.end())) {
    TensorInfo expected;
    expected.ne.assign(expected_ne.begin(), expected_ne.end());
    throw ModelLoadError::for_tensor(path_, std::string(name),
                                     "has shape " + t.shape_string() + ", expected " +
                                         expected.shape_string());
  }
  return t;
}

std::span<const std::byte> GgufFile::tensor_data(const TensorInfo& info) const {
  TC_CHECK(info.shard <= shards_.size(), "tensor_data: the TensorInfo does not belong to this file");
  const GgufFile& f = info.shard == 0 ? *this : shards_[info.shard - 1];
  TC_CHECK(f.data_offset_ <= f.size_ && info.offset <= f.size_ - f.data_offset_ &&
               info.n_bytes <= f.size_ - f.data_offset_ - info.offset,
           "tensor_data: the TensorInfo does not belong to this file");
  return {f.base_ + f.data_offset_ + info.offset, static_cast<size_t>(info.n_bytes)};
}

}  // namespace tc::gguf
