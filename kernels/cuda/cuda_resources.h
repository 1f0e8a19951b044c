// RAII owners of CUDA objects (stream, event, cuBLAS handle; all move-only)
// and the allocators of device and pinned host memory as kernels::Buffer.
// Destructors never throw: a failing destroy/free (after a device fault) is
// ignored, since nothing useful can be done with it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/buffer.h"

namespace tc::kernels {

// Device memory of `bytes` (cudaMalloc, 256-byte aligned) on the current
// device, MemoryKind::Device, zero-filled (synchronously). Throws CudaError.
Buffer device_buffer(size_t bytes);
// Page-locked host memory (cudaHostAlloc, portable and mapped: kernels can
// read it over PCIe through the same pointer), MemoryKind::PinnedHost,
// zero-filled. Host code reads and writes it directly; copies from and to it
// run asynchronously. Throws CudaError.
Buffer pinned_buffer(size_t bytes);

// A non-blocking stream (no implicit sync with the legacy default stream).
class CudaStream {
 public:
  CudaStream();  // throws CudaError
  ~CudaStream();
  CudaStream(CudaStream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& o) noexcept {
    std::swap(stream_, o.stream_);
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const;  // throws CudaError (also for faults of earlier kernels)

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing (cheapest for ordering streams); timing = true
// makes one usable with elapsed_ms.
class CudaEvent {
 public:
  explicit CudaEvent(bool timing = false);  // throws CudaError
  ~CudaEvent();
  CudaEvent(CudaEvent&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& o) noexcept {
    std::swap(event_, o.event_);
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) const;
  // Makes `stream` wait (on the device) for the work recorded before this event.
  void wait_on(cudaStream_t stream) const;
  void synchronize() const;
  // Milliseconds between two recorded timing events.
  static float elapsed_ms(const CudaEvent& start, const CudaEvent& end);

 private:
  cudaEvent_t event_ = nullptr;
};

// A cuBLAS handle bound to one stream.
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream);  // throws CudaError
  ~CublasHandle();
  CublasHandle(CublasHandle&& o) noexcept
      : handle_(std::exchange(o.handle_, nullptr)), workspace_(std::move(o.workspace_)) {}
  CublasHandle& operator=(CublasHandle&& o) noexcept {
    std::swap(handle_, o.handle_);
    std::swap(workspace_, o.workspace_);
    return *this;
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
  // kCublasWorkspaceBytes of device memory, cuBLAS's workspace
  // (cublasSetWorkspace); freed after the destructor's cublasDestroy.
  Buffer workspace_;
};

// Scratch device memory for ops that need it (GEMM tiles, axpy partial
// sums), reused by every op on one stream. Grows on demand, never shrinks;
// after warm-up no op allocates.
class DeviceWorkspace {
 public:
  // At least `bytes` of device memory, valid until the next get(); contents
  // undefined. Growing first synchronizes `stream` (the only stream using
  // the workspace), so no queued kernel still reads the old memory.
  void* get(size_t bytes, cudaStream_t stream);
  size_t size() const { return buffer_.size(); }

 private:
  Buffer buffer_;
};

}  // namespace tc::kernels
