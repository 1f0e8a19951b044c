// The CUDA backend's creation and memory: create_backend(Cuda) gives a CUDA
// backend or says why not; allocations are zero-filled and of the right
// kind; copies round-trip in stream order; upload packs padded rows; argmax
// picks what the CPU backend picks (ties, NaN, -inf); bad arguments are
// refused on the host.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/backend.h"
#include "kernels/check.h"
#include "kernels/cpu/quantize.h"
#include "kernels/device_info.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;
using tc::test::from_device;
using tc::test::to_device;

}  // namespace

TEST_CASE("cuda backend: create_backend gives a CUDA backend or says why not", "[cuda]") {
  const GpuInventory gpus = query_gpus();
  const auto& probe = tc::test::cuda_probe();
  if (probe.backend == nullptr) {
    WARN("no CUDA backend here: " << probe.reason);
    // The reason names what is missing: the CUDA build or a device.
    REQUIRE(probe.reason.find("CUDA") != std::string::npos);
    REQUIRE(probe.reason.find(gpus.status) != std::string::npos);
    CHECK((!gpus.cuda_built || gpus.devices.empty()));
    return;
  }
  CHECK(gpus.cuda_built);
  CHECK_FALSE(gpus.devices.empty());
  CHECK(probe.backend->device() == DeviceKind::Cuda);
  CHECK(probe.backend->name().rfind("cuda:0 (", 0) == 0);
  INFO(probe.backend->name());
  // A device index past the last one is refused with the count.
  BackendOptions options;
  options.device_index = static_cast<int>(gpus.devices.size());
  REQUIRE_THROWS_AS(create_backend(DeviceKind::Cuda, options), BackendUnavailable);
}

TEST_CASE("cuda backend: allocations are zero-filled device and pinned memory", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  Buffer device = cuda->allocate(4099);
  CHECK(device.kind() == MemoryKind::Device);
  CHECK(device.size() == 4099);
  const auto bytes = from_device<uint8_t>(*cuda, device.data(), 4099);
  CHECK(std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; }));

  Buffer pinned = cuda->allocate_host(1000);
  CHECK(pinned.kind() == MemoryKind::PinnedHost);
  const auto* p = pinned.as<uint8_t>();
  CHECK(std::all_of(p, p + 1000, [](uint8_t b) { return b == 0; }));
}

TEST_CASE("cuda backend: copies host -> device -> device -> pinned host in stream order", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const auto values = tc::test::random_floats(10007, 3);
  const size_t bytes = values.size() * sizeof(float);
  Buffer a = cuda->allocate(bytes);
  Buffer b = cuda->allocate(bytes);
  Buffer staging = cuda->allocate_host(bytes);
  // No synchronize between the copies: stream order alone must carry the data.
  cuda->copy_to_device(a.data(), values.data(), bytes);
  cuda->copy_on_device(b.data(), a.data(), bytes);
  cuda->add(b.as<float>(), a.as<float>(), static_cast<int64_t>(values.size()));  // b = 2 * values
  cuda->copy_to_host(staging.data(), b.data(), bytes);
  cuda->synchronize();
  for (size_t i = 0; i < values.size(); ++i) REQUIRE(staging.as<float>()[i] == 2.0f * values[i]);
}

TEST_CASE("cuda backend: upload packs padded rows into device memory", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const auto w = tc::test::make_weights(DType::Q4_0, 96, 13, 5, /*pad=*/10);
  const PlacedTensor placed = cuda->upload(w.tensor());
  CHECK(placed.tensor.memory == MemoryKind::Device);
  CHECK(placed.tensor.dtype == DType::Q4_0);
  CHECK(placed.tensor.ne == w.tensor().ne);
  const int64_t packed = row_bytes(DType::Q4_0, 96);
  CHECK(placed.tensor.row_bytes == packed);
  CHECK(placed.storage.kind() == MemoryKind::Device);
  const auto bytes = from_device<std::byte>(*cuda, placed.tensor.data, static_cast<size_t>(packed * 13));
  for (int64_t r = 0; r < 13; ++r) {
    REQUIRE(std::memcmp(bytes.data() + r * packed, w.bytes.data() + r * w.row_bytes, static_cast<size_t>(packed)) ==
            0);
  }
}

TEST_CASE("cuda backend: argmax on the device equals the CPU backend's (ties low, NaN as -inf)", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  const int64_t n = 32000;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> rows;
  rows.push_back(tc::test::random_floats(n, 7));
  auto tie = tc::test::random_floats(n, 8);
  tie[20001] = tie[3] = tie[30000] = 50.0f;  // the lowest index wins
  rows.push_back(tie);
  auto with_nan = tc::test::random_floats(n, 9);
  with_nan[5] = std::nanf("");
  with_nan[31999] = 40.0f;
  rows.push_back(with_nan);
  rows.push_back(std::vector<float>(n, -inf));  // no finite maximum: index 0
  auto with_inf = tc::test::random_floats(n, 10);
  with_inf[777] = inf;
  rows.push_back(with_inf);
  std::vector<float> x;
  for (const auto& r : rows) x.insert(x.end(), r.begin(), r.end());
  const auto n_rows = static_cast<int64_t>(rows.size());

  std::vector<int32_t> want(rows.size(), -1);
  cpu->argmax(x.data(), n_rows, n, want.data());
  CHECK(want[1] == 3);
  CHECK(want[2] == 31999);
  CHECK(want[3] == 0);
  CHECK(want[4] == 777);

  const Buffer dx = to_device(*cuda, x);
  const Buffer dout = to_device(*cuda, std::vector<int32_t>(rows.size(), -1));
  cuda->argmax(dx.as<float>(), n_rows, n, dout.as<int32_t>());
  CHECK(from_device<int32_t>(*cuda, dout.data(), rows.size()) == want);
}

TEST_CASE("cuda backend: bad arguments fail a CHECK before anything is launched", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const auto w = tc::test::make_weights(DType::F16, 64, 4, 12);
  const Buffer x = to_device(*cuda, tc::test::random_floats(64, 13));
  const Buffer y = tc::test::poisoned_device(*cuda, 4);
  // A host (not placed) weight tensor would fault the GPU: refused.
  REQUIRE_THROWS_AS(cuda->matmul(w.tensor(), x.as<float>(), 1, y.as<float>()), tc::InvariantError);
  const PlacedTensor placed = cuda->upload(w.tensor());
  Tensor odd = placed.tensor;
  odd.row_bytes += 1;  // f16 rows must stay 2-byte aligned
  REQUIRE_THROWS_AS(cuda->matmul(odd, x.as<float>(), 1, y.as<float>()), tc::InvariantError);
  Tensor i8 = placed.tensor;
  i8.dtype = DType::I8;  // not a weight dtype
  REQUIRE_THROWS_AS(cuda->matmul(i8, x.as<float>(), 1, y.as<float>()), tc::InvariantError);
  REQUIRE_THROWS_AS(cuda->attention(x.as<float>(), nullptr, nullptr, 1, 1, 3, 2, 64, nullptr, y.as<float>(), {}),
                    tc::InvariantError);  // n_head not a multiple of n_head_kv
  REQUIRE_THROWS_AS(cuda->attention(x.as<float>(), nullptr, nullptr, 1, 1, 1, 1, 512, nullptr, y.as<float>(), {}),
                    tc::InvariantError);  // head_dim above 256
  // The backend is still usable afterwards.
  cuda->matmul(placed.tensor, x.as<float>(), 1, y.as<float>());
  for (float v : from_device<float>(*cuda, y.data(), 4)) REQUIRE(std::isfinite(v));
}
