// The VRAM budget: the default from a GPU inventory (the chosen device's free
// memory minus the margin), its absence without a GPU, and a given budget
// taking precedence. (The --vram-budget syntax: tests/config/byte_size_test.cpp.)
#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>

#include "engine/sparse/vram_budget.h"

using tc::sparse::default_vram_budget;
using tc::sparse::resolve_vram_budget;

TEST_CASE("placement: the default budget is the GPU's free memory minus the margin, and needs a GPU",
          "[sparse][placement]") {
  tc::kernels::GpuInventory none;
  none.cuda_built = false;
  none.status = "this build has no CUDA backend";
  CHECK_THROWS_WITH(default_vram_budget(none),
                    Catch::Contains("this build has no CUDA backend") && Catch::Contains("--vram-budget"));
  tc::kernels::GpuInventory no_device;
  no_device.cuda_built = true;
  no_device.status = "no CUDA device: driver says no";
  CHECK_THROWS_WITH(default_vram_budget(no_device), Catch::Contains("driver says no"));

  tc::kernels::GpuInventory gpus;
  gpus.cuda_built = true;
  gpus.devices.push_back({.index = 0, .name = "Big", .total_bytes = 80ull << 30, .free_bytes = 70ull << 30});
  gpus.devices.push_back({.index = 1, .name = "Other", .total_bytes = 8ull << 30, .free_bytes = 8ull << 30});
  const auto big = default_vram_budget(gpus);
  CHECK(big.bytes == (70ull << 30) - (80ull << 30) / 20);  // 5% of 80 GiB > 512 MiB
  CHECK_THAT(big.source, Catch::Contains("GPU 0 (Big)") && Catch::Contains("margin"));

  gpus.devices[0] = {.index = 0, .name = "Small", .total_bytes = 4ull << 30, .free_bytes = 3ull << 30};
  CHECK(default_vram_budget(gpus).bytes == (3ull << 30) - (512ull << 20));  // 5% of 4 GiB < 512 MiB
  gpus.devices[0].free_bytes = 512ull << 20;
  CHECK_THROWS_WITH(default_vram_budget(gpus), Catch::Contains("margin") && Catch::Contains("--vram-budget"));
  // Another device than GPU 0 is measured on its own.
  gpus.devices[0].free_bytes = 3ull << 30;
  const auto other = default_vram_budget(gpus, 1);
  CHECK(other.bytes == (8ull << 30) - (512ull << 20));
  CHECK_THAT(other.source, Catch::Contains("GPU 1 (Other)"));
  CHECK_THROWS_WITH(default_vram_budget(gpus, 2), Catch::Contains("no GPU 2") && Catch::Contains("--vram-budget"));
}

TEST_CASE("placement: a given budget is used as given, with its spelling as the source", "[sparse][placement]") {
  const auto given = resolve_vram_budget(uint64_t{12} << 30, "12GiB");
  CHECK(given.bytes == uint64_t{12} << 30);
  CHECK(given.source == "--vram-budget 12GiB");
  CHECK(resolve_vram_budget(uint64_t{1000}, "").source == "--vram-budget 1000");
  // None given: the default, which in a build without CUDA (or with no GPU) says to pass one.
  const auto gpus = tc::kernels::query_gpus();
  if (!gpus.cuda_built || gpus.devices.empty()) {
    CHECK_THROWS_WITH(resolve_vram_budget(std::nullopt, ""), Catch::Contains("--vram-budget"));
  } else {
    CHECK(resolve_vram_budget(std::nullopt, "").bytes == default_vram_budget(gpus).bytes);
  }
}
