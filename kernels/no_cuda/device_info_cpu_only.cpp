// query_gpus() for builds without the CUDA backend (THERMOCLINE_CUDA=OFF or
// no nvcc at build time).
#include "kernels/device_info.h"

namespace tc::kernels {

GpuInventory query_gpus() {
  GpuInventory inv;
  inv.cuda_built = false;
  inv.status = "this build has no CUDA backend (built with THERMOCLINE_CUDA=OFF or without nvcc)";
  return inv;
}

}  // namespace tc::kernels
