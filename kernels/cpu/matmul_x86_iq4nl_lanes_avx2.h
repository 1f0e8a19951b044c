// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): IQ4_NL
// matrices repacked at load (IQ4_NLLanes16: Q4_0Lanes16's bytes,
// q4_lanes16.h) on AVX2 without VNNI (MatmulIsa::iq4nl_lanes16; handed a
// packed matrix, the others get it unpacked), through Q4_0's lane kernel
// (lane_tile_q4_0, matmul_x86_q4_lanes.h) as a signed format. Each 64-byte
// line of a tile holds one 4-byte step of all 16 rows as nibble pairs; one
// vpshufb per 8 rows turns a step's nibbles into IQ4_NL's signed levels, and
// each step multiplies |level| by x with the level's sign (vpsignb,
// vpmaddubsw, vpmaddwd), as the GEMM of matmul_x86_lut4_lanes.h does from the
// file's rows. The rows' kernels (OpsGroup32, matmul_x86_group32.h) need a
// 4 x 4 transpose per group, row and token for the same sums.
//
// Same bits as the rows: the block sums are exact integers, the float steps
// are OpsGroup32's (Q4_0's order), and the activations are Q4_0's layout.
//
// GEMV order (decode, small batches): tile after tile, below
// kIQ4NLUnpackFromTokens tokens each whole 16-row tile read in place in ymm
// pairs (LaneVec8x2), up to kIQ4NLTokensInPlace tokens per pass over a
// chunk. GEMM order, and larger small batches: each 8-row half's chunk
// turned into levels and their magnitudes in L1 once (per block of tokens:
// PackIQ4Lanes), then LaneVec8's kernel, 4 tokens per pass.
#pragma once

#if !defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_lanes.h"
#include "kernels/cpu/matmul_x86_lut4_lanes.h"
#include "kernels/cpu/matmul_x86_q4_lanes.h"
#include "kernels/cpu/matmul_x86_quant32.h"

namespace tc::kernels::detail {
namespace {

// Tokens per in-place pass: 2 x T int32 sums, the step's levels and
// magnitudes (4) and a broadcast in the 16 ymm, as Q8_0's tiles
// (matmul_x86_q8_lanes_avx2.h, which measured 4 fastest).
constexpr int kIQ4NLTokensInPlace = 4;

// From this many tokens on, the GEMV order too unpacks each 8-row half's
// chunk once into L1 (as the GEMM order does) and runs LaneVec8's kernel
// over every token: the levels are looked up once, not once per pass.
constexpr int64_t kIQ4NLUnpackFromTokens = 8;

// How far ahead (blocks of 256 bytes) the in-place sweep prefetches: Q4_0's
// tiles' distance (kLanes16Ahead, the same bytes per block).
constexpr int64_t kIQ4NLLanes16Ahead = 16;

// A step's nibbles (bytes 0..15) looked up in `table`, 8 rows per vpshufb.
TC_SIMD_INLINE __m256i lookup_levels(__m256i table, __m256i nibbles) { return _mm256_shuffle_epi8(table, nibbles); }
TC_SIMD_INLINE LaneVec8x2::I lookup_levels(__m256i table, LaneVec8x2::I nibbles) {
  return {lookup_levels(table, nibbles.lo), lookup_levels(table, nibbles.hi)};
}

// An IQ4_NLLanes16 tile's chunk read in place (qs [nb][4][16][4] nibble
// pairs, then d [nb][16] f16), rows V::kRows * h on: qs and d at the chunk's
// first block, blocks 256 bytes apart. The sweep reads `left` blocks from
// qs on, then goes on at block left of the next tile's streams, skip_qs and
// skip_d bytes further than this tile's would be.
template <class V>
struct Lanes16IQ4NL : Lanes16Streams {
  __m256i table;  // kIQ4NLValues in both 128-bit halves
  // Step s: the rows' elements 4s..4s+3 (s < 4: low nibbles, else high
  // ones, elements 16 + 4(s - 4) on) as their signed levels.
  TC_SIMD_INLINE typename V::I weights(int64_t i, int s) const {
    const typename V::I raw = V::load_i(qs + 256 * i + 64 * (s % 4));
    return lookup_levels(table, s < 4 ? V::lo_nibbles(raw) : V::hi_nibbles(raw));
  }
  TC_SIMD_INLINE typename V::I mags(int64_t i, int s) const { return V::abs_bytes(weights(i, s)); }
  TC_SIMD_INLINE typename V::F scales(int64_t i) const { return V::cvt_ph(d + 16 * i); }
  TC_SIMD_INLINE void prefetch(int64_t i) const {
    const int64_t k = i + kIQ4NLLanes16Ahead;
    const bool next = k >= left;
    const char* q = reinterpret_cast<const char*>(qs) + 256 * k + (next ? skip_qs : 0);
    for (int l = 0; l < 4; ++l) _mm_prefetch(q + 64 * l, _MM_HINT_T0);
    if (k % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(d) + 32 * k + (next ? skip_d : 0), _MM_HINT_T0);
  }
};

// Tile rt's chunk from block c0 on (rows V::kRows * h on), for a sweep that
// reads the next tile's chunk after it (chunks_outer) or that tile's from
// its first block.
template <class V>
TC_SIMD_INLINE Lanes16IQ4NL<V> lanes16_iq4nl(const MatmulArgs& a, int64_t rt, int64_t c0, int h, bool chunks_outer) {
  return {lanes16_streams(a, rt, c0, V::kRows * h, 256, chunks_outer, 1), iq4_table()};
}

// Blocks [0, nb) of an 8-row half's chunk into p as PackedIQ4Chunk reads
// them: the levels, their magnitudes and the f32 scales.
TC_SIMD_INLINE void unpack_iq4nl(PackIQ4Lanes<LaneVec8>& p, const Lanes16IQ4NL<LaneVec8>& c, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    c.prefetch(i);
    for (int s = 0; s < 8; ++s) {
      const __m256i w = c.weights(i, s);
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.nibbles.q[i][s]), w);
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.mag[i][s]), LaneVec8::abs_bytes(w));
    }
    _mm256_store_ps(p.nibbles.dw[i], c.scales(i));
  }
}

// Outputs [r0, r1) of an IQ4_NLLanes16 matrix (whole 16-row tiles, below
// a.lane_rows), every token.
void run_lanes16_iq4_nl(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_blocks = a.n_in / 32;
  PackIQ4Lanes<LaneVec8> p;
  auto in_place = [&](int64_t rt, int64_t c0) __attribute__((always_inline)) {
    lane_tile_tokens<LaneVec8x2, Lanes16IQ4NL<LaneVec8x2>, kIQ4NLTokensInPlace>(
        a, lanes16_iq4nl<LaneVec8x2>(a, rt, c0, 0, false), rt, c0, min64(kChunkBlocks32, n_blocks - c0),
        TokenRange{0, a.n_tokens});
  };
  // Each 8-row half's chunk looked up once into L1.
  auto unpacked = [&](int64_t rt, int64_t c0, TokenRange tokens) __attribute__((always_inline)) {
    const int64_t nb = min64(kChunkBlocks32, n_blocks - c0);
    for (int h = 0; h < 2; ++h) {
      unpack_iq4nl(p, lanes16_iq4nl<LaneVec8>(a, rt, c0, h, gemm_order(a)), nb);
      lane_tile_tokens<LaneVec8>(a, PackedIQ4Chunk<LaneVec8>{p}, rt + 8 * h, c0, nb, tokens);
    }
  };
  sweep_lanes16_tiles(a, r0, r1, kIQ4NLUnpackFromTokens, in_place, unpacked);
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
