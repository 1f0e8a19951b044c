// Internal to the amx matmul variant (matmul_amx.cpp): Q6_K weights on AMX
// tiles (matmul_x86_amx.h has the scheme). Q6_K scales 16-element
// sub-blocks, so a tile multiply takes 16 of them (A: 16 tokens x 16
// bytes, B: 4 steps x 16 rows x 4 bytes) and gives each sub-block's exact
// D = sum (q - 32) x (q - 32 in -32..31, a signed byte). Per token and
// super-block s of a chunk the finish forms the lane order's total T = sum
// sc D in int32 (16 products of up to 128 x 65024: no f32 shortcut stays
// exact) and lane s = fma(float(T), d dx, +0), lanes 4-7 +0 (matmul_x86_quant.h,
// SuperBlockLanes), summed in the chunk's lane tree and added to y: the
// bits of every other Q6_K path.
//
// A chunk is 4 super-blocks (64 sub-blocks, OpsQ6_K::kChunkBlocks).
#pragma once

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__) && defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_amx.h"
#include "kernels/cpu/matmul_x86_q8_lanes.h"

namespace tc::kernels::detail {
namespace {

struct AmxQ6_K {
  static constexpr int64_t kBlockElems = 16;  // a sub-block
  static constexpr int kSub = kQK_K / 16;     // sub-blocks per super-block
  static constexpr int kSuper = 4;            // super-blocks per chunk
  static constexpr int kChunk = kSuper * kSub;
  static constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(BlockQ6_K));
  static_assert(kSuper == OpsQ6_K::kChunkBlocks, "a chunk is OpsQ6_K's");
  using Sums = BlockSumsN<kChunk>;

  // A 16-row tile's chunk, sub-block k (of the chunk) and super-block s.
  struct Pack {
    alignas(64) int8_t q[kChunk][4][4 * kAmxRows];  // k, step: the rows' 4 levels q - 32
    alignas(64) int32_t sc[kChunk][kAmxRows];        // k: the rows' scales
    alignas(64) float d[kSuper][kAmxRows];           // s: the rows' d
  };

  // C tiles 0-1, A tiles 2-3 (16 tokens x 16 bytes), B tiles 4-5.
  static const AmxTileConfig& config() {
    static const AmxTileConfig c =
        AmxTileConfig().tile(0, 16, 64).tile(1, 16, 64).tile(2, 16, 16).tile(3, 16, 16).tile(4, 4, 64).tile(5, 4, 64);
    return c;
  }
  // c0, nb: the chunk's first sub-block and count (whole super-blocks).
  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    const __m256i k32 = _mm256_set1_epi8(32);
    for (int h = 0; h < kAmxRows / 8; ++h) {
      const BlockQ6_K* blk[8];
      for (int r = 0; r < 8; ++r) blk[r] = reinterpret_cast<const BlockQ6_K*>(weight_row(a, rt + 8 * h + r)) + c0 / kSub;
      for (int64_t s = 0; s < nb / kSub; ++s) {
        // 32-element piece c = 4 half + j: elements 128 half + 32 j (OpsQ6_K::unpack).
        for (int c = 0; c < 8; ++c) {
          const int half = c / 4, j = c % 4;
          __m256i v[8], steps[8];
          for (int r = 0; r < 8; ++r) {
            const __m256i l = loadu32(blk[r][s].ql + 64 * half + 32 * (j % 2));
            const __m256i hb = loadu32(blk[r][s].qh + 32 * half);
            const __m256i lo = _mm256_and_si256(j < 2 ? l : _mm256_srli_epi16(l, 4), m4);
            const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j), m2), 4);
            v[r] = _mm256_sub_epi8(_mm256_or_si256(lo, hi), k32);
          }
          transpose_dwords_8x8(v, steps);
          // Steps 0-3 are sub-block 2c's, 4-7 sub-block 2c + 1's.
          for (int k = 0; k < 8; ++k) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(p.q[kSub * s + 2 * c + k / 4][k % 4] + 32 * h), steps[k]);
          }
        }
        for (int r = 0; r < 8; ++r) {
          for (int k = 0; k < kSub; ++k) p.sc[kSub * s + k][8 * h + r] = blk[r][s].scales[k];
          p.d[s][8 * h + r] = _cvtsh_ss(blk[r][s].d);
        }
      }
    }
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    const int64_t nb = min64(kChunk, a.n_in / kBlockElems - c0);
    prefetch_rows(a, rt, kAmxRows, c0 / kSub * kBlockBytes, nb / kSub * kBlockBytes);
  }
  // Step 1 for sub-blocks b0 + i and b0 + i + 1 (nb is even).
  static void pair_sums(const Pack& p, const std::byte* xq, int64_t stride, int64_t b0, int64_t i, int64_t,
                        Sums& out) {
    constexpr int64_t kOut = Sums::kTokenStride;
    _tile_loadd(2, xq + 16 * (b0 + i), stride);
    _tile_loadd(4, p.q[i], 4 * kAmxRows);
    _tile_zero(0);
    _tile_dpbssd(0, 2, 4);
    _tile_loadd(3, xq + 16 * (b0 + i + 1), stride);
    _tile_loadd(5, p.q[i + 1], 4 * kAmxRows);
    _tile_zero(1);
    _tile_dpbssd(1, 3, 5);
    _tile_stored(0, out.s[0][i], kOut);
    _tile_stored(1, out.s[0][i + 1], kOut);
  }
  TC_SIMD_INLINE static void finish(const Pack& p, const Sums& sums, int t, const XRow& x, int64_t b0, int64_t nb,
                                    float* out, bool first) {
    using V = LaneVec16;
    using F = V::F;
    const F zero = V::zero_f();
    const int64_t n_super = nb / kSub;
    F lane[kSuper];  // T_s d dx; lanes 4-7 of the order are +0
#pragma GCC unroll 4
    for (int s = 0; s < kSuper; ++s) {
      lane[s] = zero;
      if (s >= n_super) continue;
      const int64_t b = b0 / kSub + s;  // the super-block
      const int c = kSub * s;
      __m512i total[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
      for (int k = 0; k < kSub; ++k) {
        total[k % 2] =
            _mm512_add_epi32(total[k % 2], _mm512_mullo_epi32(V::load_i(sums.s[t][c + k]), V::load_i(p.sc[c + k])));
      }
      const F scale = V::mul_f(V::load_f(p.d[s]), V::set1_f(x.d[b]));
      lane[s] = V::fma_f(V::cvt_f(_mm512_add_epi32(total[0], total[1])), scale, zero);
    }
    const F sum = V::add_f(V::add_f(V::add_f(lane[0], lane[1]), V::add_f(lane[2], lane[3])), zero);
    V::storeu_f(out, first ? sum : V::add_f(V::load_f(out), sum));
  }

};

}  // namespace
}  // namespace tc::kernels::detail

#endif
