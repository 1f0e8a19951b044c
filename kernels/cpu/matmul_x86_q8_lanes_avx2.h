// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): Q8_0
// matrices repacked at load (Q8_0Lanes16, q8_lanes16.h) on AVX2 without
// VNNI, through Q4_0's lane kernel (lane_tile_q4_0, matmul_x86_q4_lanes.h)
// as a signed format, IQ4_NL's way: each step multiplies |w| by x with w's
// sign (vpsignb, vpmaddubsw, vpmaddwd; the int16 pairs stay within 2 x 128
// x 127). The tiles store w + 128, so a step's weights are one xor away from
// w; the activations are Q8_0's own rows (XRowsQ8), each block in order.
// The rows' kernels (OpsQ8_0) need a horizontal sum per row, block and
// token where the tiles' lanes hold every row's block sum at once.
//
// Same bits as the rows: the block sums are exact integers and the float
// steps are OpsQ8_0's, which are Q4_0's (the two parities of chains in
// kQ4GroupOrder lanes, chain = fma(float(sum), dw * dx, chain), the same
// final sum), with dx each block's own scale.
//
// GEMV order (decode, small batches): whole 16-row tiles read in place in
// ymm pairs (LaneVec8x2), tile after tile, up to kQ8TokensInPlace tokens
// per pass over a chunk. GEMM order: each 8-row half's chunk turned into signed
// weights and magnitudes in L1 once per block of tokens (PackQ8Signed),
// then LaneVec8's kernel, 4 tokens per pass.
#pragma once

#if !defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_lanes.h"
#include "kernels/cpu/matmul_x86_q4_lanes.h"
#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

// Tokens per in-place pass: 2 x T int32 sums, the step's weights and
// magnitudes (4) and a broadcast in the 16 ymm. From DRAM on 2 Zen 3 cores
// (32768 x 2048, against the rows, alternating; medians of 9): 8 tokens
// 1.75-1.81x the rows' rate in passes of 4, 1.36-1.57x in passes of 2,
// 1.28-1.39x in passes of 3; 4 tokens 1.5-1.65x either way.
constexpr int kQ8TokensInPlace = 4;

// Tokens per pass in GEMM order (8-row halves from L1): 4 sums, the step's
// weights and magnitudes and a broadcast.
constexpr int kQ8GemmTokens = 4;

// How far ahead (blocks of 512 bytes) the in-place sweep prefetches: 16,
// 32 and 64 measured the same; none, 5-20% slower at 1 and 2 tokens (the
// same kind of runs, passes of 2).
constexpr int64_t kQ8Lanes16Ahead = 16;

// Q8_0's own activation rows as lane_tile_q4_0 reads them with plain
// blocks: block b of token t at qs + 32 b, its scale d[b].
struct XRowsQ8 {
  static constexpr bool kPlain = true;
  const XRow* x;
  TC_SIMD_INLINE const int8_t* block(int t, int64_t b) const { return x[t].qs + 32 * b; }
  TC_SIMD_INLINE float d(int t, int64_t b) const { return x[t].d[b]; }
};

// A Q8_0Lanes16 tile's chunk read in place (q8_lanes16.h: qs [nb][8][16][4]
// as w + 128, then d [nb][16] f16), rows V::kRows * h on: qs and d at the
// chunk's first block, blocks 512 bytes apart. The sweep reads `left`
// blocks from qs on, then goes on at block left of the next tile's
// streams, skip_qs and skip_d bytes further than this tile's would be.
template <class V>
struct Lanes16Q8Signed : Lanes16Streams {
  TC_SIMD_INLINE typename V::I weights(int64_t i, int s) const {
    return V::unbias_bytes(V::load_i(qs + 512 * i + 64 * s));
  }
  TC_SIMD_INLINE typename V::I mags(int64_t i, int s) const { return V::abs_bytes(weights(i, s)); }
  TC_SIMD_INLINE typename V::F scales(int64_t i) const { return V::cvt_ph(d + 16 * i); }
  TC_SIMD_INLINE void prefetch(int64_t i) const {
    const int64_t k = i + kQ8Lanes16Ahead;
    const bool next = k >= left;
    const char* q = reinterpret_cast<const char*>(qs) + 512 * k + (next ? skip_qs : 0);
    for (int l = 0; l < 8; ++l) _mm_prefetch(q + 64 * l, _MM_HINT_T0);
    if (k % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(d) + 32 * k + (next ? skip_d : 0), _MM_HINT_T0);
  }
};

