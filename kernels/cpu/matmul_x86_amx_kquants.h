// Internal to the amx matmul variant (matmul_amx.cpp): Q4_K, Q5_K, Q6_K and
// IQ4_XS weights on AMX tiles (matmul_x86_amx.h has the driver), in the
// super-block lane order (matmul_x86_superblock.h, SuperBlockLanes).
//
// The pack folds each sub-block's integer scale into its quants: w = sc q
// (Q6_K: sc (q - 32); IQ4_XS: (ls - 32) level), at most 63 x 31, 128 x 32
// or 32 x 127 in magnitude, is split
// as w = 64 hi + lo with lo in 0..63 and hi in -64..64, both signed bytes.
// Two C tiles then take a whole super-block's T = sum w x = 64 sum hi x +
// sum lo x over its four 64-element pieces (8 tile multiplies of full
// depth), where one tile per sub-block had taken 8 or 16 multiplies of a
// quarter or half the depth and as many C-tile stores, the larger cost.
// Per token the finish forms T = (C_hi << 6) + C_lo (exact in int32) and,
// for the types with mins, M = sum m xsum in int32 (below 8 x 63 x 4064);
// then lane s = fma(T, d dx, +0) and lane 4 + s = fma(M,
// -dmin dx, +0), each a zmm over the tile's 16 rows, summed in the chunk's
// lane tree and added to y: the bits of every other path of the type.
#pragma once

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__) && defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/matmul_x86_amx.h"
#include "kernels/cpu/matmul_x86_kquants.h"
#include "kernels/cpu/matmul_x86_q8_lanes.h"

namespace tc::kernels::detail {
namespace {

// Per type: a super-block's 8 sub-block scales and mins as the pack needs
// them (scales()), and the 32 products w of its elements 32c..32c+31 as
// int16 (products()).
template <class Block>
struct AmxTraitsK4Scales {
  static void scales(const Block& b, int (&sc)[8], int (&m)[8]) {
    uint8_t s8[8], m8[8];
    q4_K_scales_mins(b.scales, s8, m8);
    for (int j = 0; j < 8; ++j) {
      sc[j] = s8[j];
      m[j] = m8[j];
    }
  }
};

struct AmxTraitsQ4_K : AmxTraitsK4Scales<BlockQ4_K> {
  using Block = BlockQ4_K;
  static constexpr bool kMins = true;
  // Element 32c + l: nibble c % 2 of qs[32 (c / 2) + l], scale sc_c.
  TC_SIMD_INLINE static __m512i products(const Block& b, int c, const int (&sc)[8]) {
    const __m256i raw = loadu32(b.qs + 32 * (c / 2));
    const __m256i q = _mm256_and_si256(c % 2 == 0 ? raw : _mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0f));
    return _mm512_mullo_epi16(_mm512_cvtepu8_epi16(q), _mm512_set1_epi16(static_cast<short>(sc[c])));
  }
};

struct AmxTraitsQ5_K : AmxTraitsK4Scales<BlockQ5_K> {
  using Block = BlockQ5_K;
  static constexpr bool kMins = true;
  // As Q4_K's, with the 5th bit of element 32c + l in bit c of qh[l] (a
  // 16-bit shift by less than 8, masked per byte: exact, as move_bit).
  TC_SIMD_INLINE static __m512i products(const Block& b, int c, const int (&sc)[8]) {
    const __m256i raw = loadu32(b.qs + 32 * (c / 2));
    __m256i q = _mm256_and_si256(c % 2 == 0 ? raw : _mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0f));
    const __m256i qh = loadu32(b.qh);
    const __m256i at4 =
        c <= 4 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - c)) : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(c - 4));
    q = _mm256_or_si256(q, _mm256_and_si256(at4, _mm256_set1_epi8(0x10)));
    return _mm512_mullo_epi16(_mm512_cvtepu8_epi16(q), _mm512_set1_epi16(static_cast<short>(sc[c])));
  }
};

