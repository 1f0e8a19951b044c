// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// framework of the kernels for quantized weights and those of Q8_0 and Q4_0
// (the super-block types in matmul_x86_superblock.h and
// matmul_x86_kquants.h, the other 32-element formats in
// matmul_x86_quant32.h) against
// activations quantized to int8 (matmul_kernels.h): exact int32 block sums,
// scaled and accumulated in f32 by FMA in the order described in
// matmul_x86_float.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_x86_common.h"

namespace tc::kernels::detail {
namespace {

// One token's quantized activations (layout in matmul_kernels.h).
struct XRow {
  const int8_t* qs;
  const float* d;
  const int32_t* sum32;
  const int16_t* sum16;
  const float* gd;     // Q8_32_NIB: d per group of 8 blocks in kQ4GroupOrder
  const int32_t* gs8;  // Q8_32_NIB: 8 * sum32 in the same order
};

XRow x_row(const MatmulArgs& a, int64_t t) {
  const std::byte* base = a.xq + t * a.xl.stride;
  return {reinterpret_cast<const int8_t*>(base), reinterpret_cast<const float*>(base + a.xl.d_offset),
          reinterpret_cast<const int32_t*>(base + a.xl.sum32_offset),
          reinterpret_cast<const int16_t*>(base + a.xl.sum16_offset),
          reinterpret_cast<const float*>(base + a.xl.gd_offset),
          reinterpret_cast<const int32_t*>(base + a.xl.gs8_offset)};
}

// The f16 scales of up to 8 consecutive 32-element blocks as f32, zeros
// after nb: lane i holds block i, or with kQ4Order block kQ4GroupOrder[i].
// Assembled in general-purpose registers (the integer ALUs are idle in these
// kernels) and moved over once: inserting them one by one costs two vector
// uops each, and narrow stores read back as one vector would stall
// store-to-load forwarding.
template <class Block, bool kQ4Order = false>
TC_SIMD_INLINE __m256 block_scales(const Block* blk, int64_t nb) {
  uint64_t half[2] = {0, 0};
  auto put = [&](int64_t i) __attribute__((always_inline)) {
    const int64_t lane = kQ4Order ? i / 2 + 4 * (i % 2) : i;
    half[lane / 4] |= uint64_t{blk[i].d} << (16 * (lane % 4));
  };
  if (nb == 8) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; ++i) put(i);
  } else {
    for (int64_t i = 0; i < nb; ++i) put(i);
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(half[1]), static_cast<long long>(half[0])));
}

// Per dtype, over one chunk of nb blocks starting at block b0:
//   prepare() computes per (row, token) constants once per chunk,
//   unit() adds `count` (<= kUnit) blocks from block index i of the chunk
//   (the steps of the summation order are units),
//   finish() adds chunk-wide terms to the odd chain.

// Blocks per chunk of the 32-element formats, and per group of scales
// (converted 8 at a time).
constexpr int64_t kChunkBlocks32 = 32;
// How far ahead decode_row prefetches its row (into L1, the next row's
// start once the row ends). The hardware prefetcher restarts at every 4 KiB
// page even inside a 2 MiB one; without this a 2-core Xeon (KVM, AVX-512
// VNNI) decoded Q4_0 4096 x 11008 at 57-59% of the read probe, with it at
// 76-80% (1024, 2048 and 4096 bytes all the same within noise).
constexpr int64_t kQuantDecodePrefetchBytes = 2048;
constexpr int64_t kGroup = 8;

// ---- Q8_0: groups of 8 blocks ----
//
// Summed as Q4_0's groups below: one exact int32 sum per block, the 8
// blocks of a group in the lanes of kQ4GroupOrder (even blocks in lanes
// 0-3, odd ones in 4-7), one convert and one FMA per group:
// acc += float(sum) * (dw * dx). Block i's dot product gives 8 int32 lanes
// of 4-element sums; each pair of blocks is folded to 4 lanes apiece
// ([2k | 2k+1], as a Q4_0 pair's) and the group's four pairs are reduced by
// a transpose-and-add, so every path (rows in lanes, zmm, ymm) meets the
// same integers.

// The kQ4GroupOrder lane of each block's activation scale: x.d holds them
// in order.
TC_SIMD_INLINE __m256 q8_group_order(__m256 v) {
  return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}

