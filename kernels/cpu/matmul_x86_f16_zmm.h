// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// F16 GEMM in zmm registers for the avx512 variants: every batch of two or
// more tokens over dense rows, and gathered rows in GEMM order. Other
// variants, and the rows and tokens left over from its tiles, take
// f16_rows_n.
//
// Small batches went to f16_rows_n's 2-row x 4-token ymm tiles before,
// which widen every weight and input at each use and were compute-bound
// from two tokens on (`matmul_bench -t 2 --isa avx512 --dtype f16 --batch
// 2,3,4,6 --no-gemm`, the Xeon, weights from DRAM: 4096 x 4096 took 1.8x,
// 1.9x, 2.1x and 3.6x the one-token time; these tiles take 0.90-0.96x, at
// the read bandwidth. With the weights in cache, 384 x 384 at 16 tokens:
// 54 against 130 GFLOP/s). One token keeps f16_decode_rows: these tiles
// read 1536 x 384 in 0.078 ms against its 0.046.
//
// Same bits as f16_rows (matmul_x86_f16.h): there an output is one chain of
// 8 f32 lanes over its whole row, fma(w[k..k+8), x[k..k+8), chain) per step
// of 8 inputs, then ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)). Here one zmm holds
// the chains of two rows for one token, row 2p in its low 8 lanes and row
// 2p + 1 in its high 8, so every lane takes the same FMAs in the same order;
// each half is then reduced by the same hsum8x4. The weights stay f16 (one
// 32-byte load of the pair's two 8-input steps widened by one vcvtph2ps),
// the token's 8 inputs come from the exact f32 copy that XFormat::F16 keeps
// (xf: the f16-rounded values) broadcast to both halves, so a step costs a
// conversion per row pair and none per token.
//
// Tile: 4 row pairs (8 rows) x 6 tokens = 24 accumulators, 4 weight
// registers and one broadcast: 29 of the 32 zmm registers.
#pragma once

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_x86_common.h"

namespace tc::kernels::detail {
namespace {

constexpr int kF16ZmmPairs = 4;   // row pairs per tile
constexpr int kF16ZmmTokens = 6;  // tokens per tile
// The zero-masked forms of the intrinsics below with every lane on: GCC 12
// warns on the plain forms' undefined pass-through operand.
constexpr __mmask16 kAll16 = 0xffff;

// Rows a and b, inputs [k, k + 8) widened: a in lanes 0-7, b in lanes 8-15
// (n < 8: the first n of each, zeros after).
TC_SIMD_INLINE __m512 f16_row_pair(const uint16_t* a, const uint16_t* b, int64_t k, int64_t n = 8) {
  if (n == 8) {
    return _mm512_maskz_cvtph_ps(kAll16, _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + k)),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k))));
  }
  const auto m = static_cast<__mmask8>((1u << n) - 1);
  return _mm512_maskz_cvtph_ps(kAll16, _mm256_set_m128i(_mm_maskz_loadu_epi16(m, b + k), _mm_maskz_loadu_epi16(m, a + k)));
}

// Inputs [k, k + 8) of an f32 row in both halves (n < 8: zeros after n).
TC_SIMD_INLINE __m512 f32x8_twice(const float* x, int64_t k, int64_t n = 8) {
  const __m256d v = n == 8 ? _mm256_loadu_pd(reinterpret_cast<const double*>(x + k))
                           : _mm256_castps_pd(_mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << n) - 1), x + k));
  return _mm512_castpd_ps(_mm512_maskz_broadcast_f64x4(0xff, v));
}

// acc[p][t] += step k of rows (2p, 2p + 1) x token t; token t's f32 inputs
// at x + t * xs.
template <int P, int T>
TC_SIMD_INLINE void f16_zmm_step(__m512 (&acc)[P][T], const uint16_t* const* w, const float* x, int64_t xs, int64_t k,
                                 int64_t n = 8) {
  __m512 wv[P];
  for (int p = 0; p < P; ++p) wv[p] = f16_row_pair(w[2 * p], w[2 * p + 1], k, n);
  for (int t = 0; t < T; ++t) {
    const __m512 xv = f32x8_twice(x + t * xs, k, n);
    for (int p = 0; p < P; ++p) acc[p][t] = _mm512_fmadd_ps(wv[p], xv, acc[p][t]);
  }
}

// The low and high 8 lanes of v.
TC_SIMD_INLINE __m256 low8(__m512 v) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0x0f, _mm512_castps_pd(v), 0));
}
TC_SIMD_INLINE __m256 high8(__m512 v) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0x0f, _mm512_castps_pd(v), 1));
}

