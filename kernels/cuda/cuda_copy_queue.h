// The CUDA backend's events and copy queue (kernels/backend.h): a
// CudaEvent behind the Event interface, and a CopyQueue on a non-blocking
// stream of its own, so prefetch copies run on a copy engine while the
// backend's stream computes. Only kernels/cuda/ includes this.
#pragma once

#include "kernels/backend.h"
#include "kernels/cuda/cuda_resources.h"

namespace tc::kernels {

// An Event of the CUDA backend: without timing (the cheapest kind, for
// ordering) unless made by make_timing_event().
class CudaBackendEvent final : public Event {
 public:
  explicit CudaBackendEvent(bool timing = false) : event_(timing) {}
  const CudaEvent& get() const { return event_; }

 private:
  CudaEvent event_;
};

// The CudaBackendEvent behind `event`; TC_CHECK fails for an event made by
// another backend.
const CudaEvent& cuda_event(const Event& event);

class CudaCopyQueue final : public CopyQueue {
 public:
  // On device `device_index` (made current on every call: the queue's
  // thread is not the backend's). Throws CudaError.
  explicit CudaCopyQueue(int device_index);
  // Waits for the queue's copies (errors ignored: nothing to do with them then).
  ~CudaCopyQueue() override;

  void copy_to_device(void* dst, const void* src, size_t bytes) override;
  void record_event(Event& event) override;
  void wait_event(const Event& event) override;
  void synchronize() override;

 private:
  void activate() const;

  int device_index_;
  CudaStream stream_;
};

}  // namespace tc::kernels