// dw * dx of a group of up to 8 blocks (zeros after count), kQ4GroupOrder.
TC_SIMD_INLINE __m256 q8_group_scales(const BlockQ8_0* blk, const XRow& x, int64_t b, int64_t count) {
  return _mm256_mul_ps(block_scales<BlockQ8_0, true>(blk, count), q8_group_order(_mm256_loadu_ps(x.d + b)));
}

// One block's 8 lanes of 4-element sums of w * x (w's signs moved to x:
// |w| * (x with w's sign) as unsigned times signed; pairs within 2 * 127 *
// 127).
TC_SIMD_INLINE __m256i q8_block_dot(__m256i q, __m256i aq, const int8_t* xq) {
  return dot_u8s8(aq, _mm256_sign_epi8(load32(xq), q));
}

// Blocks 2k and 2k+1's lanes folded to 4 each: [2k: 4 lanes | 2k+1: 4].
// ([v0.lo | v1.hi] + [v0.hi | v1.lo]: one lane swap and a blend, where two
// swaps cost a second pass through the shuffle port.)
TC_SIMD_INLINE __m256i q8_fold_pair(__m256i v0, __m256i v1) {
  return _mm256_add_epi32(_mm256_blend_epi32(v0, v1, 0xf0), _mm256_permute2x128_si256(v0, v1, 0x21));
}

// The exact int32 sum of each block of a group in kQ4GroupOrder from its
// four pairs' int32 partial sums ([2k: 4 lanes | 2k+1: 4 lanes], missing
// pairs zero): a 4 x 4 transpose-and-add in each 128-bit half; lane k of
// the low half sums p[k]'s low 4 lanes. (Q8_0's groups, and Q4_0's with
// VNNI.)
TC_SIMD_INLINE __m256i group_sums_i32(const __m256i (&p)[4]) {
  const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[0], p[1]), _mm256_unpackhi_epi32(p[0], p[1]));
  const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2], p[3]), _mm256_unpackhi_epi32(p[2], p[3]));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// The exact int32 sums of a Q8_0 group of `count` blocks in kQ4GroupOrder;
// dot(j) gives block j's 8 lanes (q8_block_dot), blocks from count on are
// zero.
template <class BlockDot>
TC_SIMD_INLINE __m256i q8_group_sums(int64_t count, BlockDot dot) {
  __m256i pairs[4];
  for (int k = 0; k < 4; ++k) {
    const __m256i v0 = 2 * k < count ? dot(2 * k) : _mm256_setzero_si256();
    const __m256i v1 = 2 * k + 1 < count ? dot(2 * k + 1) : _mm256_setzero_si256();
    pairs[k] = q8_fold_pair(v0, v1);
  }
  return group_sums_i32(pairs);
}

struct OpsQ8_0 {
  using Block = BlockQ8_0;
  static constexpr int64_t kBlock = 32;
  static constexpr int64_t kChunkBlocks = kChunkBlocks32;
  static constexpr int64_t kUnit = kGroup;
  static constexpr int kGemvRows = 1;  // rows per small-batch tile
  struct Prep {
    alignas(32) float d[kChunkBlocks32];  // per group: q8_group_scales
  };
  template <int R, int T>
  TC_SIMD_INLINE static void prepare(Prep (&p)[R][T], const std::byte* const* w, const XRow* x, int64_t b0,
                                     int64_t nb) {
    for (int r = 0; r < R; ++r) {
      const auto* blk = reinterpret_cast<const BlockQ8_0*>(w[r]) + b0;
      for (int64_t g = 0; g < nb; g += kGroup) {
        for (int t = 0; t < T; ++t) {
          _mm256_store_ps(p[r][t].d + g, q8_group_scales(blk + g, x[t], b0 + g, min64(kGroup, nb - g)));
        }
      }
    }
  }
  template <int R, int T>
  TC_SIMD_INLINE static void unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, const Prep (&p)[R][T],
                                  int64_t b0, int64_t i, int64_t count) {
    const int64_t b = b0 + i;
    for (int r = 0; r < R; ++r) {
      const auto* blk = reinterpret_cast<const BlockQ8_0*>(w[r]) + b;
      for (int t = 0; t < T; ++t) {
        const __m256i sums = q8_group_sums(count, [&](int64_t j) __attribute__((always_inline)) {
          const __m256i q = loadu32(blk[j].qs);
          return q8_block_dot(q, _mm256_sign_epi8(q, q), x[t].qs + 32 * (b + j));
        });
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_load_ps(p[r][t].d + i), acc[r][t]);
      }
    }
  }
  template <int R, int T>
  TC_SIMD_INLINE static void finish(__m256 (&)[R][T], const Prep (&)[R][T], const XRow*, int64_t, int64_t) {}
};

