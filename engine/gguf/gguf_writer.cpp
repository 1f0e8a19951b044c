// GgufWriter: serialises metadata and tensor infos, then streams tensor data
// produced by the fillers through a large write buffer into `path.tmp`, which
// is renamed over `path` once complete.
#include "engine/gguf/gguf_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace tc::gguf {
namespace {

constexpr uint32_t kVersion = 3;
// Writes are gathered into chunks of this size; larger tensors bypass it.
constexpr size_t kWriteChunk = 8u << 20;

uint64_t align_up(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

// Nesting depth: 0 for a scalar, 1 for an array of scalars, ...
int depth(const Value& v) {
  const auto* a = v.as_array();
  if (a == nullptr) return 0;
  int d = 0;
  for (const auto& e : *a) d = std::max(d, depth(e));
  return d + 1;
}

template <typename T>
void put(std::string& out, T v) {
  static_assert(std::endian::native == std::endian::little);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

// The value's bytes after its type id (arrays: element type, count, items).
void put_payload(std::string& out, const Value& value) {
  std::visit(
      [&out, &value](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(out, v ? 1 : 0);
        } else if constexpr (std::is_arithmetic_v<T>) {
          put<T>(out, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, v);
        } else {
          put<uint32_t>(out, static_cast<uint32_t>(value.array_type()));
          put<uint64_t>(out, v.size());
          for (const auto& e : v) put_payload(out, e);
        }
      },
      value.storage());
}

std::runtime_error io_error(const std::filesystem::path& path, const std::string& what) {
  return std::runtime_error("cannot write " + path.string() + ": " + what + ": " +
                            std::strerror(errno));
}

// A file descriptor with a write buffer; closes the descriptor on
// destruction. Large writes go straight to the file.
class BufferedFile {
 public:
  BufferedFile(const std::filesystem::path& path, uint64_t expected_size) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error(path_, "open");
    buffer_.reserve(static_cast<size_t>(std::min<uint64_t>(kWriteChunk, expected_size)));
  }
  BufferedFile(const BufferedFile&) = delete;
  BufferedFile& operator=(const BufferedFile&) = delete;
  ~BufferedFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  void write(const void* data, size_t n) {
    const auto* p = static_cast<const char*>(data);
    if (buffer_.size() + n <= kWriteChunk) {
      buffer_.insert(buffer_.end(), p, p + n);
      return;
    }
    flush();
    if (n >= kWriteChunk) {
      write_all(p, n);
    } else {
      buffer_.insert(buffer_.end(), p, p + n);
    }
  }

  void write_zeros(size_t n) {
    static constexpr char kZeros[256] = {};
    while (n > 0) {
      const size_t k = std::min(n, sizeof kZeros);
      write(kZeros, k);
      n -= k;
    }
  }

  void flush() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

  // Flushes, syncs and closes; throws on failure.
  void close() {
    flush();
    if (::fsync(fd_) != 0) throw io_error(path_, "fsync");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw io_error(path_, "close");
  }

 private:
  void write_all(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t k = ::write(fd_, p, n);
      if (k < 0) {
        if (errno == EINTR) continue;
        throw io_error(path_, "write");
      }
      p += k;
      n -= static_cast<size_t>(k);
    }
  }

  std::filesystem::path path_;
  int fd_ = -1;
  std::vector<char> buffer_;
};

}  // namespace

GgufWriter::GgufWriter(Magic magic, uint32_t alignment) : magic_(magic), alignment_(alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    throw std::invalid_argument("GgufWriter: alignment " + std::to_string(alignment) +
                                " is not a non-zero power of two");
  }
}

