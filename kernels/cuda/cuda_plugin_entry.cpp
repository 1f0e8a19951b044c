// The CUDA plugin's one exported symbol: the table the main binary's loader
// (kernels/cuda_plugin_loader.cpp) looks up after dlopen().
#include <memory>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_devices.h"
#include "kernels/cuda_plugin_abi.h"

namespace tc::kernels {
namespace {

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  return std::make_unique<CudaBackend>(options.device_index);
}

constexpr CudaPluginApi kApi{kCudaPluginAbiVersion, &query_cuda_devices, &make_backend};

}  // namespace
}  // namespace tc::kernels

extern "C" __attribute__((visibility("default"))) const tc::kernels::CudaPluginApi* thermocline_cuda_plugin_entry() {
  return &tc::kernels::kApi;
}
