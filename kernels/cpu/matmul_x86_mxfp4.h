// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): MXFP4
// weights (BlockMXFP4: an E8M0 exponent byte and 32 4-bit codes into
// kMXFP4Values) against Q8_32_NIB activations, in Q4_0's groups of 8 blocks
// (matmul_x86_quant.h, OpsQ4_0).
//
// A pair of blocks is one 32-byte vector of codes; one vpshufb per half
// turns codes into the levels plus 12 (0..24, unsigned, so no sign moves
// are needed before vpmaddubsw), each pair gives exact int32 lane sums, a
// transpose-and-add makes one exact sum per block, 12 * sum(x) is taken off
// as an integer, and one convert and one FMA scale all 8 blocks. Per block
// that is about half the vector work of one block at a time with signed
// levels (the form IQ4_NL keeps in matmul_x86_quant32.h), which is what
// decode waited on: 2 threads read MXFP4 at 67-71% of the read probe
// before (Zen 3).
//
// Every path (decode, gathered rows, small batches, GEMM tiles) runs these
// units through quant_chunk in one order, so an output's bits depend on
// n_in only.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>

#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

// The levels plus 12 (kMXFP4Values spans -12..12): unsigned, as vpmaddubsw
// takes its first operand; the 12 * sum(x) this adds is taken off per block.
constexpr std::array<int8_t, 16> kMXFP4Unsigned = [] {
  std::array<int8_t, 16> t{};
  for (int i = 0; i < 16; ++i) t[i] = static_cast<int8_t>(kMXFP4Values[i] + 12);
  return t;
}();

TC_SIMD_INLINE __m256i mxfp4_unsigned_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Unsigned.data())));
}

// The f32 factors 2^(e - 128) of up to 8 consecutive blocks (as
// e8m0_to_f32_half) in kQ4GroupOrder, zeros in the lanes of missing blocks.
// The exponent bytes are gathered in a general-purpose register as
// block_scales gathers f16 fields.
TC_SIMD_INLINE __m256 mxfp4_group_scales(const BlockMXFP4* blk, int64_t nb) {
  uint64_t bytes = 0;
  auto put = [&](int64_t i) __attribute__((always_inline)) {
    const int64_t lane = i / 2 + 4 * (i % 2);
    bytes |= uint64_t{blk[i].e} << (8 * lane);
  };
  if (nb == 8) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; ++i) put(i);
  } else {
    for (int64_t i = 0; i < nb; ++i) put(i);
  }
  const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes)));
  // e >= 2: the normal 2^(e - 128), biased exponent e - 1; e < 2: the
  // subnormals 2^-128 and 2^-127 (0x00200000 << e).
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i bits = _mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e));
  if (nb == 8) return _mm256_castsi256_ps(bits);
  // Lane j holds block kQ4GroupOrder[j]; e = 0 would read as 2^-128.
  const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nb)), _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
  return _mm256_castsi256_ps(_mm256_and_si256(bits, live));
}

// The unsigned levels of blocks 2k, 2k+1 in Q8_32_NIB's order (see
// q4_unpack_pair); a lone last block: its 32 in order in lo.
TC_SIMD_INLINE Q4Pair mxfp4_unpack_pair(const BlockMXFP4* blk, bool lone) {
  const __m256i table = mxfp4_unsigned_table();
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].qs));
  if (lone) {
    return {_mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v0, 4), v0), m4)),
            _mm256_setzero_si256()};
  }
  const __m256i v =
      _mm256_inserti128_si256(_mm256_castsi128_si256(v0), _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].qs)), 1);
  return {_mm256_shuffle_epi8(table, _mm256_and_si256(v, m4)),
          _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4))};
}

// Exact int32 partial sums of a pair against x at its first block: block 2k
// in the low 4 lanes, 2k+1 in the high 4 (a lone block: all in the low 4).
// Levels up to 24 keep vpmaddubsw's pairs, and two of them added, within
// int16 (4 * 24 * 127).
TC_SIMD_INLINE __m256i mxfp4_pair_dot(const Q4Pair& q, const int8_t* xq, bool lone) {
  if (lone) {
    const __m256i s = dot_u8s8(q.lo, load32(xq));
    return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1)));
  }
  return dot2_u8s8(q.lo, load32(xq), q.hi, load32(xq + 32));
}

// The exact int32 sum of each block of a group in kQ4GroupOrder from its
// four pairs' partial sums (missing pairs zero): a 4 x 4 transpose-and-add
// in each 128-bit half; lane k of the low half sums p[k]'s low 4 lanes.
// (Q4_0's int16 horizontal adds would overflow: 16 products of up to
// 24 * 127.)
TC_SIMD_INLINE __m256i mxfp4_group_sums(const __m256i (&p)[4]) {
  const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[0], p[1]), _mm256_unpackhi_epi32(p[0], p[1]));
  const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2], p[3]), _mm256_unpackhi_epi32(p[2], p[3]));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// acc += the group of blocks (pairs' partial sums p, missing ones zero) of
