// Internal to sparse_ffn_x86.h (included in its middle, after its own
// dequantizers and their helpers): the axpy dequantizers of Q4_1, Q5_0,
// Q5_1, IQ4_NL, MXFP4, Q2_K, Q3_K, Q5_K and IQ4_XS, with the half() /
// byte_of() interface described there. Each gives dequantize_row's exact f32 values:
// the products below are exact (a scale of at most 17 significant bits
// times a quant of at most 7), and where dequantize_row adds an offset the
// one rounding of the add is the same here (the file is built with
// -ffp-contract=off).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace tc::kernels::detail {
namespace {

// The 32 bytes of q (element order) as four int32 vectors of 8, zero- or
// sign-extended.
template <bool kSigned>
TC_AXPY_INLINE void bytes_to_i32(__m256i q, __m256i* out) {
  const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int v = 0; v < 4; ++v) out[v] = kSigned ? _mm256_cvtepi8_epi32(parts[v]) : _mm256_cvtepu8_epi32(parts[v]);
}

// The 32 nibbles of a block packed as Q4_0's as bytes in element order.
TC_AXPY_INLINE __m256i axpy_nibbles32(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0f));
}

// 0x10 in byte i where bit i of the little-endian uint32 at qh is set.
TC_AXPY_INLINE __m256i axpy_fifth_bits32(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                                                0x0303030303030303));
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Bits [shift, shift + width) of every byte of v, as 0..2^width - 1 (a
// 16-bit shift then a per-byte mask: exact for shift < 8).
TC_AXPY_INLINE __m256i byte_bits(__m256i v, int shift, int mask) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(static_cast<char>(mask)));
}

TC_AXPY_INLINE __m256i iq4_levels(__m256i idx) {
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  return _mm256_shuffle_epi8(table, idx);
}

// ---- 32-element blocks: half h of tile c is block c / 32 + h ----

template <class Block>
struct Deq32Base {
  static constexpr int64_t kBlock = 32;
  static constexpr int64_t byte_of(int64_t c) { return c / 32 * static_cast<int64_t>(sizeof(Block)); }
  static TC_AXPY_INLINE const Block& block(const std::byte* row, int64_t c, int h) {
    return reinterpret_cast<const Block*>(row)[c / 32 + h];
  }
};

// x = q * d + m (the product exact, one rounding in the add).
template <class Block, bool kFive>
struct DeqOffset32 : Deq32Base<Block> {
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const Block& blk = Deq32Base<Block>::block(row, c, h);
    __m256i q = axpy_nibbles32(blk.qs);
    if constexpr (kFive) q = _mm256_or_si256(q, axpy_fifth_bits32(blk.qh));
    __m256i lanes[4];
    bytes_to_i32<false>(q, lanes);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d)), m = _mm256_set1_ps(_cvtsh_ss(blk.m));
    for (int v = 0; v < 4; ++v) w[v] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(lanes[v]), d), m);
  }
};
using DeqQ4_1 = DeqOffset32<BlockQ4_1, false>;
using DeqQ5_1 = DeqOffset32<BlockQ5_1, true>;

struct DeqQ5_0 : Deq32Base<BlockQ5_0> {
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ5_0& blk = block(row, c, h);
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(axpy_nibbles32(blk.qs), axpy_fifth_bits32(blk.qh)),
                                      _mm256_set1_epi8(16));
    __m256i lanes[4];
    bytes_to_i32<true>(q, lanes);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d));
    for (int v = 0; v < 4; ++v) w[v] = _mm256_mul_ps(_mm256_cvtepi32_ps(lanes[v]), d);
  }
};

struct DeqIQ4_NL : Deq32Base<BlockIQ4_NL> {
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockIQ4_NL& blk = block(row, c, h);
    __m256i lanes[4];
    bytes_to_i32<true>(iq4_levels(axpy_nibbles32(blk.qs)), lanes);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d));
    for (int v = 0; v < 4; ++v) w[v] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(lanes[v]));
  }
};

// x = 2^(e - 128) * level: exact (a power of two times a level of at most
// 4 significant bits, subnormal scales included), as dequantize_row's.
struct DeqMXFP4 : Deq32Base<BlockMXFP4> {
  // e8m0_to_f32_half's bits, inlined: a call per half tile would cost.
  static TC_AXPY_INLINE float scale(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockMXFP4& blk = block(row, c, h);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Values)));
    __m256i lanes[4];
    bytes_to_i32<true>(_mm256_shuffle_epi8(table, axpy_nibbles32(blk.qs)), lanes);
    const __m256 d = _mm256_set1_ps(scale(blk.e));
    for (int v = 0; v < 4; ++v) w[v] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(lanes[v]));
  }
};

// ---- super-blocks: half h of tile c is elements e = c % 256 + 32h.. of
// block c / 256 ----

