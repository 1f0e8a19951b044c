// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// GEMM of the 4-bit lookup-table formats, IQ4_NL and MXFP4, with weight
// rows in the vector lanes (Q4_0's lane kernel, matmul_x86_q4_lanes.h), for
// batches of 3 tokens and more in GEMM order.
//
// Their blocks hold 16 bytes of nibble pairs as Q4_0's do (behind an f16
// scale, or MXFP4's one-byte exponent), so a tile of 8 rows x one chunk is
// repacked the same way (pack_q4_lanes), then each step's nibbles become
// their levels by one vpshufb, once for all the tokens: IQ4_NL's signed
// levels and their magnitudes (a step multiplies |level| by x with the
// level's sign), MXFP4's levels plus 12 (unsigned; 12 sum(x) comes off, and
// the int16 pair sums widen every 4 steps). No transpose: the row-by-row
// kernels (OpsGroup32, matmul_x86_group32.h) need a 4 x 4 transpose per
// group, row and token for the same sums. The sums are exact and the float
// steps are OpsGroup32's (Q4_0's order), so the bits are the row kernels'.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cpu/matmul_x86_group32.h"
#include "kernels/cpu/matmul_x86_q4_lanes.h"

namespace tc::kernels::detail {
namespace {

// A tile of V::kRows rows x one chunk: the levels and their magnitudes per
// block and step (row j in 32-bit lane j, as PackQ4Lanes), and the scales.
template <class V>
struct PackIQ4Lanes {
  PackQ4Lanes<V> nibbles;  // the tile as Q4_0's kernel packs it; its q becomes the levels
  alignas(64) uint8_t mag[kChunkBlocks32][8][4 * V::kRows];
};

// Each step's nibbles of blocks [0, nb) of a packed tile looked up in
// `table` (one vpshufb per 32 rows' bytes), in place; with `mag`, the
// levels' magnitudes there too (signed levels).
template <class V>
inline void nibbles_to_levels(PackQ4Lanes<V>& p, int64_t nb, __m256i table,
                              uint8_t (*mag)[8][4 * V::kRows] = nullptr) {
  for (int64_t i = 0; i < nb; ++i) {
    for (int s = 0; s < 8; ++s) {
      for (int h = 0; h < 4 * V::kRows; h += 32) {
        auto* q = reinterpret_cast<__m256i*>(p.q[i][s] + h);
        const __m256i levels = _mm256_shuffle_epi8(table, _mm256_load_si256(q));
        _mm256_store_si256(q, levels);
        if (mag != nullptr) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(mag[i][s] + h), _mm256_sign_epi8(levels, levels));
        }
      }
    }
  }
}

// The chunk as lane_tile_q4_0 reads a signed one: weights() the levels,
// mags() their magnitudes.
template <class V>
struct PackedIQ4Chunk {
  const PackIQ4Lanes<V>& p;
  TC_SIMD_INLINE typename V::I weights(int64_t i, int s) const { return V::load_i(p.nibbles.q[i][s]); }
  TC_SIMD_INLINE typename V::I mags(int64_t i, int s) const { return V::load_i(p.mag[i][s]); }
  TC_SIMD_INLINE typename V::F scales(int64_t i) const { return V::load_f(p.nibbles.dw[i]); }
  TC_SIMD_INLINE void prefetch(int64_t) const {}
};

// The MXFP4 chunk: levels plus 12, up to 24, so 4 steps' int16 pair sums
// (4 x 2 x 24 x 127 < 32767) before each widening.
template <class V>
struct PackedMXFP4Chunk : PackedChunk<V> {
  static constexpr int kOffset = 12;
  static constexpr int kWidenSteps = 4;
};

// Per format: Pack (a tile's chunk in L1), pack() and chunk() (how
// lane_tile_q4_0 reads it).
template <class Ops, class V>
struct Lut4Lanes;

template <class V>
struct Lut4Lanes<OpsIQ4_NL, V> {
  using Pack = PackIQ4Lanes<V>;
  static void pack(Pack& p, const std::byte* const* w, int64_t b0, int64_t nb) {
    pack_q4_lanes<V, BlockIQ4_NL>(p.nibbles, w, b0, nb);
    nibbles_to_levels(p.nibbles, nb, iq4_table(), p.mag);
  }
  static PackedIQ4Chunk<V> chunk(const Pack& p) { return {p}; }
};

template <class V>
struct Lut4Lanes<OpsMXFP4, V> {
  using Pack = PackQ4Lanes<V>;
  static void pack(Pack& p, const std::byte* const* w, int64_t b0, int64_t nb) {
    pack_q4_lanes<V, BlockMXFP4>(p, w, b0, nb);
    nibbles_to_levels(
        p, nb, _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Unsigned.data()))));
  }
  static PackedMXFP4Chunk<V> chunk(const Pack& p) { return {{p}}; }
};

// Outputs [r, r + n_tiles * V::kRows) in GEMM order, V::kRows-row lane tiles.
template <class Ops, class V>
void run_lane_tiles_lut4(const MatmulArgs& a, int64_t r, int64_t n_tiles) {
  using Format = Lut4Lanes<Ops, V>;
  constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(typename Ops::Block));
  typename Format::Pack p;
  auto tile = [&](int64_t rt, int, const std::byte* const* w, int64_t c0, int64_t nb, TokenRange tokens) {
    Format::pack(p, w, c0, nb);
    lane_tile_tokens<V>(a, Format::chunk(p), rt, c0, nb, tokens);
  };
  sweep_chunk_tiles<V::kRows>(a, r, r + n_tiles * V::kRows, V::kRows, a.n_in / 32, kChunkBlocks32, kBlockBytes,
                              tile);
}

// Outputs [r0, r1) in GEMM order: lane tiles (MXFP4 on AVX2: 16 rows in ymm
// pairs first, for the GEMM kernel of matmul_x86_q4_lanes_gemm_avx2.h),
// then the last r1 - r0 mod 8 rows by the row-by-row packed GEMM (the same
// bits).
template <class Ops>
void run_lane_gemm_lut4(const MatmulArgs& a, int64_t r0, int64_t r1) {
  int64_t r = r0;
#if !defined(TC_MATMUL_VNNI)
  if constexpr (std::is_same_v<Ops, OpsMXFP4>) {
    const int64_t pairs = (r1 - r) / LaneVec8x2::kRows;
    if (pairs > 0) run_lane_tiles_lut4<Ops, LaneVec8x2>(a, r, pairs);
    r += pairs * LaneVec8x2::kRows;
  }
#endif
  const int64_t narrow = (r1 - r) / LaneVec8::kRows;
  if (narrow > 0) run_lane_tiles_lut4<Ops, LaneVec8>(a, r, narrow);
  r += narrow * LaneVec8::kRows;
  if (r < r1) run_packed_gemm<Ops>(a, r, r1);
}

}  // namespace
}  // namespace tc::kernels::detail
