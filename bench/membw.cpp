// membw: a small STREAM-like probe of this machine's memory bandwidth, the
// ceiling that decode GEMV is measured against. Read (sum over a 1 GiB
// buffer), copy and triad, split across the pool's threads, median of 5.
//   membw [-t THREADS] [-m MIB]      (defaults: physical cores, 1024 MiB)
// Figures follow STREAM's convention: bytes the kernel names (read: 1x,
// copy: 2x, triad: 3x the array size), not counting write-allocate traffic.
#include <emmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "kernels/cpu/thread_pool.h"

namespace {

using tc::kernels::ThreadPool;
using tc::bench::Clock;
using tc::bench::median;

// 64-byte aligned, uninitialised (the caller first-touches it from the pool).
struct AlignedArray {
  explicit AlignedArray(size_t n_bytes) : size(n_bytes) {
    data = static_cast<char*>(std::aligned_alloc(64, (n_bytes + 63) / 64 * 64));
    if (data == nullptr) {
      std::fprintf(stderr, "membw: cannot allocate %zu bytes\n", n_bytes);
      std::exit(1);
    }
  }
  ~AlignedArray() { std::free(data); }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  char* data;
  size_t size;
};

// [begin, end) of thread t's share of n bytes, 4 KiB aligned.
void share(size_t n, int t, int nt, size_t& begin, size_t& end) {
  const size_t pages = n / 4096;
  begin = pages * static_cast<size_t>(t) / static_cast<size_t>(nt) * 4096;
  end = t + 1 == nt ? n : pages * static_cast<size_t>(t + 1) / static_cast<size_t>(nt) * 4096;
}

// Integer adds of 16-byte loads, four independent chains: the loads, not
// the adds, are the limit. Baseline SSE2, as the rest of the build.
uint64_t sum_bytes(const char* p, size_t n) {
  __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm_add_epi64(a0, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i)));
    a1 = _mm_add_epi64(a1, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 16)));
    a2 = _mm_add_epi64(a2, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 32)));
    a3 = _mm_add_epi64(a3, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 48)));
  }
  const __m128i s = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
  uint64_t lanes[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), s);
  uint64_t total = lanes[0] + lanes[1];
  for (; i < n; ++i) total += static_cast<unsigned char>(p[i]);
  return total;
}


}  // namespace

int main(int argc, char** argv) {
  int n_threads = 0;
  size_t mib = 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-t" && i + 1 < argc) {
      n_threads = std::atoi(argv[++i]);
    } else if (a == "-m" && i + 1 < argc) {
      mib = static_cast<size_t>(std::atol(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: membw [-t THREADS] [-m MIB]\n");
      return 2;
    }
  }
  ThreadPool pool(n_threads);
  const int nt = pool.n_threads();
  const size_t n_bytes = mib << 20;
  constexpr int kRepeats = 5;

  // Read: one buffer of n_bytes.
  double read_gbs;
  {
    AlignedArray buf(n_bytes);
    pool.run([&](int t, int n) {
      size_t b, e;
      share(n_bytes, t, n, b, e);
      for (size_t i = b; i < e; ++i) buf.data[i] = static_cast<char>(i * 131 + 7);
    });
    std::vector<uint64_t> sums(static_cast<size_t>(nt));
    std::vector<double> gbs;
    for (int r = 0; r < kRepeats + 1; ++r) {
      const auto t0 = Clock::now();
      pool.run([&](int t, int n) {
        size_t b, e;
        share(n_bytes, t, n, b, e);
        sums[static_cast<size_t>(t)] += sum_bytes(buf.data + b, e - b);
      });
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r > 0) gbs.push_back(static_cast<double>(n_bytes) / s * 1e-9);  // first run warms up
    }
    uint64_t check = 0;
    for (auto s : sums) check += s;
    read_gbs = median(gbs);
    std::printf("checksum %llu\n", static_cast<unsigned long long>(check));
  }

  // Copy and triad: three arrays of doubles, n_bytes / 4 each.
  double copy_gbs, triad_gbs;
  {
    const size_t n = (n_bytes / 4) / sizeof(double);
    AlignedArray a_buf(n * sizeof(double)), b_buf(n * sizeof(double)), c_buf(n * sizeof(double));
    auto* a = reinterpret_cast<double*>(a_buf.data);
    auto* b = reinterpret_cast<double*>(b_buf.data);
    auto* c = reinterpret_cast<double*>(c_buf.data);
    auto range = [&](int t, int nthr, size_t& lo, size_t& hi) {
      size_t bb, ee;
      share(n * sizeof(double), t, nthr, bb, ee);
      lo = bb / sizeof(double);
      hi = ee / sizeof(double);
    };
    pool.run([&](int t, int nthr) {
      size_t lo, hi;
      range(t, nthr, lo, hi);
      for (size_t i = lo; i < hi; ++i) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.5;
      }
    });
    std::vector<double> copy, triad;
    for (int r = 0; r < kRepeats + 1; ++r) {
      auto t0 = Clock::now();
      pool.run([&](int t, int nthr) {
        size_t lo, hi;
        range(t, nthr, lo, hi);
        std::memcpy(c + lo, a + lo, (hi - lo) * sizeof(double));
      });
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r > 0) copy.push_back(2.0 * static_cast<double>(n * sizeof(double)) / s * 1e-9);
      t0 = Clock::now();
      pool.run([&](int t, int nthr) {
        size_t lo, hi;
        range(t, nthr, lo, hi);
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
      });
      s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r > 0) triad.push_back(3.0 * static_cast<double>(n * sizeof(double)) / s * 1e-9);
    }
    copy_gbs = median(copy);
    triad_gbs = median(triad);
    std::printf("checksum %g\n", a[n / 2] + c[n / 3]);
  }

  std::printf("| probe | threads | MiB | GB/s (median of %d) |\n| --- | --- | --- | --- |\n", kRepeats);
  std::printf("| read  | %d | %zu | %.1f |\n", nt, mib, read_gbs);
  std::printf("| copy  | %d | %zu | %.1f |\n", nt, mib / 4 * 3, copy_gbs);
  std::printf("| triad | %d | %zu | %.1f |\n", nt, mib / 4 * 3, triad_gbs);
  return 0;
}
