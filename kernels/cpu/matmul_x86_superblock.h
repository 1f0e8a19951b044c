// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): what
// the super-block types (blocks of 256 against Q8_256 activations) share,
// and Q4_K and Q6_K (Q2_K, Q3_K, Q5_K and IQ4_XS in matmul_x86_kquants.h):
// a super-block of a row unpacked once into bytes and int16 scales, each
// token's exact int32 lanes of sum sc q x, and the super-block lane order
// most of them sum in. Their GEMM is matmul_x86_superblock_gemm.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

// The 6-bit scales and mins of a Q4_K / Q5_K super-block (12 packed bytes),
// as llama.cpp unpacks them: sc[j] = sub-block j's scale as int16 in every
// lane; mins = the 8 mins as int16, each twice (m0 m0 m1 m1 .. m7 m7), to
// meet the activations' 16-element sums.
TC_SIMD_INLINE void unpack_k4_scales(const uint8_t* scales, __m256i (&sc)[8], __m256i& mins) {
  uint32_t u[4];
  std::memcpy(u, scales, 12);
  constexpr uint32_t kM1 = 0x3f3f3f3f, kM2 = 0x0f0f0f0f, kM3 = 0x03030303;
  u[3] = ((u[2] >> 4) & kM2) | (((u[1] >> 6) & kM3) << 4);
  const uint32_t m_lo = u[1] & kM1;
  u[1] = (u[2] & kM2) | (((u[0] >> 6) & kM3) << 4);
  u[2] = m_lo;
  u[0] &= kM1;
  const __m128i scm = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(u[1]), static_cast<int>(u[0])));
  const __m128i m = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(u[3]), static_cast<int>(u[2])));
  mins = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
  const __m256i sc2 = _mm256_broadcastsi128_si256(scm);
  for (int j = 0; j < 8; ++j) sc[j] = _mm256_shuffle_epi8(sc2, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * j)));
}

// The weights' quants (8 vectors of 32 bytes, vector c = elements
// 32c..32c+31) against one token's, each vector's int16 pair sums scaled by
// sc[c]: the exact int32 lane sums of sum_c sc * q * x.
TC_SIMD_INLINE __m256i scaled_dot8(const __m256i (&q)[8], const __m256i (&sc)[8], const int8_t* xq) {
  __m256i isum = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(q[c], load32(xq + 32 * c)), sc[c]));
  }
  return isum;
}

// The exact sum of each v[k]'s int32 lanes in lane k: v[k] and v[k + 4]
// folded into one vector's halves, then group_sums_i32.
TC_SIMD_INLINE __m256i lane_totals8(const __m256i (&v)[8]) {
  __m256i p[4];
  for (int k = 0; k < 4; ++k) p[k] = q8_fold_pair(v[k], v[k + 4]);
  return group_sums_i32(p);
}

// The unit of the super-block types summed per super-block (Q2_K:
// Ops::W, Ops::unpack, Ops::token): per row, super-block b unpacked
// once, then each token's sums added to its accumulator.
template <class Ops, int R, int T>
TC_SIMD_INLINE void superblock_unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, int64_t b) {
  for (int r = 0; r < R; ++r) {
    typename Ops::W u;
    Ops::unpack(reinterpret_cast<const typename Ops::Block*>(w[r]) + b, u);
    for (int t = 0; t < T; ++t) Ops::token(acc[r][t], u, x[t], b);
  }
}

// ---- The super-block lane order (Q3_K-Q6_K, IQ4_XS: Ops::kLaneTotals) ----
//
// A chunk of 4 super-blocks is one unit. Super-block s of the chunk gives
// its exact int32 totals T_s = sum sc q x (Q3_K, Q6_K: with the -4, -32 of
// their levels) and, for the types with mins, M_s = sum m x; the chunk's vector
// holds in lane s float(T_s) * (d_s dx_s) and in lane 4 + s float(M_s) *
// (-dmin_s dx_s), each an FMA onto +0 (one rounding); lanes past the row's
// end, and lanes 4-7 without mins, are +0. The chunk's lanes are then
// reduced as every chunk's (store_tile). Every step before the FMAs is
// exact, so the totals can come from any integer path: scaled_dot8's lanes
// here, whole sub-block sums from AMX tiles (matmul_x86_amx_kquants.h), the
// sums of 8 outputs at a time in GEMM order (matmul_x86_superblock_gemm.h).
// (The order before summed each super-block's 8 lanes of 4-element
// partial sums on their own chains, which a tile's whole sub-block sums
// cannot form; one chain per output over the totals made one-token decode
// 10-20% slower with its horizontal sums per super-block: here the
// transpose-and-add of 4 super-blocks' lanes costs less than their 4
// converts and FMAs did.)
template <class Ops>
concept SuperBlockLanes = requires { requires Ops::kLaneTotals; };

