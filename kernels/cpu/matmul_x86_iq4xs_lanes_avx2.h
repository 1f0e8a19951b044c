// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): IQ4_XS
// matrices repacked at load (IQ4_XSLanes16, iq4xs_lanes16.h), AVX2 code
// compiled into every x86 variant (the rows kernel, OpsIQ4_XS, is the same
// ymm code in all of them). Only the avx2 variant has IQ4_XS repacked
// (MatmulIsa::iq4xs_lanes16); handed a packed matrix, the others get it
// unpacked by the driver, but for amx's tokens past its 16-token groups,
// which read the tiles here. A step is one 64-byte line: bytes 4k..4k+3 of a
// sub-block's 16 quant bytes for all 16 rows, row j in 32-bit lane j. Its
// low nibbles are elements 4k.. of the sub-block and its high nibbles
// elements 16 + 4k..; one vpshufb each gives their signed levels for 8
// rows at once, one vpabsb each their magnitudes. A token meets them as
// |level| times x with the level's sign (one vpsignb on the token's
// broadcast 4 activations, one vpmaddubsw: pairs within 2 x 127 x 127, so
// each step's int16 sums are widened at once, by one vpmaddwd with the
// rows' (sc - 32, sc - 32)). The rows kernel spreads 16 bytes of nibbles
// over a ymm per 32 weights and sums every row's lanes per super-block;
// here the lookups serve 8 rows and a tile's lanes hold every row's totals.
//
// Same bits as the rows: the totals T = sum (sc - 32) level x of each
// super-block are exact integers, and the float steps are the super-block
// lane order (matmul_x86_superblock.h) done lane by lane over the rows, as
// for Q3_K and Q6_K, whose passes, chunk sums and sweep these tiles share
// (matmul_x86_k16_lane_passes.h).
//
// GEMV order (decode, small batches): tile after tile, chunk after chunk.
// One token takes both 8-row halves per pass (each line loaded once), each
// super-block's constants unpacked as it comes, so that the stream is read
// in address order; more tokens take a chunk's constants unpacked once and
// each half in passes of up to 4 tokens, every pass looking the levels
// up again: 7 instructions per step, fewer than a step's 4 loads and the
// stores of a chunk looked up once into L1 cost (`matmul_bench -t 2 --isa
// avx2 --dtype iq4_xsx16`, 1B FFN shapes, Zen 3: 8 tokens 1.08-1.14 ms a
// call against 1.31-1.45, 16 tokens 2.07-2.24 against 2.47-2.70, 512
// tokens 180-187 GFLOP/s against 114-159). GEMM order: chunks outer, then
// blocks of kGemmBlockTokens tokens, then tiles.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/iq4xs_lanes16.h"
#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_k16_lane_passes.h"
#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/matmul_x86_quant32.h"