// Tile rt's chunk from block c0 on (rows V::kRows * h on), for a sweep that
// reads the next tile's chunk after it (chunks_outer) or that tile's from
// its first block.
template <class V>
TC_SIMD_INLINE Lanes16Q8Signed<V> lanes16_q8_signed(const MatmulArgs& a, int64_t rt, int64_t c0, int h,
                                                    bool chunks_outer) {
  return {lanes16_streams(a, rt, c0, V::kRows * h, 512, chunks_outer, 1)};
}

// An 8-row half's chunk in L1 for the GEMM order: signed weights and their
// magnitudes per block and step (row j in 32-bit lane j), f32 scales.
struct PackQ8Signed {
  using V = LaneVec8;
  alignas(64) int8_t q[kChunkBlocks32][8][4 * V::kRows];
  alignas(64) int8_t m[kChunkBlocks32][8][4 * V::kRows];
  alignas(64) float dw[kChunkBlocks32][V::kRows];
};

struct PackedQ8SignedChunk {
  using V = LaneVec8;
  const PackQ8Signed& p;
  TC_SIMD_INLINE V::I weights(int64_t i, int s) const { return V::load_i(p.q[i][s]); }
  TC_SIMD_INLINE V::I mags(int64_t i, int s) const { return V::load_i(p.m[i][s]); }
  TC_SIMD_INLINE V::F scales(int64_t i) const { return V::load_f(p.dw[i]); }
  TC_SIMD_INLINE void prefetch(int64_t) const {}
};

TC_SIMD_INLINE void unpack_q8_signed(PackQ8Signed& p, const Lanes16Q8Signed<LaneVec8>& c, int64_t nb) {
  using V = LaneVec8;
  for (int64_t i = 0; i < nb; ++i) {
    c.prefetch(i);
    for (int s = 0; s < 8; ++s) {
      const V::I w = c.weights(i, s);
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.q[i][s]), w);
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.m[i][s]), V::abs_bytes(w));
    }
    _mm256_store_ps(p.dw[i], c.scales(i));
  }
}

// Outputs [r0, r1) of a Q8_0Lanes16 matrix (whole 16-row tiles, below
// a.lane_rows), every token. Each row gets its chunks in order either way.
void run_lanes16_q8_0(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_blocks = a.n_in / 32;
  const TokenRange all{0, a.n_tokens};
  if (!gemm_order(a)) {
    for (int64_t rt = r0; rt < r1; rt += 16) {
      for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
        const auto chunk = lanes16_q8_signed<LaneVec8x2>(a, rt, c0, 0, false);
        lane_tile_tokens<LaneVec8x2, Lanes16Q8Signed<LaneVec8x2>, kQ8TokensInPlace, XRowsQ8>(
            a, chunk, rt, c0, min64(kChunkBlocks32, n_blocks - c0), all);
      }
    }
    return;
  }
  PackQ8Signed p;
  for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
    const int64_t nb = min64(kChunkBlocks32, n_blocks - c0);
    for_each_token_block(a.n_tokens, kGemmBlockTokens, [&](TokenRange tokens) __attribute__((always_inline)) {
      for (int64_t rt = r0; rt < r1; rt += 16) {
        for (int h = 0; h < 2; ++h) {
          unpack_q8_signed(p, lanes16_q8_signed<LaneVec8>(a, rt, c0, h, true), nb);
          const PackedQ8SignedChunk chunk{p};
          lane_tile_tokens<LaneVec8, PackedQ8SignedChunk, kQ8GemmTokens, XRowsQ8>(a, chunk, rt + 8 * h, c0, nb, tokens);
        }
      }
    });
  }
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
