// Internal to the amx matmul variant (matmul_amx.cpp): Q4_K and Q5_K
// weights on AMX tiles (matmul_x86_amx.h has the scheme). A tile multiply
// gives each 32-element sub-block's exact sum D = sum q x (q 0..15 or
// 0..31, as signed bytes); per token and super-block s of a chunk the
// finish then forms the totals of the lane order (matmul_x86_quant.h,
// SuperBlockLanes):
//   T = sum_c sc_c D_c. Q4_K in f32 with every step exact: each product
//       below 63 x 60960 < 2^22, each half of 4 below 2^24, and the two
//       halves' sum rounded once, as converting the int32 total rounds it.
//       Q5_K's products reach 2^23, so its T is summed in int32 and
//       converted;
//   M = sum_c m_c xsum_c (xsum: the activations' sum over sub-block c):
//       below 8 x 63 x 4064 < 2^24, exact throughout in f32;
// then lane s = fma(T, d dx, +0) and lane 4 + s = fma(M, -dmin dx, +0),
// each a zmm over the tile's 16 rows, summed in the chunk's lane tree and
// added to y: the bits of every other path of the type.
//
// A chunk is 4 super-blocks (32 sub-blocks, OpsQ4_K::kChunkBlocks); its
// B tiles are laid out as Q8_0's blocks (amx_pair_sums_k32).
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

