// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): what
// the Q3_K, Q6_K and IQ4_XS lane-tile kernels share
// (matmul_x86_q3k_lanes_avx2.h, matmul_x86_q6k_lanes_avx2.h,
// matmul_x86_iq4xs_lanes_avx2.h). All keep one scale per sub-block and no
// mins, and finish a chunk of 4 super-blocks the same way; they differ in
// how a super-block's constants and integer totals are made. K (the
// kernel) gives:
//   K::Consts                        one 8-row half's constants of a
//                                    super-block, with `d` (row j's d in lane j)
//   K::totals<H, T>(src, c, xq, x16, total)
//                                    the exact int32 totals of one super-block
//                                    for H halves (c[0..H)) and T tokens
//   K::kTokens                       tokens per pass over a half (4)
// The float steps are the super-block lane order (matmul_x86_superblock.h)
// lane by lane over the rows: per chunk, v_s = fma(float(T_s), d_s * dx_s,
// +0) (+0 past the row's end), the chunk's sum (v0 + v1) + (v2 + v3), stored
// on a row's first chunk and added after.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

// total[t][h] -= 2^kShift sum_i sc_i sum16_i(x) for every row: the
// levels' offset (Q3_K 4, Q6_K 32) taken off through the token's 16-element
// sums, c[h].pair[i] holding each row's (sc_2i, sc_2i+1) as int16.
template <int kShift, int H, int T, class Consts>
TC_SIMD_INLINE void k16_lane_offset(const Consts* c, const int16_t* const (&x16)[T], __m256i (&total)[T][H]) {
  for (int t = 0; t < T; ++t) {
    __m256i bias[H];  // sum sc sum16(x) of each row
    for (int h = 0; h < H; ++h) bias[h] = _mm256_setzero_si256();
    for (int i = 0; i < 8; ++i) {
      int32_t pair;
      std::memcpy(&pair, x16[t] + 2 * i, 4);
      const __m256i xi = _mm256_set1_epi32(pair);
      for (int h = 0; h < H; ++h) bias[h] = _mm256_add_epi32(bias[h], _mm256_madd_epi16(c[h].pair[i], xi));
    }
    for (int h = 0; h < H; ++h) total[t][h] = _mm256_sub_epi32(total[t][h], _mm256_slli_epi32(bias[h], kShift));
  }
}

// One pass over a tile's chunk (count super-blocks from sb0) for H halves
// from h0 and tokens t0..t0 + T - 1, super-block s's constants from
// consts_of(s) (K::Consts[2]) and weights from src(s): their outputs' chunk
// sums stored (first chunk) or added.
template <class K, int H, int T, class ConstsOf, class SrcOf>
TC_SIMD_INLINE void k16_lane_pass(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t count,
                                  const ConstsOf& consts_of, int h0, int64_t t0, const SrcOf& src) {
  __m256 v[4][T][H];
  for (int s = 0; s < 4; ++s) {
    if (s >= count) {
      for (int t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) v[s][t][h] = _mm256_setzero_ps();
      }
      continue;
    }
    const int8_t* xq[T];
    const int16_t* x16[T];
    float dx[T];
    for (int t = 0; t < T; ++t) {
      const XRow x = x_row(a, t0 + t);
      xq[t] = x.qs + kQK_K * (sb0 + s);
      x16[t] = x.sum16 + 16 * (sb0 + s);
      dx[t] = x.d[sb0 + s];
    }
    __m256i total[T][H];
    decltype(auto) c = consts_of(s);
    K::template totals<H, T>(src(s), c + h0, xq, x16, total);
    for (int t = 0; t < T; ++t) {
      const __m256 vdx = _mm256_set1_ps(dx[t]);
      for (int h = 0; h < H; ++h) {
        v[s][t][h] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[t][h]), _mm256_mul_ps(c[h0 + h].d, vdx), _mm256_setzero_ps());
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      const __m256 sum = _mm256_add_ps(_mm256_add_ps(v[0][t][h], v[1][t][h]), _mm256_add_ps(v[2][t][h], v[3][t][h]));
      float* y = a.y + (t0 + t) * a.n_out + rt + 8 * (h0 + h);
      _mm256_storeu_ps(y, sb0 == 0 ? sum : _mm256_add_ps(_mm256_loadu_ps(y), sum));
    }
  }
}

// Tokens [t0, t1) over one 8-row half h in as few passes of up to
// K::kTokens as there can be, of sizes as even as they can be (5 tokens:
// 3 + 2, not 4 + 1); c: the chunk's constants; src_of(first) gives the
// source of each super-block for the first pass or the others.
template <class K, class SrcOf>
TC_SIMD_INLINE void k16_lane_half(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t count,
                                  const typename K::Consts (&c)[4][2], int h, int64_t t0, int64_t t1,
                                  const SrcOf& src_of) {
  static_assert(K::kTokens == 4);
  using C2 = const typename K::Consts(&)[2];
  auto consts_of = [&c](int s) __attribute__((always_inline)) -> C2 { return c[s]; };
  const int64_t n = t1 - t0, passes = (n + K::kTokens - 1) / K::kTokens;
  int64_t t = t0;
  for (int64_t i = 0; i < passes; ++i) {
    const int64_t size = n / passes + (i < n % passes ? 1 : 0);
    const auto src = src_of(i == 0);
    if (size == 4) k16_lane_pass<K, 1, 4>(a, rt, sb0, count, consts_of, h, t, src);
    if (size == 3) k16_lane_pass<K, 1, 3>(a, rt, sb0, count, consts_of, h, t, src);
    if (size == 2) k16_lane_pass<K, 1, 2>(a, rt, sb0, count, consts_of, h, t, src);
    if (size == 1) k16_lane_pass<K, 1, 1>(a, rt, sb0, count, consts_of, h, t, src);
    t += size;
  }
}

// Outputs [r0, r1) of a matrix in 16-row tiles (below a.lane_rows), every
// token, chunk(rt, sb0, n_sb, t0, t1, prefetch) computing one tile's chunk
// of 4 super-blocks. GEMV order (decode, small batches): tile after tile,
// chunk after chunk, the stream prefetched; GEMM order: chunks outer, then
// blocks of kGemmBlockTokens tokens, then tiles. Each row gets its chunks in
// order either way.
template <class Chunk>
TC_SIMD_INLINE void k16_lane_sweep(const MatmulArgs& a, int64_t r0, int64_t r1, const Chunk& chunk) {
  constexpr int64_t kRows = 16;
  const int64_t n_sb = a.n_in / kQK_K;
  if (!gemm_order(a)) {
    for (int64_t rt = r0; rt < r1; rt += kRows) {
      for (int64_t sb0 = 0; sb0 < n_sb; sb0 += 4) chunk(rt, sb0, n_sb, 0, a.n_tokens, true);
    }
    return;
  }
  for (int64_t sb0 = 0; sb0 < n_sb; sb0 += 4) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kGemmBlockTokens) {
      const int64_t t1 = min64(a.n_tokens, t0 + kGemmBlockTokens);
      for (int64_t rt = r0; rt < r1; rt += kRows) chunk(rt, sb0, n_sb, t0, t1, false);
    }
  }
}

}  // namespace
}  // namespace tc::kernels::detail
