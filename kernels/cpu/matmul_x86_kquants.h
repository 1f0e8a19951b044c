// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// kernels for Q2_K, Q3_K, Q5_K and IQ4_XS against Q8_256 activations, in
// the framework of matmul_x86_quant.h and the manner of OpsQ4_K /
// OpsQ6_K (matmul_x86_superblock.h): a super-block of a row is unpacked once into bytes and int16
// scales, then each token's exact int32 sums (vpmaddubsw pairs kept below
// int16 saturation, vpmaddwd with the scales) are converted and added by
// two FMAs per super-block (Q2_K), or reduced to the super-block's totals
// in Q4_K's lane order (Q3_K, Q5_K, IQ4_XS). The same integer lanes
// in the avx2 and avx512 variants, and the same order on every path: an
// output's bits depend on dtype and n_in only.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_superblock.h"
#include "kernels/cpu/matmul_x86_quant32.h"

namespace tc::kernels::detail {
namespace {

// Bit kFrom of every byte of v moved to bit kTo, the other bits 0. A 16-bit
// shift by |kFrom - kTo| < 8 brings the high byte's bit kFrom to its own
// bit kTo as it does the low byte's, so masking per byte is exact.
template <int kFrom, int kTo>
TC_SIMD_INLINE __m256i move_bit(__m256i v) {
  constexpr int kShift = kFrom - kTo;
  __m256i s = v;
  if constexpr (kShift > 0) s = _mm256_srli_epi16(v, kShift);
  if constexpr (kShift < 0) s = _mm256_slli_epi16(v, -kShift);
  return _mm256_and_si256(s, _mm256_set1_epi8(static_cast<char>(1 << kTo)));
}

// Bits 2k..2k+1 of every byte of v (k < 4), as 0..3.
template <int k>
TC_SIMD_INLINE __m256i two_bits(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 2 * k), _mm256_set1_epi8(0x03));
}

// 16 int16 scales (one per 16-element sub-block) spread for the 32-element
// vector c: 8 x scale 2c in the low 128 bits, 8 x scale 2c + 1 in the high
// ones (vpmaddwd pairs lie within one sub-block). Scales 0-7 and 8-15 are
// each copied to both halves once; then one in-lane vpshufb per vector.
TC_SIMD_INLINE void spread_sub16_scales(__m256i sc16, __m256i (&sc)[8]) {
  const __m256i lo = _mm256_permute2x128_si256(sc16, sc16, 0x00);
  const __m256i hi = _mm256_permute2x128_si256(sc16, sc16, 0x11);
  // Bytes of int16 0 (low half) and int16 1 (high half), 8 times each.
  const __m256i first = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2,
                                         3, 2, 3, 2, 3);
  for (int c = 0; c < 8; ++c) {
    const __m256i pick = _mm256_add_epi8(first, _mm256_set1_epi8(static_cast<char>(4 * (c % 4))));
    sc[c] = _mm256_shuffle_epi8(c < 4 ? lo : hi, pick);
  }
}

// Ops::finish_token of Q2_K: d dx sum(sc q x) -
// dmin dx sum(m sum16) added to acc, from an unpacked W with q (8 vectors
// of quants), sc (their int16 scales, spread for vpmaddwd), mins (int16,
// one per 16 activations), d and dmin, and isum = scaled_dot8(q, sc, x).
template <class W>
TC_SIMD_INLINE void token_with_mins(__m256& acc, const W& u, const XRow& x, int64_t b, __m256i isum) {
  const __m256i msum = _mm256_madd_epi16(u.mins, load32(x.sum16 + 16 * b));
  const float dx = x.d[b];
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(u.d * dx), acc);
  acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(u.dmin * dx), acc);
}

// Q2_K's: one super-block per unit, 4 per chunk (GEMM order:
// run_unpacked_gemm in matmul_x86_superblock_gemm.h).
struct OpsSuperBlock : OpsSuperBlockBase {
  static constexpr int64_t kUnit = 1;
};