// Block: BlockQ4_K or BlockQ5_K (kFifth: its 5th bits, element 64k + 32h
// + l's is bit 2k + h of qh[l]).
template <class Block, bool kFifth>
struct AmxK4 {
  static constexpr int kSub = kQK_K / 32;                   // sub-blocks per super-block
  static constexpr int kSuper = kChunkBlocks32 / kSub;      // super-blocks per chunk
  static constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(Block));
  static_assert(kSuper == OpsQ4_K::kChunkBlocks && kSuper == OpsQ5_K::kChunkBlocks, "a chunk is the Ops'");
  using Sums = BlockSums;
  static constexpr int64_t kBlockElems = 32;

  // A 16-row tile's chunk, sub-block c (of the chunk) and super-block s.
  struct Pack {
    alignas(64) int8_t q[kChunkBlocks32][8][4 * kAmxRows];  // c, step: the rows' 4 quants (0..15 or 0..31)
    alignas(64) float sc[kChunkBlocks32][kAmxRows];         // c: the rows' 6-bit scales
    alignas(64) int32_t sc_i[kChunkBlocks32][kAmxRows];     // the same as int32 (kFifth)
    alignas(64) float m[kChunkBlocks32][kAmxRows];          // c: the rows' 6-bit mins
    alignas(64) float d[kSuper][kAmxRows];                  // s: the rows' d
    alignas(64) float ndmin[kSuper][kAmxRows];              // s: the rows' -dmin
  };

  static const AmxTileConfig& config() {
    static const AmxTileConfig c = AmxTileConfig::blocks32();
    return c;
  }
  // c0, nb: the chunk's first sub-block and count (whole super-blocks).
  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int h = 0; h < kAmxRows / 8; ++h) {
      const Block* blk[8];
      for (int r = 0; r < 8; ++r) blk[r] = reinterpret_cast<const Block*>(weight_row(a, rt + 8 * h + r)) + c0 / kSub;
      for (int64_t s = 0; s < nb / kSub; ++s) {
        // Sub-block 2k: the low nibbles of qs[32k..32k+31], 2k + 1 the high ones.
        for (int c = 0; c < kSub; ++c) {
          __m256i v[8], steps[8];
          for (int r = 0; r < 8; ++r) {
            const __m256i raw = loadu32(blk[r][s].qs + 32 * (c / 2));
            v[r] = _mm256_and_si256(c % 2 == 0 ? raw : _mm256_srli_epi16(raw, 4), m4);
            if constexpr (kFifth) {
              // Bit c of each qh byte to bit 4 (a 16-bit shift by less than
              // 8, masked per byte: exact, as move_bit).
              const __m256i qh = loadu32(blk[r][s].qh);
              const __m256i at4 = c <= 4 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - c))
                                         : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(c - 4));
              v[r] = _mm256_or_si256(v[r], _mm256_and_si256(at4, _mm256_set1_epi8(0x10)));
            }
          }
          transpose_dwords_8x8(v, steps);
          for (int k = 0; k < 8; ++k) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(p.q[kSub * s + c][k] + 32 * h), steps[k]);
          }
        }
        for (int r = 0; r < 8; ++r) {
          for (int c = 0; c < kSub; ++c) {
            int sc, m;
            q4_K_scale_min(blk[r][s].scales, c, sc, m);
            p.sc[kSub * s + c][8 * h + r] = static_cast<float>(sc);
            p.sc_i[kSub * s + c][8 * h + r] = sc;
            p.m[kSub * s + c][8 * h + r] = static_cast<float>(m);
          }
          p.d[s][8 * h + r] = _cvtsh_ss(blk[r][s].d);
          p.ndmin[s][8 * h + r] = -_cvtsh_ss(blk[r][s].dmin);
        }
      }
    }
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    const int64_t nb = min64(kChunkBlocks32, a.n_in / 32 - c0);
    prefetch_rows(a, rt, kAmxRows, c0 / kSub * kBlockBytes, nb / kSub * kBlockBytes);
  }
  static void pair_sums(const Pack& p, const std::byte* xq, int64_t stride, int64_t b0, int64_t i, int64_t nb,
                        BlockSums& out) {
    amx_pair_sums_k32(p.q, xq, stride, b0, i, nb, out);
  }
  TC_SIMD_INLINE static void finish(const Pack& p, const BlockSums& sums, int t, const XRow& x, int64_t b0,
                                    int64_t nb, float* out, bool first) {
    using V = LaneVec16;
    using F = V::F;
    const F zero = V::zero_f();
    const int64_t n_super = nb / kSub;
    F lane[8];  // lane[s]: T_s d dx, lane[4 + s]: M_s (-dmin) dx
#pragma GCC unroll 4
    for (int s = 0; s < kSuper; ++s) {
      lane[s] = lane[4 + s] = zero;
      if (s >= n_super) continue;
      const int64_t b = b0 / kSub + s;  // the super-block
      // The activations' sums over each sub-block, as f32 (exact: below 2^12).
      alignas(32) float xs[kSub];
      const __m256i sum16 = load32(x.sum16 + 16 * b);
      _mm256_store_ps(xs, _mm256_cvtepi32_ps(_mm256_madd_epi16(sum16, _mm256_set1_epi16(1))));
      const int c = kSub * s;
      F total;
      if constexpr (kFifth) {
        __m512i ti = _mm512_mullo_epi32(V::load_i(sums.s[t][c]), V::load_i(p.sc_i[c]));
        for (int k = 1; k < kSub; ++k) {
          ti = _mm512_add_epi32(ti, _mm512_mullo_epi32(V::load_i(sums.s[t][c + k]), V::load_i(p.sc_i[c + k])));
        }
        total = V::cvt_f(ti);
      } else {
        auto scaled = [&](int k) __attribute__((always_inline)) { return V::cvt_f(V::load_i(sums.s[t][c + k])); };
        F lo = V::mul_f(scaled(0), V::load_f(p.sc[c]));
        F hi = V::mul_f(scaled(4), V::load_f(p.sc[c + 4]));
        for (int k = 1; k < 4; ++k) {
          lo = V::fma_f(scaled(k), V::load_f(p.sc[c + k]), lo);
          hi = V::fma_f(scaled(4 + k), V::load_f(p.sc[c + 4 + k]), hi);
        }
        total = V::add_f(lo, hi);
      }
      F mins = V::mul_f(V::load_f(p.m[c]), V::set1_f(xs[0]));
      for (int k = 1; k < kSub; ++k) mins = V::fma_f(V::load_f(p.m[c + k]), V::set1_f(xs[k]), mins);
      const F dx = V::set1_f(x.d[b]);
      lane[s] = V::fma_f(total, V::mul_f(V::load_f(p.d[s]), dx), zero);
      lane[4 + s] = V::fma_f(mins, V::mul_f(V::load_f(p.ndmin[s]), dx), zero);
    }
    const F sum = V::add_f(V::add_f(V::add_f(lane[0], lane[1]), V::add_f(lane[2], lane[3])),
                           V::add_f(V::add_f(lane[4], lane[5]), V::add_f(lane[6], lane[7])));
    V::storeu_f(out, first ? sum : V::add_f(V::load_f(out), sum));
  }

};

using AmxQ4_K = AmxK4<BlockQ4_K, false>;
using AmxQ5_K = AmxK4<BlockQ5_K, true>;

}  // namespace
}  // namespace tc::kernels::detail

#endif
