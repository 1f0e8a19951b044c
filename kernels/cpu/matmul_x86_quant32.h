// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): byte
// helpers of the 32-element block formats (Q4_1, Q5_0, Q5_1, IQ4_NL, and
// IQ4_XS's sub-blocks): f16 fields of 8 blocks as f32, nibbles and 5th bits
// as bytes, the IQ4 table and a signed byte dot product. Their matmul
// kernels are in matmul_x86_group32.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

// The f16 field `Field` of up to 8 consecutive blocks as f32, zeros after
// nb: block_scales for any f16 member (lane i block i, or with kQ4Order
// block kQ4GroupOrder[i]), assembled in general-purpose registers the same
// way (narrow stores read back as one vector would stall store-to-load
// forwarding).
template <class Block, uint16_t Block::*Field, bool kQ4Order = false>
TC_SIMD_INLINE __m256 block_f16s(const Block* blk, int64_t nb) {
  uint64_t half[2] = {0, 0};
  auto put = [&](int64_t i) __attribute__((always_inline)) {
    const int64_t lane = kQ4Order ? i / 2 + 4 * (i % 2) : i;
    half[lane / 4] |= uint64_t{blk[i].*Field} << (16 * (lane % 4));
  };
  if (nb == 8) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; ++i) put(i);
  } else {
    for (int64_t i = 0; i < nb; ++i) put(i);
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(half[1]), static_cast<long long>(half[0])));
}

// The 32 nibbles of a block packed as Q4_0's (qs[j]: element j low,
// element j + 16 high) as unsigned bytes in element order.
TC_SIMD_INLINE __m256i nibbles32(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// 0x10 in byte i where bit i of the little-endian uint32 at qh is set, else 0.
TC_SIMD_INLINE __m256i fifth_bits32(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  // Byte i takes byte i / 8 of the bits, then keeps bit i % 8 of it.
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                                                0x0303030303030303));
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// The IQ4 levels (kIQ4NLValues) in both 128-bit halves, for vpshufb.
TC_SIMD_INLINE __m256i iq4_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
}

// Per-lane int32 sums of w * x over 32 signed weights w (|w| <= 127) and
// int8 x: |w| times x with w's sign, pairs within 2 * 127 * 127.
TC_SIMD_INLINE __m256i dot_s8s8(__m256i w, __m256i x) {
  return dot_u8s8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

}  // namespace
}  // namespace tc::kernels::detail