// Q2_K: x = d sc q - dmin m over 16-element sub-blocks, q 0..3 (pairs
// within 2 * 3 * 127).
struct OpsQ2_K : OpsSuperBlock {
  using Block = BlockQ2_K;
  struct W {
    __m256i q[8];   // vector c: elements 32c..32c+31, 0..3
    __m256i sc[8];  // spread_sub16_scales of the 4-bit scales
    __m256i mins;   // the 16 4-bit mins as int16
    float d, dmin;
  };
  TC_SIMD_INLINE static void unpack(const BlockQ2_K* blk, W& w) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    spread_sub16_scales(_mm256_cvtepu8_epi16(_mm_and_si128(packed, m4)), w.sc);
    w.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
    // Element 128h + 32k + l: bits 2k of qs[32h + l].
    for (int h = 0; h < 2; ++h) {
      const __m256i v = loadu32(blk->qs + 32 * h);
      w.q[4 * h + 0] = two_bits<0>(v);
      w.q[4 * h + 1] = two_bits<1>(v);
      w.q[4 * h + 2] = two_bits<2>(v);
      w.q[4 * h + 3] = two_bits<3>(v);
    }
    w.d = _cvtsh_ss(blk->d);
    w.dmin = _cvtsh_ss(blk->dmin);
  }
  // One token's sums over super-block b of a row, unpacked in u, added to acc.
  TC_SIMD_INLINE static void token(__m256& acc, const W& u, const XRow& x, int64_t b) {
    token_with_mins(acc, u, x, b, scaled_dot8(u.q, u.sc, x.qs + kQK_K * b));
  }
  // The same from the token's scaled_dot8 sums.
  TC_SIMD_INLINE static void finish_token(__m256& acc, const W& u, const XRow& x, int64_t b, __m256i isum) {
    token_with_mins(acc, u, x, b, isum);
  }
  template <int R, int T>
  TC_SIMD_INLINE static void unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, const Prep (&)[R][T],
                                  int64_t b0, int64_t i, int64_t) {
    superblock_unit<OpsQ2_K, R, T>(acc, w, x, b0 + i);
  }
};

// Q3_K: x = d (sc - 32) (q - 4) over 16-element sub-blocks, q 0..7: the
// products of q (pairs within 2 * 7 * 127), then 4 sum(sc * sum16) off; in
// Q4_K's lane order (as Q6_K's), without mins, so that its lane tiles
// (matmul_x86_q3k_lanes_avx2.h) give the same bits.
struct OpsQ3_K : OpsSuperBlockLanes<OpsQ3_K> {
  using Block = BlockQ3_K;
  static constexpr bool kMins = false;
  struct W {
    __m256i q[8];   // vector c: elements 32c..32c+31, 0..7
    __m256i sc[8];  // spread_sub16_scales of the signed scales
    __m256i sc16;   // the 16 signed scales as int16
  };
  TC_SIMD_INLINE static void unpack(const BlockQ3_K* blk, W& w) {
    // The 6-bit scales: low nibbles of 0-7 in bytes 0-7, of 8-15 in their
    // high nibbles; top two bits of j in bits 2 (j / 4) of byte 8 + j % 4.
    uint32_t a[3];
    std::memcpy(a, blk->scales, 12);
    constexpr uint32_t kLow = 0x0f0f0f0f, kTop = 0x03030303;
    const uint32_t s0 = (a[0] & kLow) | (((a[2] >> 0) & kTop) << 4);         // scales 0-3
    const uint32_t s1 = (a[1] & kLow) | (((a[2] >> 2) & kTop) << 4);         // 4-7
    const uint32_t s2 = ((a[0] >> 4) & kLow) | (((a[2] >> 4) & kTop) << 4);  // 8-11
    const uint32_t s3 = ((a[1] >> 4) & kLow) | (((a[2] >> 6) & kTop) << 4);  // 12-15
    const __m128i stored = _mm_setr_epi32(static_cast<int>(s0), static_cast<int>(s1), static_cast<int>(s2),
                                          static_cast<int>(s3));
    w.sc16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(stored, _mm_set1_epi8(32)));
    spread_sub16_scales(w.sc16, w.sc);
    // Low bits as Q2_K's; the 3rd bit of element 32c + l is bit c of hmask[l].
    const __m256i hm = loadu32(blk->hmask);
    const __m256i v0 = loadu32(blk->qs), v1 = loadu32(blk->qs + 32);
    w.q[0] = _mm256_or_si256(two_bits<0>(v0), move_bit<0, 2>(hm));
    w.q[1] = _mm256_or_si256(two_bits<1>(v0), move_bit<1, 2>(hm));
    w.q[2] = _mm256_or_si256(two_bits<2>(v0), move_bit<2, 2>(hm));
    w.q[3] = _mm256_or_si256(two_bits<3>(v0), move_bit<3, 2>(hm));
    w.q[4] = _mm256_or_si256(two_bits<0>(v1), move_bit<4, 2>(hm));
    w.q[5] = _mm256_or_si256(two_bits<1>(v1), move_bit<5, 2>(hm));
    w.q[6] = _mm256_or_si256(two_bits<2>(v1), move_bit<6, 2>(hm));
    w.q[7] = _mm256_or_si256(two_bits<3>(v1), move_bit<7, 2>(hm));
  }
  // Lanes summing to T: scaled_dot8's less 4 sum over sub-blocks of scale
  // times sum(x).
  TC_SIMD_INLINE static __m256i total_lanes(const W& u, const XRow& x, int64_t b, __m256i isum) {
    return _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(u.sc16, load32(x.sum16 + 16 * b)), 2));
  }
};

