// [cuda] The CUDA backend's copy queue and events (the hybrid prefetch
// path's transport): copies on the queue reach ops that wait on their event;
// the queue waits for the stream's work before overwriting what it reads;
// destroying the queue waits for its copies; foreign events are refused.
// Skipped with a message where no CUDA backend is available.
#include <catch2/catch.hpp>

#include <vector>

#include "kernels/backend.h"
#include "kernels/check.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/test_util.h"

using namespace tc::kernels;
using tc::test::from_device;
using tc::test::to_device;

namespace {

// Pinned host memory holding `values` (the copy queue's sources are pinned staging).
Buffer pinned_copy(Backend& b, const std::vector<float>& values) {
  Buffer buf = b.allocate_host(values.size() * sizeof(float));
  std::copy(values.begin(), values.end(), buf.as<float>());
  return buf;
}

}  // namespace

TEST_CASE("cuda copy queue: ops that wait on the queue's event see its copies", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const auto values = tc::test::random_floats(300007, 11);
  const size_t bytes = values.size() * sizeof(float);
  Buffer src = pinned_copy(*cuda, values);
  Buffer dst = cuda->allocate(bytes);
  Buffer doubled = cuda->allocate(bytes);
  auto queue = cuda->make_copy_queue();
  auto copied = cuda->make_event();
  queue->copy_to_device(dst.data(), src.data(), bytes);
  queue->record_event(*copied);
  // No host wait: the stream's wait alone orders the add after the copy.
  cuda->wait_event(*copied);
  cuda->copy_on_device(doubled.data(), dst.data(), bytes);
  cuda->add(doubled.as<float>(), dst.as<float>(), static_cast<int64_t>(values.size()));
  const auto got = from_device<float>(*cuda, doubled.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) REQUIRE(got[i] == 2.0f * values[i]);
  queue->synchronize();
}

TEST_CASE("cuda copy queue: a copy after the queue waited on the stream lands after the stream's writes", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const size_t n = 1 << 20;
  const auto old_values = tc::test::random_floats(n, 12);
  const auto new_values = tc::test::random_floats(n, 13);
  Buffer old_dev = to_device(*cuda, old_values);
  Buffer busy = to_device(*cuda, tc::test::random_floats(n, 14));
  Buffer slot = cuda->allocate(n * sizeof(float));
  Buffer src = pinned_copy(*cuda, new_values);
  auto queue = cuda->make_copy_queue();
  auto stream_point = cuda->make_event();
  auto copied = cuda->make_event();
  // The stream: a long chain of work, then it writes the old values into the slot.
  for (int i = 0; i < 200; ++i) cuda->add(busy.as<float>(), busy.as<float>(), static_cast<int64_t>(n));
  cuda->copy_on_device(slot.data(), old_dev.data(), n * sizeof(float));
  cuda->record_event(*stream_point);
  // The queue: the new values into the slot, only after that write.
  queue->wait_event(*stream_point);
  queue->copy_to_device(slot.data(), src.data(), n * sizeof(float));
  queue->record_event(*copied);
  cuda->wait_event(*copied);
  const auto got = from_device<float>(*cuda, slot.data(), n);
  CHECK(tc::test::same_bits(got, new_values));
}

TEST_CASE("cuda copy queue: destroying the queue waits for its copies", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const auto values = tc::test::random_floats(1 << 20, 15);
  Buffer src = pinned_copy(*cuda, values);
  Buffer dst = cuda->allocate(values.size() * sizeof(float));
  {
    auto queue = cuda->make_copy_queue();
    queue->copy_to_device(dst.data(), src.data(), values.size() * sizeof(float));
  }
  CHECK(tc::test::same_bits(from_device<float>(*cuda, dst.data(), values.size()), values));
}

TEST_CASE("cuda copy queue: an event of another backend is refused", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  auto foreign = cpu->make_event();
  auto queue = cuda->make_copy_queue();
  CHECK_THROWS_AS(cuda->wait_event(*foreign), tc::InvariantError);
  CHECK_THROWS_AS(cuda->record_event(*foreign), tc::InvariantError);
  CHECK_THROWS_AS(queue->wait_event(*foreign), tc::InvariantError);
}