// ---- Q4_0: groups of 8 blocks ----
//
// A group's 4 block pairs give 4 vectors of int32 partial sums (block 2k in
// the low 128 bits, 2k+1 in the high ones; Q8_32_NIB puts x in that order).
// A transpose-and-add reduces them to one exact int32 sum per block in
// kQ4GroupOrder, the nibbles' -8 offset is subtracted as an integer (gs8),
// and one convert and one FMA scale all 8 blocks: per block
// acc += float(sum) * (dw * dx). (Scaling each pair on its own cost about
// twice the instructions.)

// The f16 scales of up to 8 blocks (zeros after count) as f32 in kQ4GroupOrder.
TC_SIMD_INLINE __m256 q4_group_scales(const BlockQ4_0* blk, int64_t count) {
  return block_scales<BlockQ4_0, true>(blk, count);
}

// The nibbles of blocks 2k, 2k+1 as two vectors of unsigned bytes: lo holds
// elements 0-15 of both, hi elements 16-31 (the order of Q8_32_NIB's x). A
// lone last block: lo holds its 32 values in order, hi is unused.
struct Q4Pair {
  __m256i lo, hi;
};
template <class Block>  // BlockQ4_0, or any block whose nibbles sit in qs[16] as Q4_0's (matmul_x86_group32.h)
TC_SIMD_INLINE Q4Pair q4_unpack_pair(const Block* blk, bool lone) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].qs));
  if (lone) return {_mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v0, 4), v0), m4), _mm256_setzero_si256()};
  const __m256i v =
      _mm256_inserti128_si256(_mm256_castsi128_si256(v0), _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].qs)), 1);
  return {_mm256_and_si256(v, m4), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4)};
}

#if defined(TC_MATMUL_VNNI)
// Partial int32 sums of a pair against x at its first block: block 2k in the
// low 4 lanes, 2k+1 in the high 4 (a lone block: all in the low 4).
TC_SIMD_INLINE __m256i q4_pair_dot(const Q4Pair& q, const int8_t* xq, bool lone) {
  if (lone) {
    const __m256i s = dot_u8s8(q.lo, load32(xq));
    return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1)));
  }
  return dot2_u8s8(q.lo, load32(xq), q.hi, load32(xq + 32));
}

// The exact int32 sum of each block of a group in kQ4GroupOrder from its
// four pairs' partial sums: group_sums_i32's transpose-and-add (a little
// faster than three horizontal adds).
TC_SIMD_INLINE __m256i q4_group_sums(const __m256i (&p)[4]) { return group_sums_i32(p); }
#else
// Partial int16 sums of a pair against x at its first block: block 2k in the
// low 8 lanes, 2k+1 in the high 8 (a lone block: all in the low 8), each
// lane 4 products, so within 4 * 15 * 127.
TC_SIMD_INLINE __m256i q4_pair_dot(const Q4Pair& q, const int8_t* xq, bool lone) {
  if (lone) {
    const __m256i s = _mm256_maddubs_epi16(q.lo, load32(xq));
    return _mm256_zextsi128_si256(_mm_add_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1)));
  }
  return _mm256_add_epi16(_mm256_maddubs_epi16(q.lo, load32(xq)), _mm256_maddubs_epi16(q.hi, load32(xq + 32)));
}

// The exact int32 sum of each block of a group in kQ4GroupOrder from its
// four pairs' int16 partial sums (missing pairs zero). Two rounds of
// horizontal adds stay in int16 (16 products, within 30480) and leave, per
// 128-bit half, [2k, 2k, 2k + 2, 2k + 2, ...] pairs of the low blocks (the
// high half: the odd blocks), which one vpmaddwd adds: lanes 0-3 blocks 0,
// 2, 4, 6 and lanes 4-7 blocks 1, 3, 5, 7. One vpmaddwd per group instead
// of one per pair (the multiply port is what decode waits on).
TC_SIMD_INLINE __m256i q4_group_sums(const __m256i (&p)[4]) {
  const __m256i h = _mm256_hadd_epi16(_mm256_hadd_epi16(p[0], p[1]), _mm256_hadd_epi16(p[2], p[3]));
  return _mm256_madd_epi16(h, _mm256_set1_epi16(1));
}
#endif