// Q5_K: as Q4_K with the 5th bit of element 32j + l in bit j of qh[l]
// (q 0..31, pairs within 2 * 31 * 127), in Q4_K's lane order.
struct OpsQ5_K : OpsSuperBlockLanes<OpsQ5_K> {
  using Block = BlockQ5_K;
  static constexpr bool kMins = true;
  using W = OpsQ4_K::W;  // its quants 0..31
  TC_SIMD_INLINE static void unpack(const BlockQ5_K* blk, W& w) {
    unpack_k4_scales(blk->scales, w.sc, w.mins);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i qh = loadu32(blk->qh);
    const __m256i v0 = loadu32(blk->qs), v1 = loadu32(blk->qs + 32);
    const __m256i v2 = loadu32(blk->qs + 64), v3 = loadu32(blk->qs + 96);
    w.q[0] = _mm256_or_si256(_mm256_and_si256(v0, m4), move_bit<0, 4>(qh));
    w.q[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v0, 4), m4), move_bit<1, 4>(qh));
    w.q[2] = _mm256_or_si256(_mm256_and_si256(v1, m4), move_bit<2, 4>(qh));
    w.q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v1, 4), m4), move_bit<3, 4>(qh));
    w.q[4] = _mm256_or_si256(_mm256_and_si256(v2, m4), move_bit<4, 4>(qh));
    w.q[5] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v2, 4), m4), move_bit<5, 4>(qh));
    w.q[6] = _mm256_or_si256(_mm256_and_si256(v3, m4), move_bit<6, 4>(qh));
    w.q[7] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v3, 4), m4), move_bit<7, 4>(qh));
  }
};

// IQ4_XS: x = d (sc - 32) level over 32-element sub-blocks; the signed
// levels meet x as |level| times x with the level's sign (pairs within
// 2 * 127 * 127); in Q4_K's lane order, without mins.
struct OpsIQ4_XS : OpsSuperBlockLanes<OpsIQ4_XS> {
  using Block = BlockIQ4_XS;
  static constexpr bool kMins = false;
  struct W {
    __m256i q[8];   // sub-block j: the levels of elements 32j..32j+31
    __m256i sc[8];  // int16 scale of sub-block j (sc - 32), broadcast
  };
  TC_SIMD_INLINE static void unpack(const BlockIQ4_XS* blk, W& w) {
    // The 8 scales as int16: low nibbles from scales_l (sub-block j: nibble
    // j % 2 of byte j / 2), top bits j of scales_h moved to the top of lane
    // j by a multiply with 2^(14 - 2j), then down to bits 4-5.
    uint32_t low_bytes;
    std::memcpy(&low_bytes, blk->scales_l, sizeof low_bytes);
    const __m128i m4 = _mm_set1_epi8(0x0f);
    const __m128i packed = _mm_cvtsi32_si128(static_cast<int>(low_bytes));
    const __m128i low = _mm_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_and_si128(packed, m4),
                                                            _mm_and_si128(_mm_srli_epi16(packed, 4), m4)));
    const __m128i top = _mm_srli_epi16(
        _mm_mullo_epi16(_mm_set1_epi16(static_cast<short>(blk->scales_h)),
                        _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1)),
        14);
    const __m128i scales = _mm_sub_epi16(_mm_or_si128(low, _mm_slli_epi16(top, 4)), _mm_set1_epi16(32));
    const __m256i sc2 = _mm256_broadcastsi128_si256(scales);
    const __m256i table = iq4_table();
    for (int j = 0; j < 8; ++j) {
      w.sc[j] = _mm256_shuffle_epi8(sc2, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * j)));
      w.q[j] = _mm256_shuffle_epi8(table, nibbles32(blk->qs + 16 * j));
    }
  }
  // One sub-block's signed levels q against the activations xv, scaled:
  // the int32 lane sums of sc * q * x.
  TC_SIMD_INLINE static __m256i dot32(__m256i q, __m256i sc, __m256i xv) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xv, q)), sc);
  }
};

}  // namespace
}  // namespace tc::kernels::detail