// Whole rows of n inputs for 2P rows x T tokens, outputs stored to y (token
// t's row r at y[t * ys + r]).
template <int P, int T>
TC_SIMD_INLINE void f16_zmm_rows(const uint16_t* const* w, const float* x, int64_t xs, int64_t n, float* y,
                                 int64_t ys) {
  __m512 acc[P][T];
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  }
  const int64_t n_full = n / 8;
  for (int64_t s = 0; s < n_full; ++s) f16_zmm_step<P, T>(acc, w, x, xs, 8 * s);
  if (n % 8 != 0) f16_zmm_step<P, T>(acc, w, x, xs, 8 * n_full, n % 8);
  for (int t = 0; t < T; ++t) {
    float* yt = y + t * ys;
    int p = 0;
    for (; p + 2 <= P; p += 2) {
      _mm_storeu_ps(yt + 2 * p, hsum8x4(low8(acc[p][t]), high8(acc[p][t]), low8(acc[p + 1][t]), high8(acc[p + 1][t])));
    }
    for (; p < P; ++p) {
      yt[2 * p] = hsum8(low8(acc[p][t]));
      yt[2 * p + 1] = hsum8(high8(acc[p][t]));
    }
  }
}

// f16_zmm_rows for pp <= P row pairs and tt <= T tokens known at run time.
template <int P, int T>
void f16_zmm_rows_n(int pp, int tt, const uint16_t* const* w, const float* x, int64_t xs, int64_t n, float* y,
                    int64_t ys) {
  if constexpr (P > 1) {
    if (pp < P) return f16_zmm_rows_n<P - 1, T>(pp, tt, w, x, xs, n, y, ys);
  }
  if constexpr (T > 1) {
    if (tt < T) return f16_zmm_rows_n<P, T - 1>(pp, tt, w, x, xs, n, y, ys);
  }
  f16_zmm_rows<P, T>(w, x, xs, n, y, ys);
}

// Blocks of the GEMM order: rows (kF16ZmmBlockWBytes of f16 weights) x
// tokens (kF16ZmmBlockXBytes of f32 inputs), swept by the tiles; a row
// tile's 8 rows stay in L1 while its tokens pass, the block's tokens in L2.
constexpr int64_t kF16ZmmBlockWBytes = 192 << 10;
constexpr int64_t kF16ZmmBlockXBytes = 384 << 10;

// Outputs [r0, r0 + 2 * floor((r1 - r0) / 2)) for every token, x the
// XFormat::F16 prepared rows; returns the first output it left (an odd
// last row, for f16_rows_n).
inline int64_t run_f16_zmm(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int kRows = 2 * kF16ZmmPairs;
  const int64_t n_in = a.n_in;
  const int64_t n_out = a.n_out;
  const auto* x = reinterpret_cast<const float*>(a.xq + a.xl.f32_offset);
  const int64_t xs = a.xl.stride / static_cast<int64_t>(sizeof(float));
  const int64_t block_rows = std::max<int64_t>(
      kRows, kF16ZmmBlockWBytes / (n_in * static_cast<int64_t>(sizeof(uint16_t))) / kRows * kRows);
  const int64_t block_tokens = std::max<int64_t>(
      kF16ZmmTokens,
      kF16ZmmBlockXBytes / (n_in * static_cast<int64_t>(sizeof(float))) / kF16ZmmTokens * kF16ZmmTokens);
  const int64_t r_pairs = r0 + (r1 - r0) / 2 * 2;
  for (int64_t rb = r0; rb < r_pairs; rb += block_rows) {
    const int64_t re = std::min(rb + block_rows, r_pairs);
    for (int64_t tb = 0; tb < a.n_tokens; tb += block_tokens) {
      const int64_t te = std::min(tb + block_tokens, a.n_tokens);
      for (int64_t rt = rb; rt < re; rt += kRows) {
        const int rr = static_cast<int>(std::min<int64_t>(kRows, re - rt));
        const uint16_t* w[kRows];
        for (int i = 0; i < rr; ++i) w[i] = reinterpret_cast<const uint16_t*>(weight_row(a, rt + i));
        for (int64_t t0 = tb; t0 < te; t0 += kF16ZmmTokens) {
          const int tt = static_cast<int>(std::min<int64_t>(kF16ZmmTokens, te - t0));
          f16_zmm_rows_n<kF16ZmmPairs, kF16ZmmTokens>(rr / 2, tt, w, x + t0 * xs, xs, n_in, a.y + t0 * n_out + rt,
                                                       n_out);
        }
      }
    }
  }
  return r_pairs;
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
