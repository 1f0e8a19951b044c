// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// Q8_0 decode loop (one token, one row at a time) of the avx512 variant,
// two blocks per zmm.
//
// Same bits as decode_row<OpsQ8_0>: there a row keeps two f32 chains of 8
// lanes, a0 for the even blocks of a chunk and a1 for the odd ones, lane s
// adding fma(float(sum of the 4 products of step s), dw * dx, chain). Here
// one zmm holds a0 in its low half and a1 in its high half, fed block 2k
// and block 2k + 1 at once; the same products, sums and FMAs per lane. The
// signs move from the weights to x with a mask instead of vpsignb (no zmm
// form): |w| * (x negated where w < 0) is the same integer product, and
// where w == 0 both forms multiply by |w| = 0.
#pragma once

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

// y (+)= one chunk [b0, b0 + nb) of a Q8_0 row against token x.
TC_SIMD_INLINE void q8_0_decode_chunk(const BlockQ8_0* blk, const XRow& x, int64_t b0, int64_t nb, float* y,
                                      bool first) {
  // dw * dx per block, as OpsQ8_0::prepare computes it.
  alignas(32) float d[kChunkBlocks32 + 1];
  for (int64_t g = 0; g < nb; g += kGroup) {
    _mm256_store_ps(d + g, _mm256_mul_ps(block_scales(blk + g, min64(kGroup, nb - g)), _mm256_loadu_ps(x.d + b0 + g)));
  }
  const __m512i pair_index = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc = _mm512_setzero_ps();
  auto pair = [&](__m512i q, __m512i xq, int64_t i) __attribute__((always_inline)) {
    const __m512i sx = _mm512_mask_sub_epi8(xq, _mm512_movepi8_mask(q), zero, xq);
    const __m512i s = _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(q), sx);
    // d[i] in the low 8 lanes, d[i + 1] in the high 8.
    const __m128 d2 = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(d + i)));
    const __m512 dd = _mm512_maskz_permutexvar_ps(0xffff, pair_index, _mm512_castps128_ps512(d2));
    acc = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, s), dd, acc);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    // Block i in the low half, i + 1 in the high half, by two masked loads
    // (faster than vinserti64x4 here, and GCC 12 warns on that one's
    // undefined operand).
    const __m512i q = _mm512_mask_loadu_epi64(_mm512_maskz_loadu_epi64(0x0f, blk[i].qs), 0xf0, blk[i + 1].qs - 32);
    pair(q, _mm512_loadu_si512(x.qs + 32 * (b0 + i)), i);
  }
  if (i < nb) {
    // A lone last block: the odd half multiplies zeros (|w| = 0, d = 0),
    // which leaves a1 as it was (a chain is never -0).
    d[i + 1] = 0.0f;
    pair(_mm512_maskz_loadu_epi64(0x0f, blk[i].qs), _mm512_maskz_loadu_epi64(0x0f, x.qs + 32 * (b0 + i)), i);
  }
  // a0 + a1, then store_tile's sum of 8 lanes. (Through memory: GCC 12
  // warns on the extract and cast intrinsics' undefined operands.)
  alignas(64) float halves[16];
  _mm512_store_ps(halves, acc);
  const float s = hsum8(_mm256_add_ps(_mm256_load_ps(halves), _mm256_load_ps(halves + 8)));
  *y = first ? s : *y + s;
}

// decode_row<OpsQ8_0> in zmm: output r against one token (dense rows).
inline void decode_row_q8_0_zmm(const MatmulArgs& a, int64_t r, const XRow& x) {
  constexpr int64_t K = kChunkBlocks32;
  const int64_t n_blocks = a.n_in / 32;
  const auto* blk = reinterpret_cast<const BlockQ8_0*>(weight_row(a, r));
  const RowStream stream(a, r);
  for (int64_t c0 = 0; c0 < n_blocks; c0 += K) {
    const int64_t nb = min64(K, n_blocks - c0);
    // As decode_row: the row kQuantDecodePrefetchBytes ahead.
    stream.prefetch_ahead(blk + c0, nb * static_cast<int64_t>(sizeof(BlockQ8_0)), kQuantDecodePrefetchBytes);
    q8_0_decode_chunk(blk + c0, x, c0, nb, a.y + r, c0 == 0);
  }
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