// acc += the group of `count` blocks (pairs p[0..3], missing ones zero) of
// one row and one token, with dw = q4_group_scales and g the group's first
// block index into x's gd/gs8.
TC_SIMD_INLINE __m256 q4_group_fma(const __m256i (&p)[4], __m256 dw, const XRow& x, int64_t g, __m256 acc) {
  const __m256i exact = _mm256_sub_epi32(q4_group_sums(p), load32(x.gs8 + g));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(dw, _mm256_load_ps(x.gd + g)), acc);
}

struct OpsQ4_0 {
  using Block = BlockQ4_0;
  static constexpr int64_t kBlock = 32;
  static constexpr int64_t kChunkBlocks = kChunkBlocks32;
  static constexpr int64_t kUnit = kGroup;
  static constexpr int kGemvRows = 2;  // 2 x 2 tokens (3 and more take the packed tiles: run_quant)
  struct Prep {};
  template <int R, int T>
  TC_SIMD_INLINE static void prepare(Prep (&)[R][T], const std::byte* const*, const XRow*, int64_t, int64_t) {}
  template <int R, int T>
  TC_SIMD_INLINE static void unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, const Prep (&)[R][T],
                                  int64_t b0, int64_t i, int64_t count) {
    const int64_t b = b0 + i;
    for (int r = 0; r < R; ++r) {
      const auto* blk = reinterpret_cast<const BlockQ4_0*>(w[r]) + b;
      Q4Pair q[4] = {};
      for (int k = 0; k < 4; ++k) {
        if (2 * k < count) q[k] = q4_unpack_pair(blk + 2 * k, 2 * k + 1 == count);
      }
      const __m256 dw = q4_group_scales(blk, count);
      for (int t = 0; t < T; ++t) {
        __m256i p[4];
        for (int k = 0; k < 4; ++k) {
          p[k] = 2 * k < count ? q4_pair_dot(q[k], x[t].qs + 32 * (b + 2 * k), 2 * k + 1 == count)
                               : _mm256_setzero_si256();
        }
        acc[r][t] = q4_group_fma(p, dw, x[t], b, acc[r][t]);
      }
    }
  }
  template <int R, int T>
  TC_SIMD_INLINE static void finish(__m256 (&)[R][T], const Prep (&)[R][T], const XRow*, int64_t, int64_t) {}
};

// One chunk (nb blocks from b0) for R rows x T tokens. NB > 0: nb == NB
// known at compile time (full chunks), so the blocks unroll with fixed offsets.
template <class Ops, int R, int T, int64_t NB>
TC_SIMD_INLINE void quant_chunk(const std::byte* const* w, const XRow* x, int64_t b0, int64_t nb_rt, float* y,
                                int64_t ys, bool first) {
  const int64_t nb = NB > 0 ? NB : nb_rt;
  typename Ops::Prep p[R][T];
  Ops::template prepare<R, T>(p, w, x, b0, nb);
  __m256 a0[R][T], a1[R][T];
  zero(a0);
  zero(a1);
  constexpr int64_t U = Ops::kUnit;
  const int64_t n_units = (nb + U - 1) / U;
  auto unit = [&](__m256(&acc)[R][T], int64_t u) __attribute__((always_inline)) {
    Ops::template unit<R, T>(acc, w, x, p, b0, u * U, min64(U, nb - u * U));
  };
  if constexpr (R * T <= 2) {
    int64_t u = 0;
#pragma GCC unroll 8
    for (; u + 1 < n_units; u += 2) {
      unit(a0, u);
      unit(a1, u + 1);
    }
    if (u < n_units) unit(a0, u);
  } else {
#pragma GCC unroll 8
    for (int64_t u = 0; u < n_units; u += 2) unit(a0, u);
#pragma GCC unroll 8
    for (int64_t u = 1; u < n_units; u += 2) unit(a1, u);
  }
  Ops::template finish<R, T>(a1, p, x, b0, nb);
  store_tile<R, T>(a0, a1, y, ys, first);
}

