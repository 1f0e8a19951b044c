// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): Q5_0
// and Q5_1 matrices repacked at load (Q5_0Lanes16, Q5_1Lanes16,
// q5_lanes16.h) on AVX2 without VNNI (MatmulIsa::q5_lanes16; handed a
// packed matrix, the others get it unpacked), through Q4_0's lane kernel
// (lane_tile_q4_0, matmul_x86_q4_lanes.h). A step of 8 rows is one 32-byte
// half of a tile's nibble line, masked or shifted, or-ed with its fifth
// bits, which the tile keeps so that one 16-bit shift and a mask bring a
// step's to bit 4 of each byte: levels 0..31, Q5_0's plus 16 (16 sum(x)
// comes off per block as an integer), Q5_1's with its minimum. Their int16
// pair sums widen every 4 steps (4 x 2 x 31 x 127 < 32767). The rows'
// kernels (OpsGroup32, matmul_x86_group32.h) spread each row's fifth bits
// per block with a vpshufb and a compare per half and transpose 4 x 4
// lanes per group, row and token for the same sums.
//
// Same bits as the rows: the block sums are exact integers and the float
// steps are OpsGroup32's (Q4_0's order; Q5_1's minimum a second FMA, as
// Q4_1's), with the activations in Q4_0's layout.
//
// GEMV order (decode, small batches): whole 16-row tiles read in place in
// ymm pairs (LaneVec8x2), tile after tile, up to 4 tokens per pass. From
// kQ4GemmFromTokens tokens on, and in GEMM order, each chunk is unpacked
// once into L1: Q5_0's whole tile for Q4_0's AVX2 GEMM kernel
// (matmul_x86_q4_lanes_gemm_avx2.h, offset 16), Q5_1's 8-row halves for
// LaneVec8's kernel, as Q4_1's (2 Zen 3 cores, 5632 x 2048 and 2048 x
// 5632: Q5_1's 8 tokens 1.60-1.70 ms read in place, 1.07-1.25 unpacked;
// 16 tokens 3.3-3.8 and 1.8-1.9).
#pragma once

#if !defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_lanes.h"
#include "kernels/cpu/matmul_x86_q4_lanes.h"
#include "kernels/cpu/matmul_x86_q4_lanes_gemm_avx2.h"

