// bench_timing: what the CPU bench programs share around their timings: the
// clock, seconds since a time point, the (upper) median of repeated
// timings, the read-bandwidth probe run between timed blocks (bench/membw's
// method: SSE2 loads summed over a buffer on the pool's threads), and a fast
// seeded fill of the benchmarked matrices.
#pragma once

#include <emmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace tc::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The upper median (v[n / 2] after sorting); 0 for no values.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Read bandwidth over `n` bytes (64-byte aligned) with the pool's threads, GB/s.
inline double probe_read(const std::byte* bytes, int64_t n, kernels::ThreadPool& pool) {
  std::vector<uint64_t> sink(static_cast<size_t>(pool.n_threads()));
  const auto t0 = Clock::now();
  pool.run([&](int t, int nt) {
    const int64_t b = n * t / nt / 64 * 64, e = n * (t + 1) / nt / 64 * 64;
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = b; i < e; i += 64) {
      a0 = _mm_add_epi64(a0, _mm_load_si128(reinterpret_cast<const __m128i*>(bytes + i)));
      a1 = _mm_add_epi64(a1, _mm_load_si128(reinterpret_cast<const __m128i*>(bytes + i + 16)));
      a2 = _mm_add_epi64(a2, _mm_load_si128(reinterpret_cast<const __m128i*>(bytes + i + 32)));
      a3 = _mm_add_epi64(a3, _mm_load_si128(reinterpret_cast<const __m128i*>(bytes + i + 48)));
    }
    uint64_t l[2];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l), _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3)));
    sink[static_cast<size_t>(t)] = l[0] + l[1];
  });
  const double s = seconds_since(t0);
  if (sink[0] == 42) std::printf(" ");  // keep the sums alive
  return static_cast<double>(n) / s * 1e-9;
}

// Values near N(0, 0.25) from a xorshift generator (a sum of four uniforms):
// fast for the hundreds of millions of values 7B-shaped matrices need.
inline void fill_random(float* dst, int64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    float v = 0;
    for (int k = 0; k < 4; ++k) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      v += static_cast<float>(s >> 40) * (1.0f / 16777216.0f) - 0.5f;
    }
    dst[i] = v * 0.5f;
  }
}

}  // namespace tc::bench
