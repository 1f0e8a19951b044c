// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// 32-element block formats Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 against
// Q8_32_NIB activations, in Q4_0's groups of 8 blocks (matmul_x86_quant.h,
// OpsQ4_0).
//
// A pair of blocks is one 32-byte vector of codes. Each format's Codec turns
// it into bytes vpmaddubsw takes: the unsigned levels of Q4_1 (0..15), Q5_0
// and Q5_1 (0..31), and MXFP4's levels plus 12 (one vpshufb; 0..24, so no
// sign moves); IQ4_NL's levels (-127..113) stay signed and move their signs
// to x. Each pair gives exact int32 lane sums, a transpose-and-add makes one
// exact sum per block, an integer offset (Q5_0's 16, MXFP4's 12, times
// sum(x)) comes off as an integer, and one convert and one FMA scale all 8
// blocks (Q4_1 and Q5_1 add their f16 minimums times sum(x) with a second).
// One block at a time, with a convert and an FMA each, the same work was
// what decode waited on: 2 threads read MXFP4 at 67-71% of the read probe
// (Zen 3), one thread 5.5 GB/s against Q4_0's 9.4.
//
// Every path (decode, gathered rows, small batches, GEMM tiles) runs these
// units in one order, so an output's bits depend on n_in only.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/matmul_x86_quant32.h"

namespace tc::kernels::detail {
namespace {

// Adds 16 to the bytes of a nibble pair whose element has its 5th bit set
// (Q5_0, Q5_1: bit e of the little-endian uint32 qh is element e's).
template <class Block>
TC_SIMD_INLINE void add_fifth_bits(Q4Pair& q, const Block* blk, bool lone) {
  if (lone) {
    q.lo = _mm256_or_si256(q.lo, fifth_bits32(blk[0].qh));
    return;
  }
  uint32_t h0, h1;
  std::memcpy(&h0, blk[0].qh, sizeof h0);
  std::memcpy(&h1, blk[1].qh, sizeof h1);
  // Bytes 0-3: block 2k's bits, 4-7: block 2k+1's, in both halves; lo takes
  // elements 0-15 (bytes 0-1 of each block's bits), hi elements 16-31.
  const __m256i bits = _mm256_set1_epi64x(static_cast<long long>(uint64_t{h0} | uint64_t{h1} << 32));
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i sixteen = _mm256_set1_epi8(0x10);
  auto spread = [&](__m256i order) __attribute__((always_inline)) {
    const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(bits, order), select);
    return _mm256_and_si256(_mm256_cmpeq_epi8(b, select), sixteen);
  };
  q.lo = _mm256_or_si256(q.lo, spread(_mm256_setr_epi64x(0, 0x0101010101010101, 0x0404040404040404, 0x0505050505050505)));
  q.hi = _mm256_or_si256(q.hi, spread(_mm256_setr_epi64x(0x0202020202020202, 0x0303030303030303, 0x0606060606060606,
                                                         0x0707070707070707)));
}

// The levels plus 12 (kMXFP4Values spans -12..12): unsigned, as vpmaddubsw
// takes its first operand.
constexpr std::array<int8_t, 16> kMXFP4Unsigned = [] {
  std::array<int8_t, 16> t{};
  for (int i = 0; i < 16; ++i) t[i] = static_cast<int8_t>(kMXFP4Values[i] + 12);
  return t;
}();

// The f32 factors 2^(e - 128) of up to 8 consecutive MXFP4 blocks (as
// e8m0_to_f32_half) in kQ4GroupOrder, zeros in the lanes of missing blocks.
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

// Per format: Block; pair() (the bytes of a pair, Q8_32_NIB order);
// kSigned (IQ4_NL: signed bytes, else unsigned); kIntOffset (levels minus
// this are the format's integers); kMin (an f16 minimum m per block, added
// as m * sum(x)); scales() and mins() of up to 8 blocks in kQ4GroupOrder.
struct CodecQ4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kSigned = false;
  static constexpr int kIntOffset = 0;
  static constexpr bool kMin = true;
  static TC_SIMD_INLINE Q4Pair pair(const Block* blk, bool lone) { return q4_unpack_pair(blk, lone); }
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d, true>(blk, nb); }
  static TC_SIMD_INLINE __m256 mins(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::m, true>(blk, nb); }
};

