// Internal to the amx matmul variant (matmul_amx.cpp): what its GEMMs on
// AMX int8 tiles share (matmul_x86_amx_q8.h, matmul_x86_amx_q4.h; the
// super-block types in matmul_x86_amx_kquants.h, whose order is their own,
// matmul_x86_superblock.h). A tile
// multiply (TDPBSSD, signed x signed) gives the exact int32 sums of one
// 32-element block for 16 tokens x 16 weight rows at once; the float steps
// after it are the lane kernels', so the bits are those of every other path
// of the dtype (matmul_x86_q8_lanes.h and matmul_x86_q4_lanes.h give the
// order: per chunk of 32 blocks, two f32 chains of 8 lanes, block j of a
// group of 8 in lane kQ4GroupOrder, even groups in one chain and odd ones
// in the other, chain = fma(float(block sum), dw * dx, chain) from +0, the
// lanes summed as ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) and
// added to y chunk by chunk).
//
// Per 16 tokens, 16-row tile and chunk:
//   1. a kernel's pair_sums puts each block's sums through a C tile into
//      `BlockSums` (int32 [token][block][row]), A being 16 rows of the
//      prepared activations read in place (token t at xq + t * stride), B
//      the tile's weights as the kernel packed them;
//   2. per token, the chunk's 16 chain lanes (a zmm each over the 16 rows)
//      stay in registers while the blocks' sums are converted and added.
// The outputs of a block of tokens gather in L1 over a tile's chunks and
// go to y once: added to y chunk by chunk, over as many pages as tokens,
// they took a third of the time. On the Xeon machine a block's tile loads,
// multiply and store take about 80 cycles, as long as 128 vpdpbusd, but
// for 8192 multiply-adds where vpdpbusd does 64 (the store out of the C
// tile is the larger part).
#pragma once

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__) && defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_lanes.h"
#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

constexpr int kAmxTokens = 16;  // rows of an A tile and of a C tile
constexpr int kAmxRows = 16;    // weight rows, a C tile's int32 columns

// LDTILECFG's 64-byte operand, palette 1 (Intel SDM vol. 2, LDTILECFG).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile i
  uint8_t rows[16] = {};    // rows of tile i
  AmxTileConfig& tile(int i, int n_rows, int n_bytes) {
    rows[i] = static_cast<uint8_t>(n_rows);
    colsb[i] = static_cast<uint16_t>(n_bytes);
    return *this;
  }
};

// Loads a tile configuration for the calling thread and, when it goes out
// of scope, puts back the one it found: other AMX code in the process
// (llama.cpp's, loaded beside this engine in the oracle tests) configures
// a thread's tiles once and faults (SIGILL) if they were released under
// it. With none found the tiles are released, so a context switch saves
// no tile data.
class AmxTiles {
 public:
  explicit AmxTiles(const AmxTileConfig& config) {
    _tile_storeconfig(&saved_);
    _tile_loadconfig(&config);
  }
  ~AmxTiles() {
    if (saved_.palette != 0) {
      _tile_loadconfig(&saved_);
    } else {
      _tile_release();
    }
  }
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;

 private:
  AmxTileConfig saved_;
};

// int32 [token][block][row]: a chunk's exact block sums for 16 tokens, a
// token's blocks one after another for step 2.
struct BlockSums {
  static constexpr int kBlocks = kChunkBlocks32;
  static constexpr int64_t kTokenStride = 4 * kChunkBlocks32 * kAmxRows;  // bytes
  alignas(64) int32_t s[kAmxTokens][kChunkBlocks32][kAmxRows];
};