// One row's whole Q8_0 chunk (32 blocks from b0) for T tokens: the same
// bits as quant_chunk<OpsQ8_0, 1, T, 32>, in fewer instructions. Each
// block's |q| is taken once for every token (OpsQ8_0::unit takes it per
// token) and the block scales are gathered once per group and scaled by
// each token's. Per group and token: acc[u % 2] =
// fma(float(block sums), dw * dx, acc[u % 2]), block sums in
// kQ4GroupOrder. Zen 3, matmul() on a 512 x 2048 matrix from L2, one
// thread: 4 tokens 19.7-21.7 -> 25.5-25.7 G multiply-adds/s, 8 tokens (two
// passes) 20.9-22.8 -> 24.9-27.3; 16384 x 2048 from DRAM, two threads: 4
// tokens 29.5-32.0 -> 38.5-42.6, 8 tokens 32.4-36.4 -> 45.4-46.0 (medians
// of 21 rounds, old and new library alternating twice).
template <int T>
TC_SIMD_INLINE void q8_row_chunk(const std::byte* row, const XRow* x, int64_t b0, float* y, int64_t ys, bool first) {
  __m256 acc[2][1][T];
  zero(acc[0]);
  zero(acc[1]);
  const auto* blk0 = reinterpret_cast<const BlockQ8_0*>(row) + b0;
#pragma GCC unroll 1
  for (int u = 0; u < kChunkBlocks32 / kGroup; ++u) {
    const BlockQ8_0* blk = blk0 + kGroup * u;
    const __m256 dw = block_scales<BlockQ8_0, true>(blk, kGroup);
    __m256i aq[kGroup];
    for (int j = 0; j < kGroup; ++j) {
      const __m256i q = loadu32(blk[j].qs);
      aq[j] = _mm256_sign_epi8(q, q);
    }
    for (int t = 0; t < T; ++t) {
      const int8_t* xq = x[t].qs + 32 * (b0 + kGroup * u);
      __m256i pairs[4];
      for (int k = 0; k < 4; ++k) {
        pairs[k] = q8_fold_pair(q8_block_dot(loadu32(blk[2 * k].qs), aq[2 * k], xq + 64 * k),
                                q8_block_dot(loadu32(blk[2 * k + 1].qs), aq[2 * k + 1], xq + 64 * k + 32));
      }
      const __m256i sums = group_sums_i32(pairs);
      const __m256 d = _mm256_mul_ps(dw, q8_group_order(_mm256_loadu_ps(x[t].d + b0 + kGroup * u)));
      acc[u % 2][0][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), d, acc[u % 2][0][t]);
    }
  }
  store_tile<1, T>(acc[0], acc[1], y, ys, first);
}

template <class Ops, int R, int T>
void quant_tile(const std::byte* const* w, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys, bool first) {
  if constexpr (std::is_same_v<Ops, OpsQ8_0> && R == 1) {
    if (nb == kChunkBlocks32) return q8_row_chunk<T>(w[0], x, b0, y, ys, first);
  }
  if (nb == Ops::kChunkBlocks) {
    quant_chunk<Ops, R, T, Ops::kChunkBlocks>(w, x, b0, nb, y, ys, first);
  } else {
    quant_chunk<Ops, R, T, 0>(w, x, b0, nb, y, ys, first);
  }
}

// quant_tile for rr <= R rows and tt <= T tokens known at run time.
template <class Ops, int R, int T>
void quant_tile_n(int rr, int tt, const std::byte* const* w, const XRow* x, int64_t b0, int64_t nb, float* y,
                  int64_t ys, bool first) {
  if constexpr (R > 1) {
    if (rr < R) return quant_tile_n<Ops, R - 1, T>(rr, tt, w, x, b0, nb, y, ys, first);
  }
  if constexpr (T > 1) {
    if (tt < T) return quant_tile_n<Ops, R, T - 1>(rr, tt, w, x, b0, nb, y, ys, first);
  }
  quant_tile<Ops, R, T>(w, x, b0, nb, y, ys, first);
}

// ---- GEMM for Q8_0, Q4_0 (and MXFP4): packed row tiles ----
//
// In GEMM order a tile of R rows x one chunk is unpacked once into an L1
// buffer (quants ready for the dot products, scales widened to f32) and then
// swept by every tile of T tokens: the micro-kernel keeps only its R x T
// accumulators in registers. Same summation order and values as the
// kernels above, so the same bits.

constexpr int kPackRows = 4;

struct PackQ8_0 {
  __m256i q[kPackRows][kChunkBlocks32];   // signed quants of block i
  __m256i aq[kPackRows][kChunkBlocks32];  // their magnitudes
  __m256 dw[kPackRows][kChunkBlocks32 / kGroup];  // per group: the f16 scales in kQ4GroupOrder
};

inline void pack_q8_0(PackQ8_0& p, const std::byte* const* w, int rr, int64_t b0, int64_t nb) {
  for (int r = 0; r < rr; ++r) {
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(w[r]) + b0;
    for (int64_t g = 0; g < nb; g += kGroup) {
      p.dw[r][g / kGroup] = block_scales<BlockQ8_0, true>(blk + g, min64(kGroup, nb - g));
    }
    for (int64_t i = 0; i < nb; ++i) {
      const __m256i q = loadu32(blk[i].qs);
      p.q[r][i] = q;
      p.aq[r][i] = _mm256_sign_epi8(q, q);
    }
  }
}