struct AmxTraitsQ6_K {
  using Block = BlockQ6_K;
  static constexpr bool kMins = false;
  static void scales(const Block&, int (&)[8], int (&)[8]) {}  // 16 of them: products() reads them
  // Element 32c + l = 128 half + 32 j + l (c = 4 half + j, OpsQ6_K::unpack):
  // level (low 4 bits | 2 high bits << 4) - 32, scale of its 16-element
  // sub-block 2c + l / 16.
  TC_SIMD_INLINE static __m512i products(const Block& b, int c, const int (&)[8]) {
    const int half = c / 4, j = c % 4;
    const __m256i l = loadu32(b.ql + 64 * half + 32 * (j % 2));
    const __m256i hb = loadu32(b.qh + 32 * half);
    const __m256i lo = _mm256_and_si256(j < 2 ? l : _mm256_srli_epi16(l, 4), _mm256_set1_epi8(0x0f));
    const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(2 * j)),
                                                          _mm256_set1_epi8(0x03)),
                                         4);
    const __m256i level = _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32));
    const __m512i sc = _mm512_maskz_inserti64x4(0xff, _mm512_set1_epi16(b.scales[2 * c]),
                                                _mm256_set1_epi16(b.scales[2 * c + 1]), 1);
    return _mm512_mullo_epi16(_mm512_cvtepi8_epi16(level), sc);
  }
};

struct AmxTraitsIQ4_XS {
  using Block = BlockIQ4_XS;
  static constexpr bool kMins = false;
  // Sub-block j: ls = nibble j % 2 of scales_l[j / 2] | bits 2j..2j+1 of
  // scales_h << 4, the scale ls - 32.
  static void scales(const Block& b, int (&sc)[8], int (&)[8]) {
    for (int j = 0; j < 8; ++j) {
      sc[j] = (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
    }
  }
  // Sub-block c's levels (kIQ4NLValues of its nibbles, element order).
  TC_SIMD_INLINE static __m512i products(const Block& b, int c, const int (&sc)[8]) {
    const __m256i level = _mm256_shuffle_epi8(iq4_table(), nibbles32(b.qs + 16 * c));
    return _mm512_mullo_epi16(_mm512_cvtepi8_epi16(level), _mm512_set1_epi16(static_cast<short>(sc[c])));
  }
};

template <class Traits>
struct AmxSuperBlock {
  using Block = typename Traits::Block;
  static constexpr int kSuper = 4;  // super-blocks per chunk: the lane order's
  static constexpr int kPieces = kQK_K / 64;
  static constexpr int64_t kBlockElems = kQK_K;
  static constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(Block));

  // int32 [token][super-block s: 2s C_hi, 2s + 1 C_lo][row].
  struct Sums {
    static constexpr int kBlocks = kSuper;
    static constexpr int64_t kTokenStride = 4 * 2 * kSuper * kAmxRows;  // bytes
    alignas(64) int32_t s[kAmxTokens][2 * kSuper][kAmxRows];
  };

  // A 16-row tile's chunk: per super-block s and 64-element piece k the B
  // tiles of hi and lo (16 steps x 16 rows x 4 bytes); the rows' scales.
  struct Pack {
    alignas(64) int8_t hi[kSuper][kPieces][16][4 * kAmxRows];
    alignas(64) int8_t lo[kSuper][kPieces][16][4 * kAmxRows];
    alignas(64) int32_t m[kSuper][4][kAmxRows];  // the rows' mins m_2i, m_2i+1 as an int16 pair (kMins)
    alignas(64) float d[kSuper][kAmxRows];
    alignas(64) float ndmin[kSuper][kAmxRows];  // -dmin (kMins)
  };

