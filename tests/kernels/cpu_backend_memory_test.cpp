// The CPU backend's memory and copy methods (the reference the CUDA backend
// is held to): upload is zero-copy, allocations are zero-filled host
// memory, copies are immediate memcpys, argmax breaks ties to the lowest
// index with NaN counted as -inf; relu and threshold_bits (hybrid mode's
// predictor ops) on specials and a partial last word; the copy queue's
// copies are immediate too and its events order nothing; host_parallel
// visits each index once, on the pool's threads.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kernels/backend.h"
#include "tests/test_util.h"

using namespace tc::kernels;

TEST_CASE("cpu backend: upload returns the host view itself, with no storage", "[kernels][backend]") {
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  std::vector<float> data(6 * 5, 1.5f);
  Tensor host = Tensor::matrix(data.data(), DType::F32, 5, 6);
  host.row_bytes = 6 * sizeof(float);  // padded rows stay as they are
  const PlacedTensor placed = cpu->upload(host);
  CHECK(placed.tensor.data == data.data());
  CHECK(placed.tensor.row_bytes == host.row_bytes);
  CHECK(placed.tensor.memory == MemoryKind::Host);
  CHECK(placed.storage.data() == nullptr);
}

TEST_CASE("cpu backend: allocations are zero-filled host memory and copies are immediate", "[kernels][backend]") {
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  Buffer a = cpu->allocate(100 * sizeof(float));
  Buffer staging = cpu->allocate_host(100 * sizeof(float));
  CHECK(a.kind() == MemoryKind::Host);
  CHECK(staging.kind() == MemoryKind::Host);
  for (int i = 0; i < 100; ++i) REQUIRE((a.as<float>()[i] == 0.0f && staging.as<float>()[i] == 0.0f));
  const auto values = tc::test::random_floats(100, 1);
  cpu->copy_to_device(a.data(), values.data(), 100 * sizeof(float));
  Buffer b = cpu->allocate(100 * sizeof(float));
  cpu->copy_on_device(b.data(), a.data(), 100 * sizeof(float));
  cpu->copy_to_host(staging.data(), b.data(), 100 * sizeof(float));
  for (int i = 0; i < 100; ++i) REQUIRE(staging.as<float>()[i] == values[static_cast<size_t>(i)]);
}

TEST_CASE("cpu backend: argmax takes the lowest index on ties and counts NaN as -inf", "[kernels][backend]") {
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::nanf("");
  const std::vector<float> x = {1, 3, 3, 2,          // tie: 1
                                nan, -5, nan, -7,    // NaN loses: 1
                                -inf, -inf, -inf, -inf,  // nothing finite: 0
                                nan, nan, nan, nan,      // 0
                                0, inf, 4, inf};         // first +inf: 1
  std::vector<int32_t> out(5, -1);
  cpu->argmax(x.data(), 5, 4, out.data());
  CHECK(out == std::vector<int32_t>{1, 1, 0, 0, 1});
}

TEST_CASE("cpu backend: relu keeps -0 and NaN, threshold_bits packs scores above the threshold", "[kernels][backend]") {
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  const float nan = std::nanf("");
  std::vector<float> x = {-1.5f, 2.0f, -0.0f, 0.0f, nan, -1e-30f};
  cpu->relu(x.data(), static_cast<int64_t>(x.size()));
  CHECK(x[0] == 0.0f);
  CHECK(!std::signbit(x[0]));
  CHECK(x[1] == 2.0f);
  CHECK(std::signbit(x[2]));
  CHECK(std::isnan(x[4]));
  CHECK(x[5] == 0.0f);

  // 2 rows of 40 scores (a full word and a partial one each): bit b of word
  // w is score 32 w + b > 0.25, NaN never, the partial word's tail bits 0.
  const auto scores = tc::test::random_floats(80, 9);
  std::vector<float> s = scores;
  s[3] = nan;
  s[4] = 0.25f;  // equal is not above
  std::vector<uint32_t> bits(4, 0xdeadbeefu);
  cpu->threshold_bits(s.data(), 2, 40, 0.25f, bits.data());
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 64; ++i) {
      const bool bit = (bits[static_cast<size_t>(r * 2 + i / 32)] >> (i % 32)) & 1u;
      INFO("row " << r << " score " << i);
      CHECK(bit == (i < 40 && s[static_cast<size_t>(r * 40 + i)] > 0.25f));
    }
  }
  CHECK((bits[0] >> 3 & 1u) == 0);
}

TEST_CASE("cpu backend: the copy queue copies at once, events are recorded and waited on freely",
          "[kernels][backend]") {
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  auto queue = cpu->make_copy_queue();
  auto copied = cpu->make_event();
  auto stream_point = cpu->make_event();
  const auto values = tc::test::random_floats(257, 2);
  Buffer dst = cpu->allocate(values.size() * sizeof(float));
  cpu->record_event(*stream_point);
  queue->wait_event(*stream_point);
  queue->copy_to_device(dst.data(), values.data(), values.size() * sizeof(float));
  // Done when issued: no record, wait or synchronize needed to see it.
  for (size_t i = 0; i < values.size(); ++i) REQUIRE(dst.as<float>()[i] == values[i]);
  queue->record_event(*copied);
  cpu->wait_event(*copied);
  queue->synchronize();
  queue->copy_to_device(dst.data(), values.data(), 0);  // empty copies are fine
}

TEST_CASE("cpu backend: host_parallel runs every index once, on several threads", "[kernels][backend]") {
  for (int threads : {1, 2, 3}) {
    auto cpu = create_backend(DeviceKind::Cpu, {threads});
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{257}}) {
      INFO("threads " << threads << " n " << n);
      std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
      std::mutex mutex;
      std::set<std::thread::id> ids;
      cpu->host_parallel(n, [&](int64_t i) {
        REQUIRE((i >= 0 && i < n));
        visits[static_cast<size_t>(i)].fetch_add(1);
        // Long enough that a second thread gets to claim some.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        std::lock_guard lock(mutex);
        ids.insert(std::this_thread::get_id());
      });
      for (const auto& v : visits) CHECK(v.load() == 1);
      if (threads > 1 && n >= 257) CHECK(ids.size() > 1);
      if (threads == 1 || n <= 1) CHECK(ids.size() <= 1);
    }
  }
}