template <class Block>
struct Deq256Base {
  static constexpr int64_t kBlock = kQK_K;
  static constexpr int64_t byte_of(int64_t c) { return c * static_cast<int64_t>(sizeof(Block)) / kQK_K; }
  static TC_AXPY_INLINE const Block& block(const std::byte* row, int64_t c) {
    return reinterpret_cast<const Block*>(row)[c / kQK_K];
  }
  static TC_AXPY_INLINE int first(int64_t c, int h) { return static_cast<int>(c % kQK_K) + 32 * h; }
};

// Q2_K / Q3_K: the low 2 bits of elements e..e+31 (e a multiple of 32).
TC_AXPY_INLINE __m256i low_2bits32(const uint8_t* qs, int e) {
  return byte_bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (e / 128))), 2 * ((e % 128) / 32), 3);
}

struct DeqQ2_K : Deq256Base<BlockQ2_K> {
  // x = (d sc) q - dmin m per 16-element sub-block: vectors 0-1 sub-block
  // e / 16, vectors 2-3 the next.
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ2_K& blk = block(row, c);
    const int e = first(c, h);
    __m256i lanes[4];
    bytes_to_i32<false>(low_2bits32(blk.qs, e), lanes);
    const float d = _cvtsh_ss(blk.d), dmin = _cvtsh_ss(blk.dmin);
    for (int k = 0; k < 2; ++k) {
      const uint8_t sc = blk.scales[e / 16 + k];
      const __m256 dl = _mm256_set1_ps(d * static_cast<float>(sc & 0x0f));
      const __m256 ml = _mm256_set1_ps(dmin * static_cast<float>(sc >> 4));
      for (int v = 2 * k; v < 2 * k + 2; ++v) w[v] = _mm256_sub_ps(_mm256_mul_ps(dl, _mm256_cvtepi32_ps(lanes[v])), ml);
    }
  }
};

struct DeqQ3_K : Deq256Base<BlockQ3_K> {
  // x = (d (sc - 32)) (q - 4), the 3rd bit of element e + l in bit e / 32
  // of hmask[l].
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ3_K& blk = block(row, c);
    const int e = first(c, h);
    const __m256i high = byte_bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.hmask)), e / 32, 1);
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low_2bits32(blk.qs, e), _mm256_slli_epi16(high, 2)),
                                      _mm256_set1_epi8(4));
    __m256i lanes[4];
    bytes_to_i32<true>(q, lanes);
    const float d = _cvtsh_ss(blk.d);
    for (int k = 0; k < 2; ++k) {
      const int j = e / 16 + k;
      const int low = j < 8 ? blk.scales[j] & 0x0f : blk.scales[j - 8] >> 4;
      const int sc = (low | (((blk.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const __m256 dl = _mm256_set1_ps(d * static_cast<float>(sc));
      for (int v = 2 * k; v < 2 * k + 2; ++v) w[v] = _mm256_mul_ps(dl, _mm256_cvtepi32_ps(lanes[v]));
    }
  }
};

struct DeqQ5_K : Deq256Base<BlockQ5_K> {
  // Tile c is chunk j of the block: half h is sub-block 2j + h, nibble h of
  // qs[32j + l] and bit 2j + h of qh[l]; x = (d sc) q - dmin m.
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ5_K& blk = block(row, c);
    const int j = static_cast<int>(c % kQK_K) / 64;
    const __m256i low = byte_bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * j)), 4 * h, 0x0f);
    const __m256i high = byte_bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh)), 2 * j + h, 1);
    __m256i lanes[4];
    bytes_to_i32<false>(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), lanes);
    int sc, m;
    q4_K_scale_min(blk.scales, 2 * j + h, sc, m);
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(blk.d) * static_cast<float>(sc));
    const __m256 min = _mm256_set1_ps(_cvtsh_ss(blk.dmin) * static_cast<float>(m));
    for (int v = 0; v < 4; ++v) w[v] = _mm256_sub_ps(_mm256_mul_ps(scale, _mm256_cvtepi32_ps(lanes[v])), min);
  }
};

struct DeqIQ4_XS : Deq256Base<BlockIQ4_XS> {
  // Half h of tile c is sub-block e / 32: x = (d (sc - 32)) level.
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockIQ4_XS& blk = block(row, c);
    const int j = first(c, h) / 32;
    const int ls = ((blk.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((blk.scales_h >> (2 * j)) & 3) << 4);
    const __m256 dl = _mm256_set1_ps(_cvtsh_ss(blk.d) * static_cast<float>(ls - 32));
    __m256i lanes[4];
    bytes_to_i32<true>(iq4_levels(axpy_nibbles32(blk.qs + 16 * j)), lanes);
    for (int v = 0; v < 4; ++v) w[v] = _mm256_mul_ps(dl, _mm256_cvtepi32_ps(lanes[v]));
  }
};

}  // namespace
}  // namespace tc::kernels::detail
