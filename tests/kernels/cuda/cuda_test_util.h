// Helpers of the [cuda] tests: the CUDA backend (or a WARN saying why there
// is none, after which the case returns and counts as skipped), and device
// arrays filled and read through the Backend interface only, so these tests
// include no CUDA header and build in every configuration.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/buffer.h"
#include "kernels/tensor.h"
#include "tests/kernels/weight_fixtures.h"

namespace tc::test {

struct CudaBackendProbe {
  kernels::Backend* backend = nullptr;  // null when unavailable
  std::string reason;                   // why not, when unavailable
};

// Created once per process and kept until exit (never destroyed: CUDA
// teardown order at exit is not worth the trouble in a test binary).
inline const CudaBackendProbe& cuda_probe() {
  static const CudaBackendProbe probe = [] {
    CudaBackendProbe p;
    try {
      p.backend = kernels::create_backend(kernels::DeviceKind::Cuda).release();
    } catch (const kernels::BackendUnavailable& e) {
      p.reason = e.what();
    }
    return p;
  }();
  return probe;
}

// The backend, or nullptr after warning that the case is skipped.
inline kernels::Backend* cuda_backend_or_skip() {
  const auto& probe = cuda_probe();
  if (probe.backend == nullptr) WARN("SKIPPED (no CUDA backend here): " << probe.reason);
  return probe.backend;
}

// Opens a [cuda] test case: `cuda` is the backend; returns early if there is none.
#define TC_CUDA_BACKEND_OR_SKIP(cuda)                                 \
  ::tc::kernels::Backend* cuda = ::tc::test::cuda_backend_or_skip(); \
  if (cuda == nullptr) return

// Device memory holding a copy of `host`.
template <typename T>
kernels::Buffer to_device(kernels::Backend& b, const std::vector<T>& host) {
  kernels::Buffer buf = b.allocate(host.size() * sizeof(T));
  b.copy_to_device(buf.data(), host.data(), host.size() * sizeof(T));
  b.synchronize();
  return buf;
}

// n values read back from device memory (waits for every op issued before).
template <typename T>
std::vector<T> from_device(kernels::Backend& b, const void* device, size_t n) {
  std::vector<T> host(n);
  b.copy_to_host(host.data(), device, n * sizeof(T));
  b.synchronize();
  return host;
}

// Device memory of n floats, all NaN: an op that skips an output shows it.
inline kernels::Buffer poisoned_device(kernels::Backend& b, size_t n) {
  return to_device(b, std::vector<float>(n, std::nanf("")));
}

// Weights copied to the device byte for byte, padding included, so the
// kernels' row_bytes stepping is exercised (upload() would pack them).
struct DeviceWeights {
  kernels::Buffer storage;
  kernels::Tensor tensor;
};

inline DeviceWeights to_device(kernels::Backend& b, const Weights& w) {
  DeviceWeights d{to_device(b, w.bytes), w.tensor()};
  d.tensor.data = d.storage.data();
  d.tensor.memory = kernels::MemoryKind::Device;
  return d;
}

// The first index where |got - want| > tol (or got is not finite), or got.size().
inline size_t first_bad(const std::vector<float>& got, const std::vector<double>& want,
                        const std::vector<double>& tol) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || std::fabs(static_cast<double>(got[i]) - want[i]) > tol[i]) return i;
  }
  return got.size();
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace tc::test
