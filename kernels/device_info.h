// What GPUs this build can use. The CUDA build asks the driver; the CPU-only
// build reports that CUDA was not compiled in. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tc::kernels {

struct GpuDeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

struct GpuInventory {
  bool cuda_built = false;      // this binary contains the CUDA backend
  std::string status;           // "2 devices", "no CUDA device: <driver message>", ...
  std::vector<GpuDeviceInfo> devices;
};

// Never throws: a missing driver or device is reported in `status`.
GpuInventory query_gpus();

}  // namespace tc::kernels
