// create_backend: the one place that knows which backends this build has.
// CUDA builds compile kernels/cuda/ and define THERMOCLINE_WITH_CUDA.
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/device_info.h"

namespace tc::kernels {

std::unique_ptr<Backend> create_backend(DeviceKind device, const BackendOptions& options) {
  if (device == DeviceKind::Cpu) return std::make_unique<CpuBackend>(options.n_threads);
  const GpuInventory gpus = query_gpus();
  if (!gpus.cuda_built) throw BackendUnavailable("CUDA backend requested, but " + gpus.status);
  throw BackendUnavailable("the CUDA backend is not implemented yet (" + gpus.status + ")");
}

}  // namespace tc::kernels