// [d_s | -dmin_s] of a chunk's first `count` super-blocks (zeros after, and
// in lanes 4-7 without mins), their f16 scales converted at once
// (block_scales).
template <class Block, bool kMins>
TC_SIMD_INLINE __m256 superblock_scales(const Block* blk, int64_t count) {
  uint64_t d = 0, m = 0;
  for (int64_t s = 0; s < count; ++s) {
    d |= uint64_t{blk[s].d} << (16 * s);
    if constexpr (kMins) m |= uint64_t{blk[s].dmin} << (16 * s);
  }
  const __m256 v = _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(m), static_cast<long long>(d)));
  return kMins ? _mm256_xor_ps(v, _mm256_setr_ps(0.0f, 0.0f, 0.0f, 0.0f, -0.0f, -0.0f, -0.0f, -0.0f)) : v;
}

// [dx_s | dx_s] of a chunk of `count` super-blocks from b (zeros after).
TC_SIMD_INLINE __m256 superblock_dx(const XRow& x, int64_t b, int64_t count) {
  const __m128 v = count == 4 ? _mm_loadu_ps(x.d + b)
                              : _mm_maskload_ps(x.d + b, _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(count)),
                                                                        _mm_setr_epi32(0, 1, 2, 3)));
  return _mm256_set_m128(v, v);
}

// One token's int32 lanes of sum sc q x over an unpacked super-block (with
// Ops::dot32 where the type has its own product, as IQ4_XS's signed levels).
template <class Ops>
TC_SIMD_INLINE __m256i superblock_isum(const typename Ops::W& u, const int8_t* xq) {
  if constexpr (requires(__m256i v) { Ops::dot32(v, v, v); }) {
    __m256i isum = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) isum = _mm256_add_epi32(isum, Ops::dot32(u.q[j], u.sc[j], load32(xq + 32 * j)));
    return isum;
  } else {
    return scaled_dot8(u.q, u.sc, xq);
  }
}

// The unit of the lane order: `count` super-blocks from b, per row each
// unpacked once and met by every token.
template <class Ops, int R, int T>
TC_SIMD_INLINE void superblock_lanes_unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, int64_t b,
                                          int64_t count) {
  for (int r = 0; r < R; ++r) {
    const auto* blk = reinterpret_cast<const typename Ops::Block*>(w[r]) + b;
    __m256i p[T][4];  // per token and super-block: [4 lanes summing to T | 4 to M]
    for (int s = 0; s < 4; ++s) {
      if (s >= count) {
        for (int t = 0; t < T; ++t) p[t][s] = _mm256_setzero_si256();
        continue;
      }
      typename Ops::W u;
      Ops::unpack(blk + s, u);
      for (int t = 0; t < T; ++t) {
        const __m256i tl = Ops::total_lanes(u, x[t], b + s, superblock_isum<Ops>(u, x[t].qs + kQK_K * (b + s)));
        __m256i ml = _mm256_setzero_si256();
        if constexpr (Ops::kMins) ml = Ops::min_lanes(u, x[t], b + s);
        p[t][s] = q8_fold_pair(tl, ml);
      }
    }
    const __m256 dw = superblock_scales<typename Ops::Block, Ops::kMins>(blk, count);
    for (int t = 0; t < T; ++t) {
      acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(group_sums_i32(p[t])),
                                  _mm256_mul_ps(dw, superblock_dx(x[t], b, count)), acc[r][t]);
    }
  }
}