void GgufWriter::set(const std::string& key, Value value) {
  if (depth(value) > kMaxArrayDepth) {
    throw std::invalid_argument("GgufWriter: key '" + key + "': arrays nested deeper than " +
                                std::to_string(kMaxArrayDepth) + " levels");
  }
  if (key == "general.alignment") {
    uint64_t a = 0;
    if (!value.is_integer() || !value.to_u64(a) || a != alignment_) {
      throw std::invalid_argument("GgufWriter: general.alignment must be the writer's alignment " +
                                  std::to_string(alignment_) + ", got " +
                                  value.to_display_string());
    }
    value = Value(static_cast<uint32_t>(a));
  }
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

namespace {

// Validates a tensor's dtype and shape; returns its data size in bytes.
uint64_t tensor_bytes(const std::string& name, kernels::DType dtype,
                      const std::vector<int64_t>& ne) {
  const auto bad = [&name](const std::string& what) {
    return std::invalid_argument("GgufWriter: tensor '" + name + "': " + what);
  };
  if (ne.empty() || ne.size() > static_cast<size_t>(kMaxDims)) {
    throw bad(std::to_string(ne.size()) + " dimensions; expected 1 to " +
              std::to_string(kMaxDims));
  }
  if (!kernels::dtype_from_id(static_cast<uint32_t>(dtype))) throw bad("unsupported dtype");
  int64_t n_elements = 1;
  for (int64_t d : ne) {
    if (d < 0) throw bad("negative dimension");
    if (__builtin_mul_overflow(n_elements, d, &n_elements)) throw bad("element count overflows");
  }
  const auto& traits = kernels::dtype_traits(dtype);
  if (ne[0] % traits.block_size != 0) {
    throw bad("row length " + std::to_string(ne[0]) + " is not a multiple of the " +
              std::string(traits.name) + " block size " + std::to_string(traits.block_size));
  }
  return static_cast<uint64_t>(n_elements / traits.block_size) *
         static_cast<uint64_t>(traits.block_bytes);
}

}  // namespace

void GgufWriter::add_tensor(const std::string& name, kernels::DType dtype,
                            std::vector<int64_t> ne, TensorFiller fill) {
  for (const auto& t : tensors_) {
    if (t.info.name == name) {
      throw std::invalid_argument("GgufWriter: tensor '" + name + "': duplicate tensor name");
    }
  }
  if (!fill) throw std::invalid_argument("GgufWriter: tensor '" + name + "': no filler");
  PendingTensor t;
  t.info.n_bytes = tensor_bytes(name, dtype, ne);
  t.info.name = name;
  t.info.dtype = dtype;
  t.info.ne = std::move(ne);
  t.info.offset = next_offset_;
  t.fill = std::move(fill);
  next_offset_ += align_up(t.info.n_bytes, alignment_);
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(const std::string& name, kernels::DType dtype,
                            std::vector<int64_t> ne, std::vector<std::byte> data) {
  const uint64_t expected = tensor_bytes(name, dtype, ne);
  if (data.size() != expected) {
    throw std::invalid_argument("GgufWriter: tensor '" + name + "': " +
                                std::to_string(data.size()) + " bytes of data, expected " +
                                std::to_string(expected));
  }
  auto shared = std::make_shared<const std::vector<std::byte>>(std::move(data));
  add_tensor(name, dtype, std::move(ne), [shared](std::span<std::byte> out) {
    if (!out.empty()) std::memcpy(out.data(), shared->data(), out.size());
  });
}

void GgufWriter::write(const std::filesystem::path& path, const Progress& progress) const {
  std::string header;
  put<uint32_t>(header, 0);
  std::memcpy(header.data(), magic_name(magic_).data(), 4);
  put<uint32_t>(header, kVersion);
  const bool add_alignment =
      alignment_ != kDefaultAlignment &&
      std::none_of(metadata_.begin(), metadata_.end(),
                   [](const auto& kv) { return kv.first == "general.alignment"; });
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, metadata_.size() + (add_alignment ? 1 : 0));
  if (add_alignment) {
    put_string(header, "general.alignment");
    put<uint32_t>(header, static_cast<uint32_t>(ValueType::UINT32));
    put<uint32_t>(header, alignment_);
  }
  for (const auto& [key, value] : metadata_) {
    put_string(header, key);
    put<uint32_t>(header, static_cast<uint32_t>(value.type()));
    put_payload(header, value);
  }
  for (const auto& t : tensors_) {
    put_string(header, t.info.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.info.ne.size()));
    for (int64_t d : t.info.ne) put<int64_t>(header, d);
    put<uint32_t>(header, static_cast<uint32_t>(t.info.dtype));
    put<uint64_t>(header, t.info.offset);
  }
  header.resize(align_up(header.size(), alignment_), '\0');
  const uint64_t total = header.size() + next_offset_;

  auto tmp = path;
  tmp += ".tmp";
  try {
    BufferedFile out(tmp, total);
    out.write(header.data(), header.size());
    uint64_t done = header.size();
    if (progress) progress(done, total);
    std::vector<std::byte> scratch;
    for (const auto& t : tensors_) {
      scratch.resize(static_cast<size_t>(t.info.n_bytes));
      t.fill(std::span<std::byte>(scratch));
      out.write(scratch.data(), scratch.size());
      const uint64_t padded = align_up(t.info.n_bytes, alignment_);
      out.write_zeros(static_cast<size_t>(padded - t.info.n_bytes));
      done += padded;
      if (progress) progress(done, total);
    }
    out.close();
    std::filesystem::rename(tmp, path);
  } catch (const std::filesystem::filesystem_error& e) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("cannot write " + path.string() + ": " + e.what());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace tc::gguf
