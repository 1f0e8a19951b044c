// Device/pinned allocations and the stream, event and cuBLAS handle owners.
#include "kernels/cuda/cuda_resources.h"

#include <algorithm>
#include <cstring>

#include "kernels/cuda/cuda_check.h"
#include "kernels/device_scratch.h"

namespace tc::kernels {

Buffer device_buffer(size_t bytes) {
  void* p = nullptr;
  // cudaMalloc(0) returns nullptr; one byte keeps data() non-null for empty buffers.
  TC_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  Buffer buffer(p, bytes, MemoryKind::Device, [](void* q) { cudaFree(q); });
  // Zero-filled like Buffer::host, so an op that reads before the first
  // write sees zeros, not leftovers of a previous allocation. cudaMemset runs
  // on the legacy default stream, which the backends' non-blocking streams do
  // not wait for: wait here, so the zeros land before any later op.
  TC_CUDA_CHECK(cudaMemset(p, 0, bytes));
  TC_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  return buffer;
}

Buffer pinned_buffer(size_t bytes) {
  void* p = nullptr;
  TC_CUDA_CHECK(cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable | cudaHostAllocMapped));
  Buffer buffer(p, bytes, MemoryKind::PinnedHost, [](void* q) { cudaFreeHost(q); });
  std::memset(p, 0, bytes);
  return buffer;
}

CudaStream::CudaStream() { TC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

CudaStream::~CudaStream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaStream::synchronize() const { TC_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

CudaEvent::CudaEvent(bool timing) {
  TC_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

void CudaEvent::record(cudaStream_t stream) const { TC_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void CudaEvent::wait_on(cudaStream_t stream) const { TC_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }

void CudaEvent::synchronize() const { TC_CUDA_CHECK(cudaEventSynchronize(event_)); }

float CudaEvent::elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
  float ms = 0.0f;
  TC_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

CublasHandle::CublasHandle(cudaStream_t stream) {
  TC_CUBLAS_CHECK(cublasCreate(&handle_));
  try {
    TC_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    // After cublasSetStream, which resets the workspace to cuBLAS's own pool.
    // With ours set, cuBLAS allocates no workspace itself: the placement
    // counts this buffer (kernels/device_scratch.h).
    workspace_ = device_buffer(kCublasWorkspaceBytes);
    TC_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data(), workspace_.size()));
    // No TF32 for f32 GEMMs (CUBLAS_DEFAULT_MATH): F32 weights get f32 products.
    TC_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

CublasHandle::~CublasHandle() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

void* DeviceWorkspace::get(size_t bytes, cudaStream_t stream) {
  if (bytes > buffer_.size() || buffer_.data() == nullptr) {
    TC_CUDA_CHECK(cudaStreamSynchronize(stream));
    buffer_ = Buffer();  // free the old memory before asking for more
    // Exactly the request: the VRAM accounting counts the largest request
    // (kernels/device_scratch.h), and the set-up reserves it up front
    // (Backend::reserve_scratch), so serving steps do not grow it.
    buffer_ = device_buffer(std::max<size_t>(bytes, 1));
  }
  return buffer_.data();
}

}  // namespace tc::kernels
