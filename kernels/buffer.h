// Buffer: owned memory of one memory kind, move-only. Host buffers are
// 64-byte aligned (cache lines, AVX-512 loads); from 2 MiB on they are 2 MiB
// aligned and advised into transparent huge pages before their first touch
// (KV caches and repacked weights: reads that jump between rows otherwise
// miss the TLB on every row). Device and pinned buffers come from a backend
// (CUDA builds).
#pragma once

#include <cstddef>
#include <functional>

#include "kernels/tensor.h"

namespace tc::kernels {

class Buffer {
 public:
  Buffer() = default;
  // Takes ownership of `data`; `release` frees it.
  Buffer(void* data, size_t bytes, MemoryKind kind, std::function<void(void*)> release)
      : data_(data), bytes_(bytes), kind_(kind), release_(std::move(release)) {}
  // Zero-filled host memory, aligned as above. Throws std::bad_alloc.
  static Buffer host(size_t bytes);
  // The same, not zero-filled: for a caller that writes every byte (its
  // writes are the first touch, so the huge pages land where it writes).
  static Buffer host_uninitialized(size_t bytes);

  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (data_ && release_) release_(data_);
  }

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(kind_, o.kind_);
    std::swap(release_, o.release_);
  }
  void* data_ = nullptr;
  size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::Host;
  std::function<void(void*)> release_;
};

}  // namespace tc::kernels