struct CodecQ5_0 {
  using Block = BlockQ5_0;
  static constexpr bool kSigned = false;
  static constexpr int kIntOffset = 16;
  static constexpr bool kMin = false;
  static TC_SIMD_INLINE Q4Pair pair(const Block* blk, bool lone) {
    Q4Pair q = q4_unpack_pair(blk, lone);
    add_fifth_bits(q, blk, lone);
    return q;
  }
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d, true>(blk, nb); }
  static TC_SIMD_INLINE __m256 mins(const Block*, int64_t) { return _mm256_setzero_ps(); }
};

struct CodecQ5_1 {
  using Block = BlockQ5_1;
  static constexpr bool kSigned = false;
  static constexpr int kIntOffset = 0;
  static constexpr bool kMin = true;
  static TC_SIMD_INLINE Q4Pair pair(const Block* blk, bool lone) {
    Q4Pair q = q4_unpack_pair(blk, lone);
    add_fifth_bits(q, blk, lone);
    return q;
  }
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d, true>(blk, nb); }
  static TC_SIMD_INLINE __m256 mins(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::m, true>(blk, nb); }
};

struct CodecIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr bool kSigned = true;
  static constexpr int kIntOffset = 0;
  static constexpr bool kMin = false;
  static TC_SIMD_INLINE Q4Pair pair(const Block* blk, bool lone) {
    const __m256i table = iq4_table();
    const Q4Pair n = q4_unpack_pair(blk, lone);
    return {_mm256_shuffle_epi8(table, n.lo), lone ? n.hi : _mm256_shuffle_epi8(table, n.hi)};
  }
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d, true>(blk, nb); }
  static TC_SIMD_INLINE __m256 mins(const Block*, int64_t) { return _mm256_setzero_ps(); }
};

struct CodecMXFP4 {
  using Block = BlockMXFP4;
  static constexpr bool kSigned = false;
  static constexpr int kIntOffset = 12;
  static constexpr bool kMin = false;
  static TC_SIMD_INLINE Q4Pair pair(const Block* blk, bool lone) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Unsigned.data())));
    const Q4Pair n = q4_unpack_pair(blk, lone);
    return {_mm256_shuffle_epi8(table, n.lo), lone ? n.hi : _mm256_shuffle_epi8(table, n.hi)};
  }
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return mxfp4_group_scales(blk, nb); }
  static TC_SIMD_INLINE __m256 mins(const Block*, int64_t) { return _mm256_setzero_ps(); }
};

// Exact int32 partial sums of a pair against x at its first block: block 2k
// in the low 4 lanes, 2k+1 in the high 4 (a lone block: all in the low 4).
// Unsigned levels up to 31 keep two vpmaddubsw pairs added within int16
// (4 * 31 * 127); IQ4_NL's signed ones widen each half on its own.
template <class Codec>
TC_SIMD_INLINE __m256i group32_pair_dot(const Q4Pair& q, const int8_t* xq, bool lone) {
  if (lone) {
    __m256i s;
    if constexpr (Codec::kSigned) {
      s = dot_s8s8(q.lo, load32(xq));
    } else {
      s = dot_u8s8(q.lo, load32(xq));
    }
    return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1)));
  }
  if constexpr (Codec::kSigned) {
    return _mm256_add_epi32(dot_s8s8(q.lo, load32(xq)), dot_s8s8(q.hi, load32(xq + 32)));
  } else {
    return dot2_u8s8(q.lo, load32(xq), q.hi, load32(xq + 32));
  }
}

// The exact int32 sum of each block of a group in kQ4GroupOrder from its
// four pairs' partial sums (missing pairs zero): a 4 x 4 transpose-and-add
// in each 128-bit half; lane k of the low half sums p[k]'s low 4 lanes.
// (Q4_0's int16 horizontal adds would overflow on these levels.)
TC_SIMD_INLINE __m256i group32_sums(const __m256i (&p)[4]) {
  const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[0], p[1]), _mm256_unpackhi_epi32(p[0], p[1]));
  const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2], p[3]), _mm256_unpackhi_epi32(p[2], p[3]));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// A group's scales: dw (and mw, the minimums, for kMin formats).
struct GroupScales {
  __m256 dw, mw;
};

template <class Codec>
TC_SIMD_INLINE GroupScales group32_scales(const typename Codec::Block* blk, int64_t count) {
  return {Codec::scales(blk, count), Codec::kMin ? Codec::mins(blk, count) : _mm256_setzero_ps()};
}

