// create_backend: the one place that picks between the backends. Whether
// the CUDA backend can be had is known through query_gpus() and
// make_cuda_backend(), which kernels/cuda_plugin_loader.cpp defines.
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda_backend_entry.h"
#include "kernels/device_info.h"

namespace tc::kernels {

std::unique_ptr<Backend> create_backend(DeviceKind device, const BackendOptions& options) {
  if (device == DeviceKind::Cpu) return std::make_unique<CpuBackend>(options.n_threads);
  const GpuInventory gpus = query_gpus();
  if (!gpus.cuda_built) throw BackendUnavailable("CUDA backend requested, but " + gpus.status);
  if (gpus.devices.empty()) throw BackendUnavailable("CUDA backend requested, but " + gpus.status);
  if (options.device_index < 0 || options.device_index >= static_cast<int>(gpus.devices.size())) {
    throw BackendUnavailable("CUDA backend requested on device " + std::to_string(options.device_index) +
                             ", but this machine has " + gpus.status);
  }
  return make_cuda_backend(options);
}

}  // namespace tc::kernels