  // C tiles 0 (hi) and 1 (lo); A tiles 2-3 (16 tokens x 64 bytes); B tiles
  // 4-5 (hi) and 6-7 (lo), 16 steps x 16 rows x 4 bytes.
  static const AmxTileConfig& config() {
    static const AmxTileConfig c = [] {
      AmxTileConfig t;
      for (int i = 0; i < 8; ++i) t.tile(i, 16, 64);
      return t;
    }();
    return c;
  }

  // c0, nb: the chunk's first super-block and count.
  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    for (int h = 0; h < kAmxRows / 8; ++h) {
      const Block* blk[8];
      for (int r = 0; r < 8; ++r) blk[r] = reinterpret_cast<const Block*>(weight_row(a, rt + 8 * h + r)) + c0;
      for (int64_t s = 0; s < nb; ++s) {
        int sc[8][8] = {}, mn[8][8] = {};
        for (int r = 0; r < 8; ++r) Traits::scales(blk[r][s], sc[r], mn[r]);
        // Piece c of 32 elements: steps 8 (c % 2) .. of B tile c / 2.
        for (int c = 0; c < 8; ++c) {
          __m256i vh[8], vl[8], steps[8];
          for (int r = 0; r < 8; ++r) {
            const __m512i w = Traits::products(blk[r][s], c, sc[r]);
            // (Zero-masked forms with every lane kept: GCC 12's plain ones
            // read an undefined vector and warn, as LaneVec16::cvt_f says.)
            vh[r] = _mm512_maskz_cvtepi16_epi8(~__mmask32{0}, _mm512_srai_epi16(w, 6));
            vl[r] = _mm512_maskz_cvtepi16_epi8(~__mmask32{0}, _mm512_and_si512(w, _mm512_set1_epi16(63)));
          }
          transpose_dwords_8x8(vh, steps);
          for (int k = 0; k < 8; ++k) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(p.hi[s][c / 2][8 * (c % 2) + k] + 32 * h), steps[k]);
          }
          transpose_dwords_8x8(vl, steps);
          for (int k = 0; k < 8; ++k) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(p.lo[s][c / 2][8 * (c % 2) + k] + 32 * h), steps[k]);
          }
        }
        for (int r = 0; r < 8; ++r) {
          p.d[s][8 * h + r] = _cvtsh_ss(blk[r][s].d);
          if constexpr (Traits::kMins) {
            p.ndmin[s][8 * h + r] = -_cvtsh_ss(blk[r][s].dmin);
            for (int i = 0; i < 4; ++i) p.m[s][i][8 * h + r] = mn[r][2 * i] | (mn[r][2 * i + 1] << 16);
          }
        }
      }
    }
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    const int64_t nb = min64(kSuper, a.n_in / kQK_K - c0);
    prefetch_rows(a, rt, kAmxRows, c0 * kBlockBytes, nb * kBlockBytes);
  }

  // One super-block's two totals (C_hi, C_lo) for 16 tokens into out:
  // per 64-element piece k an A tile from the activations and the B tiles
  // of hi and lo, two register sets taking turns. (A macro: GCC's tile
  // intrinsics want their tile numbers as literals.)
  TC_SIMD_INLINE static void super_sums(const Pack& p, const std::byte* xq, int64_t stride, int64_t b, int s,
                                        Sums& out) {
    constexpr int64_t kOut = Sums::kTokenStride;
    const std::byte* x = xq + kQK_K * b;
#define TC_AMX_K_PIECE(ta, thi, tlo, k) \
  _tile_loadd(ta, x + 64 * (k), stride); \
  _tile_loadd(thi, p.hi[s][k], 64);      \
  _tile_loadd(tlo, p.lo[s][k], 64);      \
  _tile_dpbssd(0, ta, thi);              \
  _tile_dpbssd(1, ta, tlo)
    _tile_zero(0);
    _tile_zero(1);
    TC_AMX_K_PIECE(2, 4, 6, 0);
    TC_AMX_K_PIECE(3, 5, 7, 1);
    TC_AMX_K_PIECE(2, 4, 6, 2);
    TC_AMX_K_PIECE(3, 5, 7, 3);
#undef TC_AMX_K_PIECE
    _tile_stored(0, out.s[0][2 * s], kOut);
    _tile_stored(1, out.s[0][2 * s + 1], kOut);
  }
  // Step 1 for super-blocks b0 + i and b0 + i + 1 (only b0 + i when i + 1 == nb).
  static void pair_sums(const Pack& p, const std::byte* xq, int64_t stride, int64_t b0, int64_t i, int64_t nb,
                        Sums& out) {
    super_sums(p, xq, stride, b0 + i, static_cast<int>(i), out);
    if (i + 1 < nb) super_sums(p, xq, stride, b0 + i + 1, static_cast<int>(i + 1), out);
  }

  TC_SIMD_INLINE static void finish(const Pack& p, const Sums& sums, int t, const XRow& x, int64_t b0, int64_t nb,
                                    float* out, bool first) {
    using V = LaneVec16;
    using F = V::F;
    const F zero = V::zero_f();
    F lane[8];  // lane[s]: T_s d dx, lane[4 + s]: M_s (-dmin) dx
#pragma GCC unroll 4
    for (int s = 0; s < kSuper; ++s) {
      lane[s] = lane[4 + s] = zero;
      if (s >= nb) continue;
      const int64_t b = b0 + s;
      const __m512i total =
          _mm512_add_epi32(_mm512_maskz_slli_epi32(0xffff, V::load_i(sums.s[t][2 * s]), 6), V::load_i(sums.s[t][2 * s + 1]));
      const F dx = V::set1_f(x.d[b]);
      lane[s] = V::fma_f(V::cvt_f(total), V::mul_f(V::load_f(p.d[s]), dx), zero);
      if constexpr (Traits::kMins) {
        // M = sum m_j xs_j (xs_j: the activations' sum over sub-block j,
        // below 2^12) by vpdpwssd, pairs of sub-blocks at a time: xs as
        // int16 pairs (dwords 0, 1, 4, 5 of the packed vector), each
        // broadcast against the rows' (m_2i, m_2i+1).
        alignas(32) int32_t xs[8];
        const __m256i xs32 = _mm256_madd_epi16(load32(x.sum16 + 16 * b), _mm256_set1_epi16(1));
        _mm256_store_si256(reinterpret_cast<__m256i*>(xs), _mm256_packs_epi32(xs32, xs32));
        __m512i mi = _mm512_dpwssd_epi32(V::zero_i(), V::load_i(p.m[s][0]), _mm512_set1_epi32(xs[0]));
        mi = _mm512_dpwssd_epi32(mi, V::load_i(p.m[s][1]), _mm512_set1_epi32(xs[1]));
        mi = _mm512_dpwssd_epi32(mi, V::load_i(p.m[s][2]), _mm512_set1_epi32(xs[4]));
        mi = _mm512_dpwssd_epi32(mi, V::load_i(p.m[s][3]), _mm512_set1_epi32(xs[5]));
        lane[4 + s] = V::fma_f(V::cvt_f(mi), V::mul_f(V::load_f(p.ndmin[s]), dx), zero);
      }
    }
    const F sum = V::add_f(V::add_f(V::add_f(lane[0], lane[1]), V::add_f(lane[2], lane[3])),
                           V::add_f(V::add_f(lane[4], lane[5]), V::add_f(lane[6], lane[7])));
    V::storeu_f(out, first ? sum : V::add_f(V::load_f(out), sum));
  }
};

using AmxQ4_K = AmxSuperBlock<AmxTraitsQ4_K>;
using AmxQ5_K = AmxSuperBlock<AmxTraitsQ5_K>;
using AmxQ6_K = AmxSuperBlock<AmxTraitsQ6_K>;
using AmxIQ4_XS = AmxSuperBlock<AmxTraitsIQ4_XS>;

}  // namespace
}  // namespace tc::kernels::detail

#endif