namespace tc::kernels::detail {
namespace {

// How far ahead (bytes) the GEMV sweep prefetches its stream, into L2 (one
// line per step), as the Q4_K tiles do (matmul_x86_q4k_lanes_avx2.h).
constexpr int64_t kIQ4XSLanesAhead = 4;  // super-blocks

// One super-block's per-row constants for one 8-row half of a tile.
struct IQ4XSLaneConsts {
  __m256i sc[8];  // sub-block i: row j's sc - 32 as the int16 pair (sc - 32, sc - 32) in lane j
  __m256 d;       // row j's d
};

// Super-block sb (its first byte) of a tile: both halves' constants.
TC_SIMD_INLINE void iq4xs_lane_consts(const std::byte* sb, IQ4XSLaneConsts (&c)[2]) {
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m256i m3 = _mm256_set1_epi16(3), k32 = _mm256_set1_epi16(32);
  // The 16 rows' scales_h as int16: bits 2i..2i+1 are sub-block i's top bits.
  const __m256i top = _mm256_load_si256(reinterpret_cast<const __m256i*>(sb + kIQ4XSLanesScalesH));
  for (int b = 0; b < 4; ++b) {
    const __m128i l = _mm_load_si128(reinterpret_cast<const __m128i*>(sb + kIQ4XSLanesScalesL) + b);
    const __m256i low[2] = {_mm256_cvtepu8_epi16(_mm_and_si128(l, m4)),
                            _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(l, 4), m4))};
    for (int e = 0; e < 2; ++e) {
      const int i = 2 * b + e;
      const __m256i hi2 = _mm256_and_si256(_mm256_srli_epi16(top, 2 * i), m3);
      // Rows 0-7 in the low 128 bits, 8-15 in the high ones, as int16.
      const __m256i s = _mm256_sub_epi16(_mm256_or_si256(low[e], _mm256_slli_epi16(hi2, 4)), k32);
      const __m256i lo_pairs = _mm256_unpacklo_epi16(s, s);  // rows 0-3 | 8-11, each twice
      const __m256i hi_pairs = _mm256_unpackhi_epi16(s, s);  // rows 4-7 | 12-15
      c[0].sc[i] = _mm256_permute2x128_si256(lo_pairs, hi_pairs, 0x20);
      c[1].sc[i] = _mm256_permute2x128_si256(lo_pairs, hi_pairs, 0x31);
    }
  }
  for (int h = 0; h < 2; ++h) {
    c[h].d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kIQ4XSLanesD) + h));
  }
}

// Step k of sub-block i of a tile's super-block for one 8-row half h: v[0]
// the levels of elements 32i + 4k.. (low nibbles), v[1] those of 32i + 16 +
// 4k.. (high nibbles), v[2] and v[3] their magnitudes; each row's 4 in its lane.
TC_SIMD_INLINE void iq4xs_lane_lookup(const std::byte* sb, int i, int k, int h, __m256i (&v)[4]) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i table = iq4_table();
  const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(sb + iq4xs_lanes_qs(i, k) + 32 * h));
  v[0] = _mm256_shuffle_epi8(table, _mm256_and_si256(w, m4));
  v[1] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(w, 4), m4));
  v[2] = _mm256_abs_epi8(v[0]);
  v[3] = _mm256_abs_epi8(v[1]);
}

// Where a pass's levels come from: looked up in the tile as it goes, H
// halves from h0, the stream prefetched ahead if pf is set.
struct IQ4XSInTile {
  const std::byte* sb;
  int h0;
  const char* pf;  // the super-block to prefetch meanwhile, a line per step, or nullptr
  TC_SIMD_INLINE void step(int i, int k, int h, __m256i (&v)[4]) const {
    if (pf != nullptr && h == 0) {
      if (i == 0 && k == 0) {
        _mm_prefetch(pf + kIQ4XSLanesScalesL, _MM_HINT_T1);
        _mm_prefetch(pf + kIQ4XSLanesScalesL + 64, _MM_HINT_T1);
      }
      _mm_prefetch(pf + iq4xs_lanes_qs(i, k), _MM_HINT_T1);
    }
    iq4xs_lane_lookup(sb, i, k, h0 + h, v);
  }
};

// The integer totals T = sum (sc - 32) level x of one super-block for H
// halves (c[0..H), the levels from `w`) and T tokens (xq[t]: the token's
// 256 activations of this super-block).
template <int H, int T, class Src>
TC_SIMD_INLINE void iq4xs_lane_totals(const Src& w, const IQ4XSLaneConsts* c, const int8_t* const (&xq)[T],
                                      __m256i (&t_sum)[T][H]) {
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) t_sum[t][h] = _mm256_setzero_si256();
  }
#pragma GCC unroll 1
  for (int i = 0; i < 8; ++i) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m256i v[H][4];
      for (int h = 0; h < H; ++h) w.step(i, k, h, v[h]);
      for (int t = 0; t < T; ++t) {
        const __m256i xa = lane_x4(xq[t] + 32 * i + 4 * k);
        const __m256i xb = lane_x4(xq[t] + 32 * i + 16 + 4 * k);
        for (int h = 0; h < H; ++h) {
          const __m256i pa = _mm256_maddubs_epi16(v[h][2], _mm256_sign_epi8(xa, v[h][0]));
          const __m256i pb = _mm256_maddubs_epi16(v[h][3], _mm256_sign_epi8(xb, v[h][1]));
          const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(pa, c[h].sc[i]), _mm256_madd_epi16(pb, c[h].sc[i]));
          t_sum[t][h] = _mm256_add_epi32(t_sum[t][h], s);
        }
      }
    }
  }
}

