// measure_bandwidths: three timed transfers, best of three each.
#include "engine/sparse/bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace tc::sparse {
namespace {

constexpr int64_t kCols = 4096;  // f32 row length of the probe matrices

// Bytes per second of the fastest of `runs` runs of `run` moving `bytes`.
double best_rate(size_t bytes, const std::function<void()>& run, int runs = 3) {
  double best_s = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best_s = std::min(best_s, took.count());
  }
  return static_cast<double>(bytes) / std::max(best_s, 1e-9);
}

void fill_small(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = 1e-3f * static_cast<float>(i % 7 + 1);
}

}  // namespace

Bandwidths measure_bandwidths(kernels::Backend& device, kernels::Backend& cpu, size_t bytes) {
  const int64_t n_rows = std::max<int64_t>(1, static_cast<int64_t>(bytes / (kCols * sizeof(float))));
  const size_t matrix_bytes = static_cast<size_t>(n_rows * kCols) * sizeof(float);
  Bandwidths bw;

  kernels::Buffer pinned = device.allocate_host(matrix_bytes);
  fill_small(pinned.as<float>(), n_rows * kCols);
  kernels::Buffer on_device = device.allocate(matrix_bytes);
  {
    auto queue = device.make_copy_queue();
    bw.pcie_h2d = best_rate(matrix_bytes, [&] {
      queue->copy_to_device(on_device.data(), pinned.data(), matrix_bytes);
      queue->synchronize();
    });
  }

  std::vector<float> x_host(static_cast<size_t>(kCols), 1.0f);
  kernels::Buffer x = device.allocate(x_host.size() * sizeof(float));
  kernels::Buffer y = device.allocate(static_cast<size_t>(n_rows) * sizeof(float));
  device.copy_to_device(x.data(), x_host.data(), x_host.size() * sizeof(float));
  const auto w =
      kernels::Tensor::matrix(on_device.data(), kernels::DType::F32, kCols, n_rows, kernels::MemoryKind::Device);
  device.matmul(w, x.as<float>(), 1, y.as<float>());  // warm-up
  device.synchronize();
  bw.gpu = best_rate(matrix_bytes, [&] {
    device.matmul(w, x.as<float>(), 1, y.as<float>());
    device.synchronize();
  });

  kernels::Buffer host = kernels::Buffer::host(matrix_bytes);
  fill_small(host.as<float>(), n_rows * kCols);
  std::vector<float> y_host(static_cast<size_t>(n_rows));
  const auto w_host = kernels::Tensor::matrix(host.data(), kernels::DType::F32, kCols, n_rows);
  bw.host_dram = best_rate(matrix_bytes, [&] { cpu.matmul(w_host, x_host.data(), 1, y_host.data()); });
  return bw;
}

double measure_memory_bandwidth(kernels::Backend& backend, size_t bytes) {
  constexpr size_t kLine = 64;
  bytes = std::max(bytes / kLine * kLine, kLine);
  if (backend.device() != kernels::DeviceKind::Cpu) {
    kernels::Buffer src = backend.allocate(bytes);
    kernels::Buffer dst = backend.allocate(bytes);
    backend.copy_on_device(dst.data(), src.data(), bytes);  // warm-up
    backend.synchronize();
    return best_rate(2 * bytes, [&] {
      backend.copy_on_device(dst.data(), src.data(), bytes);
      backend.synchronize();
    }, 5);
  }
  kernels::Buffer host = kernels::Buffer::host(bytes);
  auto* words = host.as<uint64_t>();
  const size_t n_words = bytes / sizeof(uint64_t);
  for (size_t i = 0; i < n_words; i += 512) words[i] = i;  // touch every page
  const int64_t n_parts = std::max(1, backend.n_threads());
  std::vector<uint64_t> sums(static_cast<size_t>(n_parts));
  auto read_all = [&] {
    backend.host_parallel(n_parts, [&](int64_t part) {
      const size_t b = n_words * static_cast<size_t>(part) / static_cast<size_t>(n_parts) / 8 * 8;
      const size_t e = n_words * static_cast<size_t>(part + 1) / static_cast<size_t>(n_parts) / 8 * 8;
      uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;  // four chains: the adds keep up with the loads
      for (size_t i = b; i < e; i += 8) {
        a0 += words[i] + words[i + 4];
        a1 += words[i + 1] + words[i + 5];
        a2 += words[i + 2] + words[i + 6];
        a3 += words[i + 3] + words[i + 7];
      }
      sums[static_cast<size_t>(part)] = a0 + a1 + a2 + a3;
    });
  };
  read_all();  // warm-up
  const double rate = best_rate(bytes, read_all, 5);
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  return rate;
}

}  // namespace tc::sparse
