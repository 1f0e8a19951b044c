// matmul_bench: times the CPU matmul per weight dtype and ISA variant, as
// decode GEMV (1 token; GB/s of weight bytes streamed from DRAM) and prefill
// GEMM (512 tokens; GFLOP/s), on the pool's threads.
//   matmul_bench [-t THREADS] [-r ROUNDS] [--isa LIST] [--dtype LIST]
//                [--shape NOUTxNIN,...] [--tokens N] [--no-gemm] [--no-gemv]
// LIST is comma separated (e.g. --isa avx2 --dtype f16,q8_0).
// Shared machines see memory bandwidth drift by 30% within seconds, so GEMV
// runs in ROUNDS interleaved rounds, each also timing a read-bandwidth probe
// (as bench/membw); the table gives medians over rounds, the best round, and
// the median over rounds of GEMV GB/s as a share of that round's probe.
// GEMM is timed ROUNDS times per variant (median).
#include <emmintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"

namespace {

using namespace tc::kernels;
namespace detail = tc::kernels::detail;
using Clock = std::chrono::steady_clock;

// GEMV cycles through copies of a matrix adding up to at least this many
// bytes, 8x the last-level cache here, so weights come from DRAM.
constexpr int64_t kGemvMinBytes = 256ll << 20;
// Timed GEMV calls per (variant, round): at least this long.
constexpr double kGemvRoundSeconds = 0.15;
constexpr int64_t kProbeBytes = 512ll << 20;

struct Options {
  int n_threads = 2;
  int rounds = 7;
  std::vector<std::string> isas;
  std::vector<std::string> dtypes = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_K", "q6_K"};
  std::vector<std::pair<int64_t, int64_t>> shapes = {{4096, 4096}, {11008, 4096}};  // {n_out, n_in}
  int64_t gemm_tokens = 512;
  bool gemm = true;
  bool gemv = true;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: matmul_bench [-t THREADS] [-r ROUNDS] [--isa LIST] [--dtype LIST] [--shape NOUTxNIN,...]\n"
               "                    [--tokens N] [--no-gemm] [--no-gemv]\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "-t") {
      o.n_threads = std::atoi(next().c_str());
    } else if (a == "-r") {
      o.rounds = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--isa") {
      o.isas = split(next());
    } else if (a == "--dtype") {
      o.dtypes = split(next());
    } else if (a == "--shape") {
      o.shapes.clear();
      for (const auto& s : split(next())) {
        const auto x = s.find('x');
        if (x == std::string::npos) usage();
        o.shapes.push_back({std::atoll(s.substr(0, x).c_str()), std::atoll(s.substr(x + 1).c_str())});
      }
    } else if (a == "--tokens") {
      o.gemm_tokens = std::atoll(next().c_str());
    } else if (a == "--no-gemm") {
      o.gemm = false;
    } else if (a == "--no-gemv") {
      o.gemv = false;
    } else {
      usage();
    }
  }
  if (o.isas.empty()) {
    for (const char* name : {"portable", "avx2", "avx512"}) {
      if (detail::isa_supported(name)) o.isas.push_back(name);
    }
  }
  for (const auto& name : o.isas) {
    if (!detail::isa_supported(name.c_str())) {
      std::fprintf(stderr, "matmul_bench: variant %s is not supported on this CPU\n", name.c_str());
      std::exit(2);
    }
  }
  return o;
}