// What every super-block Ops has: 4 super-blocks per chunk, one row per
// small-batch tile (the unpacked super-block fills the registers), no
// per-chunk constants.
struct OpsSuperBlockBase {
  static constexpr int64_t kBlock = kQK_K;
  static constexpr int64_t kChunkBlocks = 4;
  static constexpr int kGemvRows = 1;
  struct Prep {};
  template <int R, int T>
  TC_SIMD_INLINE static void prepare(Prep (&)[R][T], const std::byte* const*, const XRow*, int64_t, int64_t) {}
  template <int R, int T>
  TC_SIMD_INLINE static void finish(__m256 (&)[R][T], const Prep (&)[R][T], const XRow*, int64_t, int64_t) {}
};

// The members of a lane-order Ops (Self, which gives Block, kMins, W and
// unpack): one unit per chunk; T's lanes are scaled_dot8's (or dot32's)
// unless Self has its own total_lanes, M's those of the Q4_K / Q5_K mins
// (W::mins, unpack_k4_scales) against the activations' 16-element sums.
template <class Self>
struct OpsSuperBlockLanes : OpsSuperBlockBase {
  static constexpr bool kLaneTotals = true;
  static constexpr int64_t kUnit = kChunkBlocks;
  template <class W>
  TC_SIMD_INLINE static __m256i total_lanes(const W&, const XRow&, int64_t, __m256i isum) {
    return isum;
  }
  template <class W>
  TC_SIMD_INLINE static __m256i min_lanes(const W& u, const XRow& x, int64_t b) {
    return _mm256_madd_epi16(u.mins, load32(x.sum16 + 16 * b));
  }
  template <int R, int T>
  TC_SIMD_INLINE static void unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, const Prep (&)[R][T],
                                  int64_t b0, int64_t i, int64_t count) {
    superblock_lanes_unit<Self, R, T>(acc, w, x, b0 + i, count);
  }
};

struct OpsQ4_K : OpsSuperBlockLanes<OpsQ4_K> {
  using Block = BlockQ4_K;
  static constexpr bool kMins = true;
  // One super-block of a row, unpacked.
  struct W {
    __m256i q[8];   // sub-block j: elements 32j..32j+31, 0..15
    __m256i sc[8];  // int16 scale of sub-block j, broadcast
    __m256i mins;   // int16 mins, each twice: m0 m0 m1 m1 .. m7 m7
  };
  TC_SIMD_INLINE static void unpack(const BlockQ4_K* blk, W& w) {
    unpack_k4_scales(blk->scales, w.sc, w.mins);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int c = 0; c < 4; ++c) {
      const __m256i v = loadu32(blk->qs + 32 * c);
      w.q[2 * c] = _mm256_and_si256(v, m4);
      w.q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
  }
};

struct OpsQ6_K : OpsSuperBlockLanes<OpsQ6_K> {
  using Block = BlockQ6_K;
  static constexpr bool kMins = false;
  struct W {
    __m256i q[8];   // 32-element chunk c, 0..63 (the -32 goes through the activation sums)
    __m256i sc[8];  // int16 scales of chunk c: 8 x sc[2c], then 8 x sc[2c+1]
    __m256i sc16;   // the 16 scales as int16
  };
  TC_SIMD_INLINE static void unpack(const BlockQ6_K* blk, W& w) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = loadu32(blk->ql + 64 * h);
      const __m256i l1 = loadu32(blk->ql + 64 * h + 32);
      const __m256i hb = loadu32(blk->qh + 32 * h);
      const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4);
      const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4);
      const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4);
      const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4);
      w.q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, m4), h0);
      w.q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4), h1);
      w.q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), h2);
      w.q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), h3);
    }
    w.sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)));
    // Chunk c: the int16 pair (sc[2c], sc[2c+1]) in every dword, then the
    // first repeated over the low 128 bits and the second over the high.
    const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2,
                                            3, 2, 3, 2, 3, 2, 3);
    for (int c = 0; c < 8; ++c) {
      w.sc[c] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(w.sc16, _mm256_set1_epi32(c)), spread);
    }
  }
  // Lanes summing to T: scaled_dot8's less 32 sum over sub-blocks of scale
  // times sum(x).
  TC_SIMD_INLINE static __m256i total_lanes(const W& u, const XRow& x, int64_t b, __m256i isum) {
    return _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(u.sc16, load32(x.sum16 + 16 * b)), 5));
  }
};

}  // namespace
}  // namespace tc::kernels::detail
