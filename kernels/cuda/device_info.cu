// query_cuda_devices(): the plugin's query_gpus(), asking the CUDA runtime
// for devices and their memory. Never throws; a machine without a driver or
// GPU reports why.
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
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    GpuDeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    d.total_bytes = prop.totalGlobalMem;
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      d.free_bytes = free_b;
    }
    inv.devices.push_back(d);
  }
  inv.status = std::to_string(inv.devices.size()) + " CUDA device(s)";
  return inv;
}

}  // namespace tc::kernels