namespace tc::kernels::detail {
namespace {

// How far ahead (blocks of 320 bytes) the in-place sweep prefetches: Q4_0's
// tiles' 16 blocks, 5 KiB.
constexpr int64_t kQ5Lanes16Ahead = 16;

// Step s's fifth bits at bit 4 of every byte, from a tile's qh line (byte
// k bit s: the fifth bit of step s's byte k). A 16-bit shift by |4 - s| <
// 8 brings the high byte's bit s to its own bit 4 as it does the low
// byte's, so masking per byte is exact.
TC_SIMD_INLINE __m256i q5_fifth_bits(__m256i qh, int s) {
  const __m256i moved = s <= 4 ? _mm256_slli_epi16(qh, 4 - s) : _mm256_srli_epi16(qh, s - 4);
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}
TC_SIMD_INLINE LaneVec8x2::I q5_fifth_bits(LaneVec8x2::I qh, int s) {
  return {q5_fifth_bits(qh.lo, s), q5_fifth_bits(qh.hi, s)};
}
TC_SIMD_INLINE __m256i q5_levels(__m256i nibbles, __m256i fifth) { return _mm256_or_si256(nibbles, fifth); }
TC_SIMD_INLINE LaneVec8x2::I q5_levels(LaneVec8x2::I nibbles, LaneVec8x2::I fifth) {
  return {q5_levels(nibbles.lo, fifth.lo), q5_levels(nibbles.hi, fifth.hi)};
}

// A Q5_0Lanes16 (kMins: Q5_1Lanes16) tile's chunk read in place, rows
// V::kRows * h on: qs at the chunk's first block (blocks 320 bytes apart:
// 4 nibble lines, then the qh line), d its first f16 scales, 16 per
// block, the minimums m_off values after them. The sweep reads `left`
// blocks from qs on, then goes on at block left of the next tile's
// streams, skip_qs and skip_d bytes further than this tile's would be.
template <class V, bool kMins>
struct Lanes16Q5 : Lanes16Streams {
  int64_t m_off;
  static constexpr int kOffset = kMins ? 0 : 16;
  static constexpr int kWidenSteps = 4;
  // Step s: the rows' levels of elements 4s..4s+3 (s < 4), 16 + 4(s - 4).. (s >= 4).
  TC_SIMD_INLINE typename V::I weights(int64_t i, int s) const {
    const std::byte* block = qs + 320 * i;
    const typename V::I raw = V::load_i(block + 64 * (s % 4));
    return q5_levels(s < 4 ? V::lo_nibbles(raw) : V::hi_nibbles(raw), q5_fifth_bits(V::load_i(block + 256), s));
  }
  TC_SIMD_INLINE typename V::F scales(int64_t i) const { return V::cvt_ph(d + 16 * i); }
  TC_SIMD_INLINE typename V::F mins(int64_t i) const
    requires kMins
  {
    return V::cvt_ph(d + m_off + 16 * i);
  }
  TC_SIMD_INLINE void prefetch(int64_t i) const {
    const int64_t k = i + kQ5Lanes16Ahead;
    const bool next = k >= left;
    const char* q = reinterpret_cast<const char*>(qs) + 320 * k + (next ? skip_qs : 0);
    for (int l = 0; l < 5; ++l) _mm_prefetch(q + 64 * l, _MM_HINT_T0);
    if (k % 2 == 0) {
      const char* dk = reinterpret_cast<const char*>(d) + 32 * k + (next ? skip_d : 0);
      _mm_prefetch(dk, _MM_HINT_T0);
      if constexpr (kMins) _mm_prefetch(dk + 2 * m_off, _MM_HINT_T0);
    }
  }
};

// Tile rt's chunk from block c0 on (rows V::kRows * h on), for a sweep that
// reads the next tile's chunk after it (chunks_outer) or that tile's from
// its first block.
template <class V, bool kMins>
TC_SIMD_INLINE Lanes16Q5<V, kMins> lanes16_q5(const MatmulArgs& a, int64_t rt, int64_t c0, int h, bool chunks_outer) {
  return {lanes16_streams(a, rt, c0, V::kRows * h, 320, chunks_outer, 1), 16 * (a.n_in / 32)};
}

// Q5_1's chunk unpacked into L1 (levels 0..31 with minimums), as the generic
// kernel reads it.
struct PackedQ5_1Chunk : PackedChunk<LaneVec8, true> {
  static constexpr int kWidenSteps = 4;
};

// Outputs [r0, r1) of a Q5_0Lanes16 (kMins: Q5_1Lanes16) matrix (whole
// 16-row tiles, below a.lane_rows), every token.
template <bool kMins>
void run_lanes16_q5(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_blocks = a.n_in / 32;
  auto in_place = [&](int64_t rt, int64_t c0) __attribute__((always_inline)) {
    lane_tile_tokens<LaneVec8x2, Lanes16Q5<LaneVec8x2, kMins>, LaneVec8x2::kTokensInPlace>(
        a, lanes16_q5<LaneVec8x2, kMins>(a, rt, c0, 0, false), rt, c0, min64(kChunkBlocks32, n_blocks - c0),
        TokenRange{0, a.n_tokens});
  };
  // The chunk unpacked once into L1: Q5_0 whole for the GEMM kernel, Q5_1
  // by 8-row halves for the generic one.
  PackQ4Lanes<LaneVec8x2> whole;
  PackQ4Lanes<LaneVec8> half;
  auto unpacked = [&](int64_t rt, int64_t c0, TokenRange tokens) __attribute__((always_inline)) {
    const int64_t nb = min64(kChunkBlocks32, n_blocks - c0);
    if constexpr (!kMins) {
      unpack_chunk(whole, lanes16_q5<LaneVec8x2, false>(a, rt, c0, 0, gemm_order(a)), nb);
      q4_gemm_tokens<LaneVec8x2, 16, 4>(a, whole, rt, c0, nb, tokens);
    } else {
      for (int h = 0; h < 2; ++h) {
        unpack_chunk(half, lanes16_q5<LaneVec8, true>(a, rt, c0, h, gemm_order(a)), nb);
        lane_tile_tokens<LaneVec8>(a, PackedQ5_1Chunk{{half}}, rt + 8 * h, c0, nb, tokens);
      }
    }
  };
  sweep_lanes16_tiles(a, r0, r1, kQ4GemmFromTokens, in_place, unpacked);
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
