// CudaCopyQueue: cudaMemcpyAsync on the queue's own stream, events recorded
// and waited on there.
#include "kernels/cuda/cuda_copy_queue.h"

#include "kernels/check.h"
#include "kernels/cuda/cuda_check.h"

namespace tc::kernels {

const CudaEvent& cuda_event(const Event& event) {
  const auto* cuda = dynamic_cast<const CudaBackendEvent*>(&event);
  TC_CHECK(cuda != nullptr, "CUDA backend: an event made by another backend");
  return cuda->get();
}

CudaCopyQueue::CudaCopyQueue(int device_index) : device_index_(device_index), stream_((activate(), CudaStream())) {}

CudaCopyQueue::~CudaCopyQueue() {
  if (cudaSetDevice(device_index_) == cudaSuccess) cudaStreamSynchronize(stream_.get());
}

void CudaCopyQueue::activate() const { TC_CUDA_CHECK(cudaSetDevice(device_index_)); }

void CudaCopyQueue::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  activate();
  TC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get()));
}

void CudaCopyQueue::record_event(Event& event) {
  activate();
  cuda_event(event).record(stream_.get());
}

void CudaCopyQueue::wait_event(const Event& event) {
  activate();
  cuda_event(event).wait_on(stream_.get());
}

void CudaCopyQueue::synchronize() {
  activate();
  stream_.synchronize();
}

}  // namespace tc::kernels
