// create_backend(DeviceSetting): the device option -> create_backend(kind, options).
#include "kernels/backend_from_setting.h"

namespace tc::kernels {

std::unique_ptr<Backend> create_backend(const config::DeviceSetting& device, int n_threads) {
  return create_backend(device.cuda ? DeviceKind::Cuda : DeviceKind::Cpu,
                        {.n_threads = n_threads, .device_index = device.index});
}

}  // namespace tc::kernels
