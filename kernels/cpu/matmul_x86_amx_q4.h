// Internal to the amx matmul variant (matmul_amx.cpp): Q4_0 weights in the
// Q4_0Lanes16 layout (q4_lanes16.h), and Q4_1 rows (AmxQ4_1) or Q4_1Lanes16
// tiles (AmxQ4_1Lanes16), on AMX tiles (matmul_x86_amx.h has the scheme).
// Each Q4_0 block's sums are those of the signed levels q - 8, which are
// the lane kernel's sum(q x) - 8 sum(x); Q4_1's are those of q itself.
//
// The activations (Q8_32_NIB) keep blocks 2k and 2k+1 as [2k: 0-15 | 2k+1:
// 0-15 | 2k: 16-31 | 2k+1: 16-31], so a block's 32 bytes are not in one
// piece: A is the pair's 64 bytes of 16 tokens, and each block gets its own
// B tile with zero rows at the other block's places (16 steps of 4 bytes:
// block 2k in steps 0-3 and 8-11, block 2k+1 in 4-7 and 12-15). That
// doubles the multiply's work, which is not what limits it (the C tile's
// store is). A lone last block of an odd count is stored in order and takes
// a 32-byte A tile and an 8-step B tile.
#pragma once

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__) && defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_amx.h"
#include "kernels/cpu/matmul_x86_q8_lanes.h"

namespace tc::kernels::detail {
namespace {

struct AmxQ4_0 {
  using Sums = BlockSums;
  static constexpr int64_t kBlockElems = 32;
  // A 16-row tile's chunk: per block pair k, block 2k + h's B tile (16
  // steps x 16 rows x 4 bytes, levels -8..7, zeros at the other block's
  // steps); a lone last block's 8-step tile; the rows' f32 scales.
  struct Pack {
    alignas(64) int8_t pair[kChunkBlocks32 / 2][2][16][64];
    alignas(64) int8_t lone[8][64];
    alignas(64) float dw[kChunkBlocks32][kAmxRows];
    Pack() { std::memset(pair, 0, sizeof pair); }  // the zero steps are never written again
  };

  // C tiles 0-1; A tile 2 (16 tokens x a pair's 64 bytes); B tiles 3-4 (the
  // pair's two blocks); for a lone block A tile 5 (32 bytes) and B tile 6.
  static const AmxTileConfig& config() {
    static const AmxTileConfig c = AmxTileConfig()
                                       .tile(0, 16, 64)
                                       .tile(1, 16, 64)
                                       .tile(2, 16, 64)
                                       .tile(3, 16, 64)
                                       .tile(4, 16, 64)
                                       .tile(5, 16, 32)
                                       .tile(6, 8, 64);
    return c;
  }
  // Tile rt's bytes (q4_lanes16.h): qs [block][step 0-3][row][4], then d
  // f16 [block][row].
  static const std::byte* tile(const MatmulArgs& a, int64_t rt) { return a.w + rt / kAmxRows * a.lane_tile_bytes; }

  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    pack_tile<8>(p, a, rt, c0, nb);
  }
  // The chunk's levels q - kOffset (Q4_0: 8; Q4_1: 0) and scales from a
  // Q4_0Lanes16 or Q4_1Lanes16 tile.
  template <int kOffset>
  static void pack_tile(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    const std::byte* qs = tile(a, rt) + 256 * c0;
    const auto* d = reinterpret_cast<const uint16_t*>(tile(a, rt) + 256 * (a.n_in / 32)) + kAmxRows * c0;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i offset = _mm512_set1_epi8(kOffset);
    auto levels = [&](int64_t i, int s, __m512i& lo, __m512i& hi) __attribute__((always_inline)) {
      const __m512i raw = _mm512_load_si512(qs + 256 * i + 64 * s);
      lo = _mm512_sub_epi8(_mm512_and_si512(raw, m4), offset);
      hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(raw, 4), m4), offset);
    };
    for (int64_t i = 0; i < nb; ++i) {
      const bool lone = i == nb - 1 && nb % 2 == 1;
      for (int s = 0; s < 4; ++s) {
        __m512i lo, hi;
        levels(i, s, lo, hi);
        if (lone) {
          _mm512_store_si512(p.lone[s], lo);
          _mm512_store_si512(p.lone[4 + s], hi);
        } else {
          const int h = static_cast<int>(i % 2);
          _mm512_store_si512(p.pair[i / 2][h][4 * h + s], lo);
          _mm512_store_si512(p.pair[i / 2][h][8 + 4 * h + s], hi);
        }
      }
      _mm512_store_ps(p.dw[i], _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + kAmxRows * i))));
    }
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    const int64_t nb = min64(kChunkBlocks32, a.n_in / 32 - c0);
    const char* qs = reinterpret_cast<const char*>(tile(a, rt)) + 256 * c0;
    for (int64_t b = 0; b < 256 * nb; b += 64) _mm_prefetch(qs + b, _MM_HINT_T0);
    const char* d = reinterpret_cast<const char*>(tile(a, rt)) + 256 * (a.n_in / 32) + 32 * c0;
    for (int64_t b = 0; b < 32 * nb; b += 64) _mm_prefetch(d + b, _MM_HINT_T0);
  }
  static void pair_sums(const Pack& p, const std::byte* xq, int64_t stride, int64_t b0, int64_t i, int64_t nb,
                        BlockSums& out) {
    constexpr int64_t kOut = BlockSums::kTokenStride;
    if (i + 1 < nb) {
      _tile_loadd(2, xq + 32 * (b0 + i), stride);
      _tile_loadd(3, p.pair[i / 2][0], 64);
      _tile_zero(0);
      _tile_dpbssd(0, 2, 3);
      _tile_loadd(4, p.pair[i / 2][1], 64);
      _tile_zero(1);
      _tile_dpbssd(1, 2, 4);
      _tile_stored(0, out.s[0][i], kOut);
      _tile_stored(1, out.s[0][i + 1], kOut);
    } else {
      _tile_loadd(5, xq + 32 * (b0 + i), stride);
      _tile_loadd(6, p.lone, 64);
      _tile_zero(0);
      _tile_dpbssd(0, 5, 6);
      _tile_stored(0, out.s[0][i], kOut);
    }
  }
  TC_SIMD_INLINE static void finish(const Pack& p, const BlockSums& sums, int t, const XRow& x, int64_t b0,
                                    int64_t nb, float* out, bool first) {
    amx_finish_blocks(p.dw, nullptr, sums, t, x, b0, nb, out, first);
  }
};