template <int R, int T>
void packed_tile_q8_0(const PackQ8_0& p, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys, bool first) {
  const int64_t n_units = (nb + kGroup - 1) / kGroup;
  // The even groups, then the odd ones (two passes keep R x T accumulators
  // live), as OpsQ8_0 sums them.
  auto pass = [&](__m256(&acc)[R][T], int64_t first_unit) __attribute__((always_inline)) {
    zero(acc);
    for (int64_t u = first_unit; u < n_units; u += 2) {
      const int64_t g = kGroup * u;
      const int64_t count = min64(kGroup, nb - g);
      for (int t = 0; t < T; ++t) {
        const __m256 dx = q8_group_order(_mm256_loadu_ps(x[t].d + b0 + g));
        for (int r = 0; r < R; ++r) {
          const __m256i sums = q8_group_sums(count, [&](int64_t j) __attribute__((always_inline)) {
            return q8_block_dot(p.q[r][g + j], p.aq[r][g + j], x[t].qs + 32 * (b0 + g + j));
          });
          acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(p.dw[r][u], dx), acc[r][t]);
        }
      }
    }
  };
  __m256 a0[R][T], a1[R][T];
  pass(a0, 0);
  pass(a1, 1);
  store_tile<R, T>(a0, a1, y, ys, first);
}

struct PackQ4_0 {
  Q4Pair pair[kPackRows][kChunkBlocks32 / 2];         // pair k: blocks 2k, 2k+1 unpacked
  __m256 dw[kPackRows][kChunkBlocks32 / kGroup];      // per group: q4_group_scales
};

inline void pack_q4_0(PackQ4_0& p, const std::byte* const* w, int rr, int64_t b0, int64_t nb) {
  for (int r = 0; r < rr; ++r) {
    const auto* blk = reinterpret_cast<const BlockQ4_0*>(w[r]) + b0;
    for (int64_t g = 0; g < nb; g += kGroup) p.dw[r][g / kGroup] = q4_group_scales(blk + g, min64(kGroup, nb - g));
    for (int64_t j = 0; j < nb; j += 2) p.pair[r][j / 2] = q4_unpack_pair(blk + j, j + 1 == nb);
  }
}

template <int R, int T>
void packed_tile_q4_0(const PackQ4_0& p, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys, bool first) {
  const int64_t n_units = (nb + kGroup - 1) / kGroup;
  // The even groups, then the odd ones (two passes keep R x T accumulators
  // live), as OpsQ4_0 sums them.
  auto pass = [&](__m256(&acc)[R][T], int64_t first_unit) __attribute__((always_inline)) {
    zero(acc);
    for (int64_t u = first_unit; u < n_units; u += 2) {
      const int64_t g = kGroup * u;
      const int64_t count = min64(kGroup, nb - g);
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) {
          __m256i s[4];
          for (int k = 0; k < 4; ++k) {
            s[k] = 2 * k < count ? q4_pair_dot(p.pair[r][g / 2 + k], x[t].qs + 32 * (b0 + g + 2 * k), 2 * k + 1 == count)
                                 : _mm256_setzero_si256();
          }
          acc[r][t] = q4_group_fma(s, p.dw[r][u], x[t], b0 + g, acc[r][t]);
        }
      }
    }
  };
  __m256 a0[R][T], a1[R][T];
  pass(a0, 0);
  pass(a1, 1);
  store_tile<R, T>(a0, a1, y, ys, first);
}

// The packed GEMM's parts per dtype: Pack (a row tile's chunk unpacked),
// pack() and tile<R, T>(). Q8_0 and Q4_0 here; MXFP4 in matmul_x86_mxfp4.h.
template <class Ops>
struct Packed;

template <>
struct Packed<OpsQ8_0> {
  using Pack = PackQ8_0;
  static void pack(Pack& p, const std::byte* const* w, int rr, int64_t b0, int64_t nb) { pack_q8_0(p, w, rr, b0, nb); }
  template <int R, int T>
  static void tile(const Pack& p, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys, bool first) {
    packed_tile_q8_0<R, T>(p, x, b0, nb, y, ys, first);
  }
};