// Step 2 for one token (index t of the 16, prepared row x): out (16 f32,
// 64-byte aligned) (+)= the chunk of blocks [b0, b0 + nb), dw[i] the tile
// rows' scales of block b0 + i. NB > 0: nb == NB known at compile time.
// With mw (Q4_1's minimums, [block][row]) each block's lane then also takes
// fma(sum32, mw * dx), as the group kernels' second FMA.
template <int64_t NB>
TC_SIMD_INLINE void amx_finish_token(const float (*dw)[kAmxRows], const float (*mw)[kAmxRows],
                                     const BlockSums& sums, int t, const XRow& x, int64_t b0, int64_t nb_rt,
                                     float* out, bool first) {
  using V = LaneVec16;
  using F = V::F;
  const int64_t nb = NB > 0 ? NB : nb_rt;
  F acc[2][8];
  for (auto& chain : acc) {
    for (F& lane : chain) lane = V::zero_f();
  }
  // Block 16k + j: chain j / 8 (an even or odd group), lane kQ4GroupOrder.
  for (int64_t i0 = 0; i0 < nb; i0 += 2 * kGroup) {
#pragma GCC unroll 16
    for (int j = 0; j < 2 * kGroup; ++j) {
      const int64_t i = i0 + j;
      if (i >= nb) break;
      F& lane = acc[j / kGroup][(j % kGroup) / 2 + 4 * (j % 2)];
      const F dx = V::set1_f(x.d[b0 + i]);
      lane = V::fma_f(V::cvt_f(V::load_i(sums.s[t][i])), V::mul_f(V::load_f(dw[i]), dx), lane);
      if (mw != nullptr) {
        lane = V::fma_f(V::set1_f(static_cast<float>(x.sum32[b0 + i])), V::mul_f(V::load_f(mw[i]), dx), lane);
      }
    }
  }
  F v[8];
  for (int l = 0; l < 8; ++l) v[l] = V::add_f(acc[0][l], acc[1][l]);
  const F sum = V::add_f(V::add_f(V::add_f(v[0], v[1]), V::add_f(v[2], v[3])),
                         V::add_f(V::add_f(v[4], v[5]), V::add_f(v[6], v[7])));
  V::storeu_f(out, first ? sum : V::add_f(V::load_f(out), sum));
}

// amx_finish_token with a whole chunk's count known at compile time.
TC_SIMD_INLINE void amx_finish_blocks(const float (*dw)[kAmxRows], const float (*mw)[kAmxRows],
                                      const BlockSums& sums, int t, const XRow& x, int64_t b0, int64_t nb, float* out,
                                      bool first) {
  if (nb == kChunkBlocks32) {
    amx_finish_token<kChunkBlocks32>(dw, mw, sums, t, x, b0, nb, out, first);
  } else {
    amx_finish_token<0>(dw, mw, sums, t, x, b0, nb, out, first);
  }
}