// Q4_1 weights (row layout) on the same tiles: levels q (0..15) in Q4_0's
// pair and lone layout, packed 8 rows at a time (two blocks' 16 bytes of
// nibbles per row, one dword transpose), and per block the rows' d and
// minimum m, which the finish adds as m dx sum(x) (amx_finish_token): the
// group kernels' two FMAs per block (matmul_x86_group32.h).
struct AmxQ4_1 : AmxQ4_0 {
  struct Pack : AmxQ4_0::Pack {
    alignas(64) float mw[kChunkBlocks32][kAmxRows];
  };
  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int h = 0; h < kAmxRows / 8; ++h) {
      const BlockQ4_1* blk[8];
      for (int r = 0; r < 8; ++r) blk[r] = reinterpret_cast<const BlockQ4_1*>(weight_row(a, rt + 8 * h + r)) + c0;
      for (int64_t i = 0; i < nb; i += 2) {
        const int n = i + 1 < nb ? 2 : 1;
        __m256i v[8], steps[8];
        for (int r = 0; r < 8; ++r) {
          const __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[r][i].qs));
          const __m128i second =
              n == 2 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[r][i + 1].qs)) : _mm_setzero_si128();
          v[r] = _mm256_set_m128i(second, first);
        }
        // steps[4j + k]: block i + j's nibble bytes 4k..4k+3 of the 8 rows.
        transpose_dwords_8x8(v, steps);
        for (int j = 0; j < n; ++j) {
          const int64_t b = i + j;
          for (int k = 0; k < 4; ++k) {
            const __m256i raw = steps[4 * j + k];
            const __m256i lo = _mm256_and_si256(raw, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            int8_t* lo_step = n == 1 ? p.lone[k] : p.pair[b / 2][b % 2][4 * (b % 2) + k];
            int8_t* hi_step = n == 1 ? p.lone[4 + k] : p.pair[b / 2][b % 2][8 + 4 * (b % 2) + k];
            _mm256_store_si256(reinterpret_cast<__m256i*>(lo_step + 32 * h), lo);
            _mm256_store_si256(reinterpret_cast<__m256i*>(hi_step + 32 * h), hi);
          }
          for (int r = 0; r < 8; ++r) {
            p.dw[b][8 * h + r] = _cvtsh_ss(blk[r][b].d);
            p.mw[b][8 * h + r] = _cvtsh_ss(blk[r][b].m);
          }
        }
      }
    }
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(BlockQ4_1));
    const int64_t nb = min64(kChunkBlocks32, a.n_in / 32 - c0);
    prefetch_rows(a, rt, kAmxRows, c0 * kBlockBytes, nb * kBlockBytes);
  }
  TC_SIMD_INLINE static void finish(const Pack& p, const BlockSums& sums, int t, const XRow& x, int64_t b0,
                                    int64_t nb, float* out, bool first) {
    amx_finish_blocks(p.dw, p.mw, sums, t, x, b0, nb, out, first);
  }
};

// Q4_1Lanes16 tiles (q4_lanes16.h): Q4_0's tile pack without the offset,
// and the minimums from after the scales.
struct AmxQ4_1Lanes16 : AmxQ4_1 {
  static const uint16_t* mins(const MatmulArgs& a, int64_t rt, int64_t c0) {
    return reinterpret_cast<const uint16_t*>(tile(a, rt) + 288 * (a.n_in / 32)) + kAmxRows * c0;
  }
  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    pack_tile<0>(p, a, rt, c0, nb);
    const uint16_t* m = mins(a, rt, c0);
    for (int64_t i = 0; i < nb; ++i) _mm512_store_ps(p.mw[i], LaneVec16::cvt_ph(m + kAmxRows * i));
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    AmxQ4_0::prefetch(a, rt, c0);
    const int64_t nb = min64(kChunkBlocks32, a.n_in / 32 - c0);
    const char* m = reinterpret_cast<const char*>(mins(a, rt, c0));
    for (int64_t b = 0; b < 32 * nb; b += 64) _mm_prefetch(m + b, _MM_HINT_T0);
  }
};

}  // namespace
}  // namespace tc::kernels::detail

#endif