template <>
struct Packed<OpsQ4_0> {
  using Pack = PackQ4_0;
  static void pack(Pack& p, const std::byte* const* w, int rr, int64_t b0, int64_t nb) { pack_q4_0(p, w, rr, b0, nb); }
  template <int R, int T>
  static void tile(const Pack& p, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys, bool first) {
    packed_tile_q4_0<R, T>(p, x, b0, nb, y, ys, first);
  }
};

// Packed<Ops>::tile for rr <= R rows and tt <= T tokens known at run time.
template <class Ops, int R, int T>
void packed_tile_n(int rr, int tt, const typename Packed<Ops>::Pack& p, const XRow* x, int64_t b0, int64_t nb,
                   float* y, int64_t ys, bool first) {
  if constexpr (R > 1) {
    if (rr < R) return packed_tile_n<Ops, R - 1, T>(rr, tt, p, x, b0, nb, y, ys, first);
  }
  if constexpr (T > 1) {
    if (tt < T) return packed_tile_n<Ops, R, T - 1>(rr, tt, p, x, b0, nb, y, ys, first);
  }
  Packed<Ops>::template tile<R, T>(p, x, b0, nb, y, ys, first);
}

// Tokens per packed micro-kernel: R x T accumulators plus a few operands
// fit 16 vector registers at 4 x 2 (AVX2); AVX-512 has 32.
#if defined(TC_MATMUL_VNNI)
constexpr int kPackTokens = 4;
#else
constexpr int kPackTokens = 2;
#endif

template <class Ops>
void run_packed_gemm(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int R = kPackRows;
  constexpr int T = kPackTokens;
  constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(typename Ops::Block));
  typename Packed<Ops>::Pack p;
  sweep_chunk_tiles<R>(a, r0, r1, R, a.n_in / Ops::kBlock, Ops::kChunkBlocks, kBlockBytes,
                       [&](int64_t rt, int rr, const std::byte* const* w, int64_t c0, int64_t nb,
                           TokenRange tokens) {
                         Packed<Ops>::pack(p, w, rr, c0, nb);
                         for (int64_t t0 = tokens.begin; t0 < tokens.end; t0 += T) {
                           const int tt = static_cast<int>(min64(T, tokens.end - t0));
                           XRow x[T];
                           for (int i = 0; i < tt; ++i) x[i] = x_row(a, t0 + i);
                           packed_tile_n<Ops, R, T>(rr, tt, p, x, c0, nb, a.y + t0 * a.n_out + rt, a.n_out, c0 == 0);
                         }
                       });
}

// quant_chunk of one row and one token over a last chunk of nb < kChunkBlocks
// blocks, with nb known at compile time for the common sizes (the same
// steps, so the same bits): widths such as 2816, 5632 or 11008 end every
// row in 16 or 24 blocks of 32, or 2 or 3 super-blocks. For the group
// formats' units of 8 blocks the loop over a count known only at run time
// cost rows of 2816 a seventh of their decode bandwidth (MXFP4, 2 threads,
// Zen 3: 12.7 against 14.7 GB/s); the super-block types measured the same
// either way.
template <class Ops>
TC_SIMD_INLINE void decode_short_chunk(const std::byte* const* w, const XRow& x, int64_t b0, int64_t nb, float* y,
                                       bool first) {
  // 1-3 groups of 8 blocks, or 1-3 super-blocks (chunks of 4).
  if constexpr (Ops::kChunkBlocks == kChunkBlocks32 || Ops::kChunkBlocks == 4) {
    constexpr int64_t u = Ops::kChunkBlocks == 4 ? 1 : 8;
    if (nb % u == 0) {
      switch (nb / u) {
        case 1:
          return quant_chunk<Ops, 1, 1, u>(w, &x, b0, nb, y, 0, first);
        case 2:
          return quant_chunk<Ops, 1, 1, 2 * u>(w, &x, b0, nb, y, 0, first);
        case 3:
          return quant_chunk<Ops, 1, 1, 3 * u>(w, &x, b0, nb, y, 0, first);
        default:
          break;
      }
    }
  }
  quant_chunk<Ops, 1, 1, 0>(w, &x, b0, nb, y, 0, first);
}

