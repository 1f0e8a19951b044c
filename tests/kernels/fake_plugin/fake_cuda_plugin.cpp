// A stand-in CUDA plugin for the loader's tests, linked like the real one
// (cmake/cuda_plugin.cmake): one fake device, and make_cuda_backend throws a
// CudaError, so a test sees it cross the dlopen boundary. Built twice:
// with this binary's ABI version and with a wrong one (tests/CMakeLists.txt).
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cuda_error.h"
#include "kernels/cuda_plugin_abi.h"
#include "tests/kernels/fake_plugin/fake_cuda_plugin.h"

namespace {

using tc::kernels::Backend;
using tc::kernels::BackendOptions;
using tc::kernels::CudaPluginApi;
using tc::kernels::GpuInventory;

constexpr uint32_t kFakeAbiVersion = TC_FAKE_PLUGIN_ABI_VERSION;

GpuInventory fake_query_gpus() {
  GpuInventory inv;
  inv.cuda_built = true;
  inv.status = "1 CUDA device(s) (fake plugin)";
  tc::kernels::GpuDeviceInfo device;
  device.name = tc::test::kFakeGpuName;
  device.compute_major = 9;
  device.total_bytes = device.free_bytes = uint64_t{8} << 30;
  inv.devices.push_back(device);
  return inv;
}

std::unique_ptr<Backend> fake_make_cuda_backend(const BackendOptions& options) {
  throw tc::kernels::CudaError("CUDA error: the fake plugin makes no backend (device " +
                                   std::to_string(options.device_index) + ")",
                               tc::test::kFakeCudaErrorCode);
}

constexpr CudaPluginApi kApi{kFakeAbiVersion, &fake_query_gpus, &fake_make_cuda_backend};

}  // namespace

extern "C" __attribute__((visibility("default"))) const CudaPluginApi* thermocline_cuda_plugin_entry() {
  return &kApi;
}