// The kernel as the drivers of matmul_x86_k16_lane_passes.h take it (the
// activations' 16-element sums unused: IQ4_XS's levels have no offset).
struct IQ4XSLane {
  using Consts = IQ4XSLaneConsts;
  // Tokens per pass over an 8-row half: an int32 total per token, a step's
  // levels and magnitudes (4 vectors) and the token's two broadcasts.
  // Passes of up to 6 (the command above, two alternating runs) took
  // 0.9-1.1x the time at 4-16 tokens, and 512 tokens ran at 116-165
  // GFLOP/s against 171-177.
  static constexpr int kTokens = 4;
  template <int H, int T, class Src>
  TC_SIMD_INLINE static void totals(const Src& w, const Consts* c, const int8_t* const (&xq)[T],
                                    const int16_t* const (&)[T], __m256i (&total)[T][H]) {
    iq4xs_lane_totals<H, T>(w, c, xq, total);
  }
};

// Tile rt's chunk from super-block sb0 for tokens [t0, t1): one token
// unpacks each super-block's constants as it comes; more share a chunk's.
TC_SIMD_INLINE void iq4xs_lane_chunk(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t n_sb, int64_t t0,
                                     int64_t t1, bool prefetch) {
  const std::byte* tile = a.w + rt / kIQ4XSLanes16Rows * a.lane_tile_bytes;
  const int64_t count = min64(4, n_sb - sb0);
  auto in_tile = [&](int h0, bool pf) __attribute__((always_inline)) {
    return [=](int s) __attribute__((always_inline)) {
      const std::byte* sb = tile + (sb0 + s) * kIQ4XSLanesSbBytes;
      const char* ahead = reinterpret_cast<const char*>(sb) + kIQ4XSLanesAhead * kIQ4XSLanesSbBytes;
      return IQ4XSInTile{sb, h0, pf ? ahead : nullptr};
    };
  };
  if (t1 - t0 == 1) {
    IQ4XSLaneConsts c[2];
    auto consts_of = [&](int s) __attribute__((always_inline)) -> const IQ4XSLaneConsts(&)[2] {
      iq4xs_lane_consts(tile + (sb0 + s) * kIQ4XSLanesSbBytes, c);
      return c;
    };
    return k16_lane_pass<IQ4XSLane, 2, 1>(a, rt, sb0, count, consts_of, 0, t0, in_tile(0, prefetch));
  }
  IQ4XSLaneConsts c[4][2];
  for (int64_t s = 0; s < count; ++s) iq4xs_lane_consts(tile + (sb0 + s) * kIQ4XSLanesSbBytes, c[s]);
  for (int h = 0; h < 2; ++h) {
    auto src_of = [&](bool first) __attribute__((always_inline)) { return in_tile(h, prefetch && h == 0 && first); };
    k16_lane_half<IQ4XSLane>(a, rt, sb0, count, c, h, t0, t1, src_of);
  }
}

// Outputs [r0, r1) of an IQ4_XSLanes16 matrix (whole 16-row tiles, below
// a.lane_rows), every token.
void run_lanes16_iq4_xs(const MatmulArgs& a, int64_t r0, int64_t r1) {
  auto chunk = [&a](int64_t rt, int64_t sb0, int64_t n_sb, int64_t t0, int64_t t1, bool prefetch)
                   __attribute__((always_inline)) { iq4xs_lane_chunk(a, rt, sb0, n_sb, t0, t1, prefetch); };
  k16_lane_sweep(a, r0, r1, chunk);
}

}  // namespace
}  // namespace tc::kernels::detail