// Decode: output r against one token, its chunks in one tight loop. (Two
// rows per tile ran faster from L2 but halved the bandwidth from DRAM.)
// Dense rows only: gathered ones take decode_gathered_rows.
template <class Ops>
TC_SIMD_INLINE void decode_row(const MatmulArgs& a, int64_t r, const XRow& x) {
  constexpr int64_t K = Ops::kChunkBlocks;
  const int64_t n_blocks = a.n_in / Ops::kBlock;
  const std::byte* w[1] = {weight_row(a, r)};
  constexpr int64_t kBB = static_cast<int64_t>(sizeof(typename Ops::Block));
  const RowStream stream(a, r);
  int64_t c0 = 0;
  for (; c0 + K <= n_blocks; c0 += K) {
    stream.prefetch_ahead(w[0] + c0 * kBB, K * kBB, kQuantDecodePrefetchBytes);
    quant_chunk<Ops, 1, 1, K>(w, &x, c0, K, a.y + r, 0, c0 == 0);
  }
  if (c0 < n_blocks) {
    // The short last chunk prefetches its own bytes' distance too: each
    // chunk covers its byte range shifted by the distance, so the stream of
    // prefetches stays gapless across rows whose width is no multiple of K
    // (without it, Q8_0 rows of 2880 read at 67-69% of the probe against
    // 90% for 3072; 2 threads, Zen 3).
    stream.prefetch_ahead(w[0] + c0 * kBB, (n_blocks - c0) * kBB, kQuantDecodePrefetchBytes);
    decode_short_chunk<Ops>(w, x, c0, n_blocks - c0, a.y + r, c0 == 0);
  }
}

// Decode of gathered rows (MatmulArgs::rows, the sparse FFN's predicted
// neurons): one row at a time, the loop of decode_row (so the same bits),
// each chunk of the row kGatheredAheadRows further on prefetched into L2
// while this one computes.
//
// Every gathered row is a jump the hardware prefetcher cannot follow, so
// the row's DRAM latency has to be hidden by software. Prefetching into L1
// (T0) a few rows ahead is limited by the core's L1 miss buffers: Q4_0
// 4096-wide rows, 10-20% of 11008 picked at random, 2 Zen 4 threads
// (sparse_ffn_bench, gate + up): 2 rows per tile, T0 chunks 2 tiles ahead
// (the kernel before this one) 0.40 / 0.73-0.79 ms; 1 row, T0 3 rows ahead
// the same; 1 row, T1 8 rows ahead 0.27 / 0.43-0.48 ms (12 rows the same,
// 16 slower). A read-only microbenchmark of random 2304-byte rows at 10%
// density agreed: 15-18 GB/s with T0 at any distance, 24-30 GB/s with T1
// 8-16 rows ahead, against 35 GB/s streaming. On the 2-core Xeon (AMX
// generation) both kernels give 0.25-0.26 / 0.49-0.50 ms, and no distance
// (3-16 rows), hint (T0/T1/T2) or whole-row prefetch beat them: there the
// row kernel itself, not the gather, sets the pace (all rows in order cost
// 1.2x less per row than 10% gathered). On the 2-core Zen 5 guest the two
// measured the same too (2026-11-25, `thermocline bench --sparsity relu -p 0
// -n 64` of the 7B-layer sparse Q4_0 file, 6 alternating runs each: medians
// 117 and 120 t/s, spread 111-128), as did distances 8/12/16 rows with or
// without a T1 prefetch of the range's first rows (sparse_ffn_bench);
// prefetching whole rows instead (the next one T0, or row r + 16 T1, or
// both) was 3-40% slower there.
constexpr int64_t kGatheredAheadRows = 8;

template <class Ops>
void decode_gathered_rows(const MatmulArgs& a, int64_t r0, int64_t r1, const XRow& x) {
  constexpr int64_t K = Ops::kChunkBlocks;
  constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(typename Ops::Block));
  const int64_t n_blocks = a.n_in / Ops::kBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* w[1] = {weight_row(a, r)};
    const char* ahead = r + kGatheredAheadRows < r1
                            ? reinterpret_cast<const char*>(weight_row(a, r + kGatheredAheadRows))
                            : nullptr;
    for (int64_t c0 = 0; c0 < n_blocks; c0 += K) {
      const int64_t nb = min64(K, n_blocks - c0);
      if (ahead != nullptr) {
        for (int64_t b = c0 * kBlockBytes; b < (c0 + nb) * kBlockBytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T1);
      }
      if (nb == K) {
        quant_chunk<Ops, 1, 1, K>(w, &x, c0, K, a.y + r, 0, c0 == 0);
      } else {
        quant_chunk<Ops, 1, 1, 0>(w, &x, c0, nb, a.y + r, 0, c0 == 0);
      }
    }
  }
}

}  // namespace
}  // namespace tc::kernels::detail
