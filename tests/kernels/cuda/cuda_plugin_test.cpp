// The real CUDA plugin (libthermocline_cuda.so) through the loader, as the
// binary uses it: in a CUDA build it loads and queries the driver; without
// a GPU, make_cuda_backend's BackendUnavailable is thrown inside the plugin
// and caught here by type. In a CPU-only build query_gpus() says why there
// is no CUDA backend.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "kernels/backend.h"
#include "kernels/cuda_backend_entry.h"
#include "kernels/cuda_plugin_loader.h"
#include "kernels/device_info.h"
#include "tests/test_util.h"

using namespace tc::kernels;

TEST_CASE("cuda plugin: the build's plugin loads, or a CPU-only build says it has none", "[cuda][plugin]") {
  const GpuInventory gpus = query_gpus();
  INFO(gpus.status);
  const CudaPluginLoad& plugin = cuda_plugin();
  if (tc::test::built_cuda_plugin().empty()) {
    CHECK(plugin.api == nullptr);
    CHECK_FALSE(gpus.cuda_built);
    if (std::getenv("THERMOCLINE_CUDA_PLUGIN") == nullptr) {
      CHECK_THAT(gpus.status, Catch::Contains("this build has no CUDA backend"));
    }
    return;
  }
  // A CUDA build's tests must reach the plugin (test_main.cpp, or
  // THERMOCLINE_CUDA_PLUGIN on the GPU machine): else every [cuda] case
  // would skip unnoticed.
  INFO(plugin.error);
  REQUIRE(plugin.api != nullptr);
  CHECK(plugin.api->abi_version == kCudaPluginAbiVersion);
  CHECK(gpus.cuda_built);
  if (gpus.devices.empty()) {
    CHECK_THAT(gpus.status, Catch::Contains("no CUDA device"));
    // Past create_backend's own check: the plugin's CudaBackend refuses.
    CHECK_THROWS_AS(make_cuda_backend({}), BackendUnavailable);
    try {
      make_cuda_backend({});
    } catch (const BackendUnavailable& e) {
      CHECK_THAT(e.what(), Catch::Contains("no CUDA device"));
    }
    return;
  }
  const auto backend = make_cuda_backend({});
  CHECK(backend->device() == DeviceKind::Cuda);
  CHECK(backend->name().rfind("cuda:0 (", 0) == 0);
}
