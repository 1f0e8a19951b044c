// lane_loop_bench: what bounds the 8-token Q4_0 lane kernel
// (kernels/cpu/matmul_x86_q4_lanes.h), on one core, with everything in
// registers or L1: the kernel's inner loop rebuilt step by step, each line
// adding one kind of work, timed as G instructions per second and as G int8
// multiply-adds per second (the unit the 8:1 decode ceiling is computed in,
// bench/serve_load.sh).
//   lane_loop_bench [-r ROUNDS] [-n ITERATIONS]
// AVX-512 VNNI lines (the avx512 variant, G vpdpbusd/s, 64 multiply-adds
// each): (1) independent vpdpbusd, 8 accumulators (one per token), weights
// and activations in registers: the unit's peak; (2) each token's 4
// activation bytes broadcast from memory, as the kernel does; (3) with the
// per-block float steps the batch-invariant contract fixes (vpsubd,
// vcvtdq2ps, vmulps, vfmadd on a chain in memory, per 16 rows, token and
// block); (4) with the weights loaded as nibbles and unpacked; (5) as (4)
// but two 16-row tiles per pass sharing each broadcast (the kernel from 4
// tokens on).
// AVX2 lines (the avx2 variant, 8 rows per ymm, G vpmaddubsw/s, 32
// multiply-adds each), the same steps: (1) vpmaddubsw + vpaddw into 8 int16
// pair sums, registers only; (2) activations broadcast from memory; (3)
// with the per-block steps (vpmaddwd to the exact int32 sum, then the float
// steps of (3) above, per 8 rows); (4) weights unpacked from nibbles.
// Medians over ROUNDS interleaved rounds. Two key=value lines close it, in
// G int8 multiply-adds/s per core, for the variant the engine picks on this
// CPU: peak_macs_per_core_g (its line (1): no int8 kernel of that ISA
// passes it) and loop_macs_per_core_g (the kernel's whole loop: VNNI (5),
// AVX2 (4)).
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

// Token t's 4 activation bytes of step s, as the kernels broadcast them.
inline int32_t activation_step(int t, int s) {
  int32_t v;
  std::memcpy(&v, &g_x[t][4 * s], 4);
  return v;
}

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
        if constexpr (kMode >= 2) xb = _mm512_set1_epi32(activation_step(t, s));
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

// The AVX2 lines: one 8-row half of a tile per pass, as LaneVec8 reads it
// (8 int16 pair sums, the step's weights and a broadcast in 10 of the 16
// ymm). kMode picks the line.
template <int kMode>
__attribute__((target("avx2,fma"), noinline)) int64_t run_loop_avx2(int64_t blocks) {
  __m256i pairs[kTokens];
  __m256i xr[kTokens];
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t) {
    xr[t] = _mm256_set1_epi32(t + 1);
    pairs[t] = _mm256_setzero_si256();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < blocks; ++b) {
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      __m256i w;
      if constexpr (kMode >= 4) {
        const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(g_w[s % 4]));
        w = s < 4 ? _mm256_and_si256(raw, m4) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
      } else {
        w = _mm256_load_si256(reinterpret_cast<const __m256i*>(g_w[s]));
      }
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        __m256i xb = xr[t];
        if constexpr (kMode >= 2) xb = _mm256_set1_epi32(activation_step(t, s));
        pairs[t] = _mm256_add_epi16(pairs[t], _mm256_maddubs_epi16(w, xb));
        asm("" : "+x"(pairs[t]));  // step order, as LaneVec8::keep
      }
    }
    if constexpr (kMode >= 3) {
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        const __m256i sum = _mm256_madd_epi16(pairs[t], ones);
        const __m256i gs8 = _mm256_set1_epi32(g_gs8[t]);
        const __m256 gd = _mm256_set1_ps(g_f[1][t]);
        const __m256 d = _mm256_mul_ps(_mm256_load_ps(g_f[0]), gd);
        float* chain = g_f[8 + t];
        const __m256 exact = _mm256_cvtepi32_ps(_mm256_sub_epi32(sum, gs8));
        _mm256_store_ps(chain, _mm256_fmadd_ps(exact, d, _mm256_load_ps(chain)));
        pairs[t] = _mm256_setzero_si256();
      }
    }
    __asm__ volatile("" : "+r"(b)::"memory");
  }
  int64_t check = 0;
  for (int t = 0; t < kTokens; ++t) {
    alignas(32) int16_t lanes[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), pairs[t]);
    for (int16_t v : lanes) check += v;
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
  const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vnni");
  if (!vnni && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    std::fprintf(stderr, "lane_loop_bench: this CPU has neither AVX-512 VNNI nor AVX2\n");
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
    int ops_per_block;  // vpdpbusd or vpmaddubsw per iteration
    int macs_per_op;    // int8 multiply-adds per instruction
  };
  std::vector<Line> lines;
  if (vnni) {
    lines.insert(lines.end(), {
                                  {"(1) vpdpbusd, registers only", run_loop<1>, 64, 64},
                                  {"(2) + activations broadcast from memory", run_loop<2>, 64, 64},
                                  {"(3) + per-block float steps", run_loop<3>, 64, 64},
                                  {"(4) + weights unpacked from nibbles", run_loop<4>, 64, 64},
                                  {"(5) as (4), two tiles per broadcast", run_loop<5>, 128, 64},
                              });
  }
  lines.insert(lines.end(), {
                                {"AVX2 (1) vpmaddubsw + vpaddw, registers only", run_loop_avx2<1>, 64, 32},
                                {"AVX2 (2) + activations broadcast from memory", run_loop_avx2<2>, 64, 32},
                                {"AVX2 (3) + per-block vpmaddwd and float steps", run_loop_avx2<3>, 64, 32},
                                {"AVX2 (4) + weights unpacked from nibbles", run_loop_avx2<4>, 64, 32},
                            });
  std::vector<std::vector<double>> rates(lines.size());
  int64_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto t0 = tc::bench::Clock::now();
      sink += lines[i].fn(blocks);
      const double s = tc::bench::seconds_since(t0);
      rates[i].push_back(static_cast<double>(blocks) * lines[i].ops_per_block / s / 1e9);
    }
  }
  std::printf("# 8 tokens per pass, one core, median of %d rounds (checksum %lld)\n\n", rounds,
              static_cast<long long>(sink));
  std::printf("| loop | G instructions/s | G int8 multiply-adds/s |\n| --- | ---: | ---: |\n");
  std::vector<double> macs(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const double ops = tc::bench::median(rates[i]);
    macs[i] = ops * lines[i].macs_per_op;
    std::printf("| %s | %.2f | %.1f |\n", lines[i].name, ops, macs[i]);
  }
  // The lines of the variant the engine picks here: the widest ISA's (1),
  // and its whole loop ((5) with VNNI, the 8-token kernel's tile pairs; AVX2
  // (4)). Lines for bench/serve_load.sh's ceiling of the 8:1 decode ratio.
  const size_t loop_line = vnni ? 4 : 3;
  std::printf("\npeak_macs_per_core_g=%.2f (%s, line (1))\n", macs[0], vnni ? "vpdpbusd zmm" : "vpmaddubsw ymm");
  std::printf("loop_macs_per_core_g=%.2f (%s)\n", macs[loop_line], lines[loop_line].name);
  return 0;
}