// one row and one token, with dw = mxfp4_group_scales and g the group's
// first block index into x's gd/gs8. 12 * sum(x) = gs8 + gs8 / 2, exact
// (gs8 is 8 * sum32).
TC_SIMD_INLINE __m256 mxfp4_group_fma(const __m256i (&p)[4], __m256 dw, const XRow& x, int64_t g, __m256 acc) {
  const __m256i gs8 = load32(x.gs8 + g);
  const __m256i exact = _mm256_sub_epi32(mxfp4_group_sums(p), _mm256_add_epi32(gs8, _mm256_srai_epi32(gs8, 1)));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(dw, _mm256_load_ps(x.gd + g)), acc);
}

struct OpsMXFP4 {
  using Block = BlockMXFP4;
  static constexpr int64_t kBlock = 32;
  static constexpr int64_t kChunkBlocks = kChunkBlocks32;
  static constexpr int64_t kUnit = kGroup;
  static constexpr int kGemvRows = 2;  // 2 rows x kGemvTokens tokens per small-batch tile
  struct Prep {};
  template <int R, int T>
  TC_SIMD_INLINE static void prepare(Prep (&)[R][T], const std::byte* const*, const XRow*, int64_t, int64_t) {}
  template <int R, int T>
  TC_SIMD_INLINE static void unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, const Prep (&)[R][T],
                                  int64_t b0, int64_t i, int64_t count) {
    const int64_t b = b0 + i;
    for (int r = 0; r < R; ++r) {
      const auto* blk = reinterpret_cast<const BlockMXFP4*>(w[r]) + b;
      Q4Pair q[4] = {};
      for (int k = 0; k < 4; ++k) {
        if (2 * k < count) q[k] = mxfp4_unpack_pair(blk + 2 * k, 2 * k + 1 == count);
      }
      const __m256 dw = mxfp4_group_scales(blk, count);
      for (int t = 0; t < T; ++t) {
        __m256i p[4];
        for (int k = 0; k < 4; ++k) {
          p[k] = 2 * k < count ? mxfp4_pair_dot(q[k], x[t].qs + 32 * (b + 2 * k), 2 * k + 1 == count)
                               : _mm256_setzero_si256();
        }
        acc[r][t] = mxfp4_group_fma(p, dw, x[t], b, acc[r][t]);
      }
    }
  }
  template <int R, int T>
  TC_SIMD_INLINE static void finish(__m256 (&)[R][T], const Prep (&)[R][T], const XRow*, int64_t, int64_t) {}
};

// GEMM order (run_packed_gemm): a tile of kPackRows rows x one chunk
// unpacked once, then swept by every tile of tokens; the units in
// OpsMXFP4's order (even groups, then odd ones), so the same bits.
struct PackMXFP4 {
  Q4Pair pair[kPackRows][kChunkBlocks32 / 2];     // pair k: blocks 2k, 2k+1 as unsigned levels
  __m256 dw[kPackRows][kChunkBlocks32 / kGroup];  // per group: mxfp4_group_scales
};

template <>
struct Packed<OpsMXFP4> {
  using Pack = PackMXFP4;
  static void pack(Pack& p, const std::byte* const* w, int rr, int64_t b0, int64_t nb) {
    for (int r = 0; r < rr; ++r) {
      const auto* blk = reinterpret_cast<const BlockMXFP4*>(w[r]) + b0;
      for (int64_t g = 0; g < nb; g += kGroup) p.dw[r][g / kGroup] = mxfp4_group_scales(blk + g, min64(kGroup, nb - g));
      for (int64_t j = 0; j < nb; j += 2) p.pair[r][j / 2] = mxfp4_unpack_pair(blk + j, j + 1 == nb);
    }
  }
  template <int R, int T>
  static void tile(const Pack& p, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys, bool first) {
    const int64_t n_units = (nb + kGroup - 1) / kGroup;
    auto pass = [&](__m256(&acc)[R][T], int64_t first_unit) __attribute__((always_inline)) {
      zero(acc);
      for (int64_t u = first_unit; u < n_units; u += 2) {
        const int64_t g = kGroup * u;
        const int64_t count = min64(kGroup, nb - g);
        for (int r = 0; r < R; ++r) {
          for (int t = 0; t < T; ++t) {
            __m256i s[4];
            for (int k = 0; k < 4; ++k) {
              s[k] = 2 * k < count
                         ? mxfp4_pair_dot(p.pair[r][g / 2 + k], x[t].qs + 32 * (b0 + g + 2 * k), 2 * k + 1 == count)
                         : _mm256_setzero_si256();
            }
            acc[r][t] = mxfp4_group_fma(s, p.dw[r][u], x[t], b0 + g, acc[r][t]);
          }
        }
      }
    };
    __m256 a0[R][T], a1[R][T];
    pass(a0, 0);
    pass(a1, 1);
    store_tile<R, T>(a0, a1, y, ys, first);
  }
};

}  // namespace
}  // namespace tc::kernels::detail
