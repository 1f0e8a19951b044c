// What GPUs this binary can use. Defined by kernels/cuda_plugin_loader.cpp:
// the CUDA plugin asks the driver; without a loadable plugin the status says
// why (the file tried and dlerror(), or where it was looked for). Thread-safe.
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
  bool cuda_built = false;      // the CUDA plugin is loaded
  // "2 CUDA device(s)", "no CUDA device: <driver message>",
  // "CUDA plugin <file> could not be loaded: <dlerror>", ...
  std::string status;
  std::vector<GpuDeviceInfo> devices;
};

// Never throws: a missing driver or device is reported in `status`.
GpuInventory query_gpus();

}  // namespace tc::kernels