// acc += the group of blocks (pairs' partial sums p, missing ones zero) of
// one row and one token; g is the group's first block index into x's gd
// and gs8 (gs8 = 8 * sum32, so the offsets' sums are exact shifts of it).
template <class Codec>
TC_SIMD_INLINE __m256 group32_fma(const __m256i (&p)[4], const GroupScales& s, const XRow& x, int64_t g,
                                  __m256 acc) {
  __m256i sums = group32_sums(p);
  const __m256i gs8 = load32(x.gs8 + g);
  if constexpr (Codec::kIntOffset == 16) {
    sums = _mm256_sub_epi32(sums, _mm256_slli_epi32(gs8, 1));
  } else if constexpr (Codec::kIntOffset == 12) {
    sums = _mm256_sub_epi32(sums, _mm256_add_epi32(gs8, _mm256_srai_epi32(gs8, 1)));
  } else {
    static_assert(Codec::kIntOffset == 0, "group32_fma: an integer offset without its exact form");
  }
  const __m256 gd = _mm256_load_ps(x.gd + g);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(s.dw, gd), acc);
  if constexpr (Codec::kMin) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(gs8, 3)), _mm256_mul_ps(s.mw, gd), acc);
  }
  return acc;
}

template <class Codec>
struct OpsGroup32 {
  using Block = typename Codec::Block;
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
      const auto* blk = reinterpret_cast<const Block*>(w[r]) + b;
      Q4Pair q[4] = {};
      for (int k = 0; k < 4; ++k) {
        if (2 * k < count) q[k] = Codec::pair(blk + 2 * k, 2 * k + 1 == count);
      }
      const GroupScales s = group32_scales<Codec>(blk, count);
      for (int t = 0; t < T; ++t) {
        __m256i p[4];
        for (int k = 0; k < 4; ++k) {
          p[k] = 2 * k < count ? group32_pair_dot<Codec>(q[k], x[t].qs + 32 * (b + 2 * k), 2 * k + 1 == count)
                               : _mm256_setzero_si256();
        }
        acc[r][t] = group32_fma<Codec>(p, s, x[t], b, acc[r][t]);
      }
    }
  }
  template <int R, int T>
  TC_SIMD_INLINE static void finish(__m256 (&)[R][T], const Prep (&)[R][T], const XRow*, int64_t, int64_t) {}
};

using OpsQ4_1 = OpsGroup32<CodecQ4_1>;
using OpsQ5_0 = OpsGroup32<CodecQ5_0>;
using OpsQ5_1 = OpsGroup32<CodecQ5_1>;
using OpsIQ4_NL = OpsGroup32<CodecIQ4_NL>;
using OpsMXFP4 = OpsGroup32<CodecMXFP4>;

// GEMM order (run_packed_gemm): a tile of kPackRows rows x one chunk
// unpacked once, then swept by every tile of tokens; the units in
// OpsGroup32's order (even groups, then odd ones), so the same bits.
template <class Codec>
struct PackGroup32 {
  Q4Pair pair[kPackRows][kChunkBlocks32 / 2];          // pair k: blocks 2k, 2k+1 as Codec::pair gives them
  GroupScales scales[kPackRows][kChunkBlocks32 / kGroup];
};

template <class Codec>
struct Packed<OpsGroup32<Codec>> {
  using Pack = PackGroup32<Codec>;
  static void pack(Pack& p, const std::byte* const* w, int rr, int64_t b0, int64_t nb) {
    for (int r = 0; r < rr; ++r) {
      const auto* blk = reinterpret_cast<const typename Codec::Block*>(w[r]) + b0;
      for (int64_t g = 0; g < nb; g += kGroup) p.scales[r][g / kGroup] = group32_scales<Codec>(blk + g, min64(kGroup, nb - g));
      for (int64_t j = 0; j < nb; j += 2) p.pair[r][j / 2] = Codec::pair(blk + j, j + 1 == nb);
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
              s[k] = 2 * k < count ? group32_pair_dot<Codec>(p.pair[r][g / 2 + k], x[t].qs + 32 * (b0 + g + 2 * k),
                                                             2 * k + 1 == count)
                                   : _mm256_setzero_si256();
            }
            acc[r][t] = group32_fma<Codec>(s, p.scales[r][u], x[t], b0 + g, acc[r][t]);
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

template <class Ops>
inline constexpr bool kIsGroup32 = false;
template <class Codec>
inline constexpr bool kIsGroup32<OpsGroup32<Codec>> = true;

}  // namespace
}  // namespace tc::kernels::detail
