// query_cuda_devices(): the plugin's query_gpus(), asking the CUDA runtime
// for devices and their memory. Never throws; a machine without a driver or
// GPU reports why. Leaves the thread as it found it: the current device
// restored, and no failed call left behind as the runtime's last error
// (which the next kernel launch check, cudaGetLastError, would report).
#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/cuda_devices.h"

namespace tc::kernels {

GpuInventory query_cuda_devices() {
  GpuInventory inv;
  inv.cuda_built = true;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    inv.status = std::string("no CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return inv;
  }
  int current = 0;
  const bool has_current = cudaGetDevice(&current) == cudaSuccess;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    GpuDeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    d.total_bytes = prop.totalGlobalMem;
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      d.free_bytes = free_b;
    } else {
      cudaGetLastError();  // a full or exclusive-mode GPU: its free bytes stay 0
    }
    inv.devices.push_back(d);
  }
  if (has_current) cudaSetDevice(current);
  cudaGetLastError();
  inv.status = std::to_string(inv.devices.size()) + " CUDA device(s)";
  return inv;
}

}  // namespace tc::kernels
