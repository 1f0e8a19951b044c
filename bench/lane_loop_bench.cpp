// lane_loop_bench: what bounds the 8-token Q4_0 lane kernel
// (kernels/cpu/matmul_x86_q4_lanes.h), on one core, with everything in
// registers or L1: the kernel's inner loop rebuilt step by step, each line
// adding one kind of work, timed as G vpdpbusd per second.
//   lane_loop_bench [-r ROUNDS] [-n ITERATIONS]
// Lines: (1) independent vpdpbusd, 8 accumulators (one per token), weights
// and activations in registers: the unit's peak; (2) each token's 4
// activation bytes broadcast from memory, as the kernel does; (3) with the
// per-block float steps the batch-invariant contract fixes (vpsubd,
// vcvtdq2ps, vmulps, vfmadd on a chain in memory, per 16 rows, token and
// block); (4) with the weights loaded as nibbles and unpacked; (5) as (4)
// but two 16-row tiles per pass sharing each broadcast (the kernel from 4
// tokens on). Medians over ROUNDS interleaved rounds. Needs AVX-512 VNNI.
#include <immintrin.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_timing.h"

namespace {

alignas(64) int8_t g_x[8][64];      // int8 [token][32 + pad]: a block's activations per token
alignas(64) uint8_t g_w[8][64];     // u8 [step or tile*4 + step][64]: weights, 16 rows x 4 bytes
alignas(64) float g_f[64][16];      // f32: scales and the chains the float steps update
alignas(64) int32_t g_gs8[8];       // int32 [token]: 8 * sum of the block's activations

constexpr int kTokens = 8;

// Steps per block: 8 (4 bytes of 16 rows each). kMode picks the line above.
template <int kMode>
__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) int64_t run_loop(int64_t blocks) {
  constexpr int kTiles = kMode == 5 ? 2 : 1;
  // Fully unrolled loops everywhere, so that these stay in registers.
  __m512i acc[kTiles][kTokens];
  __m512i xr[kTokens];
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t) {
    xr[t] = _mm512_set1_epi32(t + 1);
#pragma GCC unroll 2
    for (int n = 0; n < kTiles; ++n) acc[n][t] = _mm512_setzero_si512();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  for (int64_t b = 0; b < blocks; ++b) {
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      __m512i w[kTiles];
#pragma GCC unroll 2
      for (int n = 0; n < kTiles; ++n) {
        if constexpr (kMode >= 4) {
          const __m512i raw = _mm512_load_si512(g_w[4 * n + s % 4]);
          w[n] = s < 4 ? _mm512_and_si512(raw, m4) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
        } else {
          w[n] = _mm512_load_si512(g_w[s]);
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        __m512i xb = xr[t];
        if constexpr (kMode >= 2) {
          int32_t v;
          std::memcpy(&v, &g_x[t][4 * s], 4);
          xb = _mm512_set1_epi32(v);
        }
#pragma GCC unroll 2
        for (int n = 0; n < kTiles; ++n) acc[n][t] = _mm512_dpbusd_epi32(acc[n][t], w[n], xb);
      }
    }
    if constexpr (kMode >= 3) {
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        const __m512i gs8 = _mm512_set1_epi32(g_gs8[t]);
        const __m512 gd = _mm512_set1_ps(g_f[1][t]);
#pragma GCC unroll 2
        for (int n = 0; n < kTiles; ++n) {
          const __m512 d = _mm512_mul_ps(_mm512_load_ps(g_f[2 * n]), gd);
          float* chain = g_f[8 + 8 * n + t];
          // Zero-masked, as the kernels' cvt_f: GCC 12's plain form warns.
          const __m512 exact = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_sub_epi32(acc[n][t], gs8));
          _mm512_store_ps(chain, _mm512_fmadd_ps(exact, d, _mm512_load_ps(chain)));
          acc[n][t] = _mm512_setzero_si512();
        }
      }
    }
    __asm__ volatile("" : "+r"(b)::"memory");
  }
  int64_t check = 0;
  for (int n = 0; n < kTiles; ++n) {
    for (int t = 0; t < kTokens; ++t) {
      alignas(64) int32_t lanes[16];
      _mm512_store_si512(lanes, acc[n][t]);
      for (int32_t v : lanes) check += v;
    }
  }
  return check;
}

using LoopFn = int64_t (*)(int64_t);

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  int64_t blocks = 4'000'000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "-r" || arg == "-n") && i + 1 < argc) {
      const long long v = std::atoll(argv[++i]);
      if (v < 1) {
        std::fprintf(stderr, "lane_loop_bench: %s must be >= 1\n", arg.c_str());
        return 2;
      }
      if (arg == "-r") rounds = static_cast<int>(v);
      else blocks = v;
    } else {
      std::fprintf(stderr, "usage: lane_loop_bench [-r ROUNDS] [-n ITERATIONS]\n");
      return 2;
    }
  }
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vnni")) {
    std::fprintf(stderr, "lane_loop_bench: this CPU has no AVX-512 VNNI\n");
    return 1;
  }
  std::memset(g_x, 1, sizeof g_x);
  std::memset(g_w, 0x21, sizeof g_w);
  for (auto& row : g_f) {
    for (float& v : row) v = 0.5f;
  }
  for (int32_t& v : g_gs8) v = 8;

  struct Line {
    const char* name;
    LoopFn fn;
    int dots_per_block;  // vpdpbusd per iteration
  };
  const Line lines[] = {
      {"(1) vpdpbusd, registers only", run_loop<1>, 64},
      {"(2) + activations broadcast from memory", run_loop<2>, 64},
      {"(3) + per-block float steps", run_loop<3>, 64},
      {"(4) + weights unpacked from nibbles", run_loop<4>, 64},
      {"(5) as (4), two tiles per broadcast", run_loop<5>, 128},
  };
  std::vector<std::vector<double>> rates(std::size(lines));
  int64_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < std::size(lines); ++i) {
      const auto t0 = tc::bench::Clock::now();
      sink += lines[i].fn(blocks);
      const double s = tc::bench::seconds_since(t0);
      rates[i].push_back(static_cast<double>(blocks) * lines[i].dots_per_block / s / 1e9);
    }
  }
  std::printf("# 8 tokens x 16-row tiles, one core, median of %d rounds (checksum %lld)\n\n", rounds,
              static_cast<long long>(sink));
  std::printf("| loop | G vpdpbusd/s |\n| --- | ---: |\n");
  for (size_t i = 0; i < std::size(lines); ++i) {
    std::printf("| %s | %.2f |\n", lines[i].name, tc::bench::median(rates[i]));
  }
  return 0;
}