// Outputs [r0, r1) (whole 16-row tiles) for tokens [0, n_tokens) (whole
// groups of 16) of the call `a`, on AMX. Kernel (the dtype's):
//   Kernel::config()                          its tile configuration
//   Kernel::kBlockElems, Kernel::Sums         elements per block; a chunk's
//                                             sums (Sums::kBlocks blocks)
//   Kernel::Pack                              a tile's chunk of weights
//   Kernel::pack(p, a, rt, c0, nb)            packs tile rt's chunk
//   Kernel::prefetch(a, rt, c0)               fetches tile rt's chunk c0
//   Kernel::pair_sums(p, xq, stride, b0, i, nb, sums)   step 1 for blocks
//       b0 + i and b0 + i + 1 (i even; only b0 + i when i + 1 == nb)
//   Kernel::finish(p, sums, t, x, b0, nb, out, first)   step 2 for token t
// Step 1 of the next 16 tokens runs between step 2's tokens, so the tile
// unit and the vector units work at once.
template <class Kernel>
void run_amx_gemm(const MatmulArgs& a, int64_t r0, int64_t r1, int64_t n_tokens) {
  constexpr int64_t kGroupsPerBlock = kGemmBlockTokens / kAmxTokens;
  using Sums = typename Kernel::Sums;
  constexpr int64_t kChunk = Sums::kBlocks;
  const int64_t n_blocks = a.n_in / Kernel::kBlockElems;
  const AmxTiles tiles(Kernel::config());
  typename Kernel::Pack p;
  Sums sums[2];
  alignas(64) float out[kGroupsPerBlock][kAmxTokens][kAmxRows];
  for (int64_t tb = 0; tb < n_tokens; tb += kGemmBlockTokens) {
    const int64_t n_groups = (min64(n_tokens, tb + kGemmBlockTokens) - tb) / kAmxTokens;
    for (int64_t rt = r0; rt < r1; rt += kAmxRows) {
      for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunk) {
        const int64_t nb = min64(kChunk, n_blocks - c0);
        // The next chunk of this tile, or the next tile's first, on its way.
        if (c0 + kChunk < n_blocks) {
          Kernel::prefetch(a, rt, c0 + kChunk);
        } else if (rt + kAmxRows < r1) {
          Kernel::prefetch(a, rt + kAmxRows, 0);
        }
        Kernel::pack(p, a, rt, c0, nb);
        const bool first = c0 == 0;
        auto xq = [&](int64_t g) { return a.xq + (tb + g * kAmxTokens) * a.xl.stride; };
        for (int64_t i = 0; i < nb; i += 2) Kernel::pair_sums(p, xq(0), a.xl.stride, c0, i, nb, sums[0]);
        for (int64_t g = 0; g < n_groups; ++g) {
          const Sums& now = sums[g % 2];
          Sums& next = sums[(g + 1) % 2];
          const bool more = g + 1 < n_groups;
          for (int t = 0; t < kAmxTokens; ++t) {
            // Pair t of the next group (nb <= 32: at most 16 pairs).
            if (more && 2 * t < nb) Kernel::pair_sums(p, xq(g + 1), a.xl.stride, c0, 2 * t, nb, next);
            Kernel::finish(p, now, t, x_row(a, tb + g * kAmxTokens + t), c0, nb, out[g][t], first);
          }
        }
      }
      for (int64_t g = 0; g < n_groups; ++g) {
        for (int t = 0; t < kAmxTokens; ++t) {
          LaneVec16::storeu_f(a.y + (tb + g * kAmxTokens + t) * a.n_out + rt, LaneVec16::load_f(out[g][t]));
        }
      }
    }
  }
}

// The same call for tokens [t0, a.n_tokens) only (the ones after the last
// whole group of 16): its activations and outputs from token t0 on.
inline MatmulArgs tokens_from(const MatmulArgs& a, int64_t t0) {
  MatmulArgs tail = a;
  tail.xq = a.xq + t0 * a.xl.stride;
  tail.y = a.y + t0 * a.n_out;
  tail.n_tokens = a.n_tokens - t0;
  return tail;
}

// Outputs [r0, r1) of a row-layout matrix: whole tiles and groups of 16
// tokens on AMX, the rest by `base` (the same bits).
template <class Kernel>
void run_amx_rows(const MatmulArgs& a, int64_t r0, int64_t r1, const MatmulIsa& base) {
  const int64_t r_tiles = r0 + (r1 - r0) / kAmxRows * kAmxRows;
  const int64_t t_groups = a.n_tokens / kAmxTokens * kAmxTokens;
  run_amx_gemm<Kernel>(a, r0, r_tiles, t_groups);
  if (t_groups < a.n_tokens && r0 < r_tiles) base.compute_rows(tokens_from(a, t_groups), r0, r_tiles);
  if (r_tiles < r1) base.compute_rows(a, r_tiles, r1);
}

// Outputs [r0, r1) (whole tiles below a.lane_rows) of a Q4_0Lanes16 or
// Q8_0Lanes16 matrix: groups of 16 tokens on AMX, the rest by `base`.
template <class Kernel>
void run_amx_lanes16(const MatmulArgs& a, int64_t r0, int64_t r1, const MatmulIsa& base) {
  const int64_t t_groups = a.n_tokens / kAmxTokens * kAmxTokens;
  run_amx_gemm<Kernel>(a, r0, r1, t_groups);
  if (t_groups < a.n_tokens) base.compute_rows(tokens_from(a, t_groups), r0, r1);
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