// Values near N(0, 0.25) from a xorshift generator (sum of uniforms): fast
// for the hundreds of millions of values 7B-shaped matrices need.
void fill_random(float* dst, int64_t n, uint64_t seed) {
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A weight matrix and copies of it, 64-byte aligned.
struct Matrix {
  DType dtype;
  int64_t n_out, n_in;
  int64_t copy_bytes;
  int n_copies;
  std::unique_ptr<std::byte[]> storage;
  std::byte* bytes;

  Tensor view(int copy) const {
    return Tensor::matrix(bytes + copy * copy_bytes, dtype, n_in, n_out, MemoryKind::Host);
  }
};

Matrix make_matrix(DType dtype, int64_t n_out, int64_t n_in, int n_copies, ThreadPool& pool) {
  Matrix m{dtype, n_out, n_in, row_bytes(dtype, n_in) * n_out, n_copies, nullptr, nullptr};
  m.storage.reset(new std::byte[static_cast<size_t>(m.copy_bytes * n_copies + 64)]);
  m.bytes = m.storage.get() + (64 - reinterpret_cast<uintptr_t>(m.storage.get()) % 64) % 64;
  const int64_t rb = row_bytes(dtype, n_in);
  pool.run([&](int t, int nt) {
    std::vector<float> row(static_cast<size_t>(n_in));
    for (int64_t r = n_out * t / nt; r < n_out * (t + 1) / nt; ++r) {
      fill_random(row.data(), n_in, static_cast<uint64_t>(r) + 1);
      quantize_row(dtype, row.data(), m.bytes + r * rb, n_in);
    }
  });
  pool.run([&](int t, int nt) {
    const int64_t b0 = m.copy_bytes * t / nt, b1 = m.copy_bytes * (t + 1) / nt;
    for (int c = 1; c < n_copies; ++c) {
      std::memcpy(m.bytes + c * m.copy_bytes + b0, m.bytes + b0, static_cast<size_t>(b1 - b0));
    }
  });
  return m;
}

// Read bandwidth over `bytes` with the pool's threads (GB/s), as membw.
double probe_read(const std::byte* bytes, int64_t n, ThreadPool& pool) {
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

struct GemvResult {
  std::vector<double> ms, gbs, share;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ThreadPool pool(o.n_threads);
  std::printf("matmul_bench: %d threads; GEMV: 1 token, weights from DRAM, %d interleaved rounds; "
              "GEMM: %lld tokens, median of %d\n",
              pool.n_threads(), o.rounds, static_cast<long long>(o.gemm_tokens), o.rounds);
  std::printf("chosen variant here: %s\n", matmul_isa().c_str());

  std::vector<Matrix> mats;
  for (const auto& name : o.dtypes) {
    const auto dtype = dtype_from_name(name);
    if (!dtype) {
      std::fprintf(stderr, "matmul_bench: unknown dtype %s\n", name.c_str());
      return 2;
    }
    for (auto [n_out, n_in] : o.shapes) {
      const int64_t copy_bytes = row_bytes(*dtype, n_in) * n_out;
      const int n_copies = o.gemv ? static_cast<int>(std::max<int64_t>(1, (kGemvMinBytes + copy_bytes - 1) / copy_bytes)) : 1;
      mats.push_back(make_matrix(*dtype, n_out, n_in, n_copies, pool));
    }
  }
  int64_t max_in = 0, max_out = 0;
  for (const auto& m : mats) {
    max_in = std::max(max_in, m.n_in);
    max_out = std::max(max_out, m.n_out);
  }
  const int64_t n_tok = std::max<int64_t>(1, o.gemm_tokens);
  std::vector<float> x(static_cast<size_t>(n_tok * max_in));
  fill_random(x.data(), static_cast<int64_t>(x.size()), 12345);
  std::vector<float> y(static_cast<size_t>(n_tok * max_out));

  const size_t n_isa = o.isas.size();
  std::vector<GemvResult> gemv(mats.size() * n_isa);
  std::vector<double> probe;
  if (o.gemv) {
    std::unique_ptr<std::byte[]> probe_buf(new std::byte[static_cast<size_t>(kProbeBytes + 64)]);
    std::byte* pb = probe_buf.get() + (64 - reinterpret_cast<uintptr_t>(probe_buf.get()) % 64) % 64;
    pool.run([&](int t, int nt) {
      const int64_t b = kProbeBytes * t / nt, e = kProbeBytes * (t + 1) / nt;
      std::memset(pb + b, t + 1, static_cast<size_t>(e - b));
    });
    for (int round = 0; round < o.rounds; ++round) {
      probe_read(pb, kProbeBytes, pool);  // warm
      const double bw = probe_read(pb, kProbeBytes, pool);
      probe.push_back(bw);
      for (size_t mi = 0; mi < mats.size(); ++mi) {
        const Matrix& m = mats[mi];
        for (size_t ii = 0; ii < n_isa; ++ii) {
          const detail::MatmulIsa& isa = detail::isa_for_request(o.isas[ii].c_str());
          for (int c = 0; c < m.n_copies; ++c) detail::matmul_with(isa, m.view(c), x.data(), 1, y.data(), &pool);
          std::vector<double> calls;
          double total = 0;
          for (int i = 0; total < kGemvRoundSeconds || i < m.n_copies; ++i) {
            const auto t0 = Clock::now();
            detail::matmul_with(isa, m.view(i % m.n_copies), x.data(), 1, y.data(), &pool);
            const double s = seconds_since(t0);
            calls.push_back(s);
            total += s;
          }
          const double s = median(calls);
          GemvResult& r = gemv[mi * n_isa + ii];
          r.ms.push_back(s * 1e3);
          r.gbs.push_back(static_cast<double>(m.copy_bytes) / s * 1e-9);
          r.share.push_back(r.gbs.back() / bw);
        }
      }
    }
    std::printf("read bandwidth probe: median %.1f GB/s, range %.1f - %.1f over %d rounds\n", median(probe),
                *std::min_element(probe.begin(), probe.end()), *std::max_element(probe.begin(), probe.end()),
                o.rounds);
  }

  std::printf("\n| isa | dtype | n_out x n_in | GEMV ms | GEMV GB/s | best GB/s | of read bw | GEMM ms | GEMM GFLOP/s |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t mi = 0; mi < mats.size(); ++mi) {
    const Matrix& m = mats[mi];
    for (size_t ii = 0; ii < n_isa; ++ii) {
      const detail::MatmulIsa& isa = detail::isa_for_request(o.isas[ii].c_str());
      std::string gemm_ms = "-", gemm_gf = "-";
      if (o.gemm && o.gemm_tokens > 0) {
        // The portable path is slow: one timed run is enough to place it.
        const int reps = std::string(isa.name) == "portable" ? 1 : o.rounds;
        detail::matmul_with(isa, m.view(0), x.data(), n_tok, y.data(), &pool);
        std::vector<double> times;
        for (int r = 0; r < reps; ++r) {
          const auto t0 = Clock::now();
          detail::matmul_with(isa, m.view(0), x.data(), n_tok, y.data(), &pool);
          times.push_back(seconds_since(t0));
        }
        const double s = median(times);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.1f", s * 1e3);
        gemm_ms = buf;
        std::snprintf(buf, sizeof buf, "%.1f", 2.0 * static_cast<double>(m.n_in * m.n_out * n_tok) / s * 1e-9);
        gemm_gf = buf;
      }
      std::string gv_ms = "-", gv_gbs = "-", gv_best = "-", gv_share = "-";
      if (o.gemv) {
        const GemvResult& r = gemv[mi * n_isa + ii];
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", median(r.ms));
        gv_ms = buf;
        std::snprintf(buf, sizeof buf, "%.1f", median(r.gbs));
        gv_gbs = buf;
        std::snprintf(buf, sizeof buf, "%.1f", *std::max_element(r.gbs.begin(), r.gbs.end()));
        gv_best = buf;
        std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * median(r.share));
        gv_share = buf;
      }
      std::printf("| %s | %s | %lld x %lld | %s | %s | %s | %s | %s | %s |\n", isa.name,
                  std::string(dtype_name(m.dtype)).c_str(), static_cast<long long>(m.n_out),
                  static_cast<long long>(m.n_in), gv_ms.c_str(), gv_gbs.c_str(), gv_best.c_str(), gv_share.c_str(),
                  gemm_ms.c_str(), gemm_gf.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
