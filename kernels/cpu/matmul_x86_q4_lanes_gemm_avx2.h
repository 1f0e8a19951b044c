// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// Q4_0 GEMM of a tile repacked into L1 (PackQ4Lanes) on AVX2 without VNNI,
// for batches of 3 tokens and more; MXFP4's too (its levels plus 12 in the
// same tile, matmul_x86_lut4_lanes.h). Its pass (lane_gemm_pass) takes the
// blocks from a small policy (Q4GemmBlocks). Q8_0's signed tiles measured
// slower this way (a step |w| times x with w's sign, widened each step:
// 4096 x 4096, 512 tokens, 2 threads, 197-202 -> 160-173 GFLOP/s), so
// they keep lane_tile_q4_0.
//
// The same operations as lane_tile_q4_0 (matmul_x86_q4_lanes.h), in another
// order. A chunk's row sums in OpsQ4_0's order keep 16 f32 chains per row
// and token, lane l of the even units (blocks l' and 16 + l' of the chunk,
// l' the block whose group lane is l) and of the odd ones (8 + l' and 24 +
// l'), each from +0 in unit order; the chunk's sum adds each lane's two
// chains and the 8 lanes in a fixed tree. lane_tile_q4_0 walks the blocks in
// order and keeps the chains in memory, loaded and stored once per block and
// token. Here one lane's four blocks come one after another, so its two
// chains stay in registers and only their sum is stored, once per lane and
// token: the same fmas on the same operands, the same bits.
//
// Per block and token: 8 broadcasts of 4 activations, 8 vpmaddubsw whose
// int16 pair sums add within 8 x 2 x 15 x 127 < 32767, one vpmaddwd to the
// rows' exact int32 block sums, then sum - 8 sum(x), its float and one fma
// by the rows' d times the token's d. A 16-row tile (two ymm per step) lets
// each broadcast serve both halves.
//
// Zen 3, `matmul_bench --isa avx2 --dtype q4_0,q4_0x16`, against
// lane_tile_q4_0 (8-row halves, 4 tokens per pass), alternating runs: 512
// tokens, 2 threads, 4096 x 4096 and 11008 x 4096, 210-221 -> 291-314
// GFLOP/s; one thread 98-108 -> 130-155 (8-row tiles alone: 119-122).
// Repacked tiles in small batches (weights from DRAM, 2 threads, ms per
// 4096 x 4096): 7 tokens 1.49 -> 1.35, 8 1.62 -> 1.40, 12 2.36 -> 1.80, 16
// 3.15 -> 2.22; at 3-6 tokens reading the tiles in place is as fast or
// faster (3: 0.56 against 0.94), hence kQ4GemmFromTokens. Taking a lane's
// blocks with both parities' chains live (even, odd, even, odd) needs 8
// more ymm at 2 tokens and spilled: 296-300 -> 220-251 GFLOP/s.
#pragma once

#if !defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_q4_lanes_pack.h"

namespace tc::kernels::detail {
namespace {

// The tile kinds this kernel reads: 8 rows (LaneVec8, H = 1 half) or a
// 16-row tile's two 8-row halves (LaneVec8x2, H = 2), whose steps each
// broadcast of the activations serves; V::kTokens per pass (4 and 2: the
// int16 sums and one parity's chains of T tokens and H halves, the step's
// H weight vectors, a broadcast and the vpmaddwd ones fit the 16 ymm).

// Q4_0Lanes16 batches from this many tokens take this kernel on each tile's
// chunk unpacked into L1, where smaller ones read the tiles in place.
constexpr int64_t kQ4GemmFromTokens = 7;

// The blocks of a Q4_0 (kOffset 8), MXFP4 (kOffset 12) or Q5_0 (kOffset 16) tile repacked into
// L1, as lane_gemm_pass reads them: add<T>(i, lane, x, chain) sets, for
// block i (< nb) of the chunk starting at absolute block b0, its group
// lane `lane` and tokens x + t * stride, chain[t][h] = fma(float(sum -
// kOffset sum32), dw * dx, chain[t][h]). The levels are stored plus
// kOffset (Q4_0's nibbles; MXFP4's levels plus 12, up to 24, whose int16
// pair sums widen every kWidenSteps = 4 steps, 4 x 2 x 24 x 127 < 32767).
// The activations are Q8_32_NIB rows (a pair of blocks interleaves its
// halves, a lone last block is in order; gd and gs8 in group-lane order).
template <class V, int kOffset, int kWidenSteps>
struct Q4GemmBlocks {
  static_assert((kOffset == 8 && kWidenSteps == 8) || ((kOffset == 12 || kOffset == 16) && kWidenSteps == 4),
                "Q4GemmBlocks: Q4_0's levels (offset 8), MXFP4's or Q5_0's (offset 12 or 16, 4 steps per widening)");
  static constexpr int kHalves = V::kRows / 8;
  const PackQ4Lanes<V>& p;
  int64_t b0;
  int64_t n_blocks;
  int64_t stride;
  const XLayout& xl;

  template <int T>
  TC_SIMD_INLINE void add(int64_t i, int lane, const std::byte* x, __m256 (&chain)[T][kHalves]) const {
    constexpr int H = kHalves;
    const int64_t b = b0 + i;
    const bool lone = (n_blocks & 1) != 0 && b == n_blocks - 1;
    const int64_t xo = 64 * (b / 2) + 16 * (b % 2);  // the block's elements 0..15
    const int64_t hi = xo + (lone ? 16 : 32);        // and 16..31
    const int64_t gi = (b & ~int64_t{7}) + lane;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i pairs[T][H], sums[T][H];
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      __m256i w[H];
      for (int h = 0; h < H; ++h) w[h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.q[i][s] + 32 * h));
      const int64_t off = s < 4 ? xo + 4 * s : hi + 4 * (s - 4);
      for (int t = 0; t < T; ++t) {
        const __m256i xv = lane_x4(x + t * stride + off);
        for (int h = 0; h < H; ++h) {
          const __m256i prod = _mm256_maddubs_epi16(w[h], xv);
          pairs[t][h] = s % kWidenSteps == 0 ? prod : _mm256_add_epi16(pairs[t][h], prod);
          asm("" : "+x"(pairs[t][h]));  // step order: a tree over the steps spills
        }
      }
      if constexpr (kWidenSteps < 8) {
        if (s == kWidenSteps - 1) {
          for (int t = 0; t < T; ++t) {
            for (int h = 0; h < H; ++h) sums[t][h] = _mm256_madd_epi16(pairs[t][h], ones);
          }
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < H; ++h) {
        const __m256i last = _mm256_madd_epi16(pairs[t][h], ones);
        if constexpr (kWidenSteps < 8) {
          sums[t][h] = _mm256_add_epi32(sums[t][h], last);
        } else {
          sums[t][h] = last;
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      const std::byte* xt = x + t * stride;
      int32_t gs8;
      float dx;
      std::memcpy(&gs8, xt + xl.gs8_offset + 4 * gi, 4);
      std::memcpy(&dx, xt + xl.gd_offset + 4 * gi, 4);
      const __m256i offset = _mm256_set1_epi32(offset_sum<kOffset>(gs8));
      const __m256 vdx = _mm256_set1_ps(dx);
      for (int h = 0; h < H; ++h) {
        const __m256i exact = _mm256_sub_epi32(sums[t][h], offset);
        const __m256 dw = _mm256_load_ps(p.dw[i] + 8 * h);
        chain[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(dw, vdx), chain[t][h]);
      }
    }
  }
};

// y[t * ys + 0..8 H - 1] (+)= the tile's sums over a chunk of nb <= 32
// blocks for T tokens whose activations start at x, Blocks::add adding
// each block (stored when `first`, else added): each lane's four blocks in
// turn, its even-unit chain and its odd-unit chain from +0 in registers.
template <int T, class Blocks>
void lane_gemm_pass(const Blocks& blocks, int64_t nb, const std::byte* x, float* y, int64_t ys, bool first) {
  constexpr int H = Blocks::kHalves;
  alignas(32) __m256 lanes[8][T][H];  // lane l: its even-unit chain + its odd-unit chain
  for (int l = 0; l < 8; ++l) {
    const int j = l < 4 ? 2 * l : 2 * (l - 4) + 1;  // the group's block in lane l
    for (int q = 0; q < 2; ++q) {
      __m256 chain[T][H];
      for (int t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) chain[t][h] = _mm256_setzero_ps();
      }
      for (int k = 0; k < 2; ++k) {
        const int64_t i = 8 * (q + 2 * k) + j;
        if (i >= nb) break;
        blocks.template add<T>(i, l, x, chain);
      }
      for (int t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) lanes[l][t][h] = q == 0 ? chain[t][h] : _mm256_add_ps(lanes[l][t][h], chain[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      auto v = [&](int l) __attribute__((always_inline)) { return lanes[l][t][h]; };
      const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(v(0), v(1)), _mm256_add_ps(v(2), v(3))),
                                     _mm256_add_ps(_mm256_add_ps(v(4), v(5)), _mm256_add_ps(v(6), v(7))));
      float* yt = y + t * ys + 8 * h;
      _mm256_storeu_ps(yt, first ? s : _mm256_add_ps(_mm256_loadu_ps(yt), s));
    }
  }
}

// Outputs rt.. of a tile (+)= its chunk [c0, c0 + nb) read through
// `blocks` for `tokens`, in passes of up to kT tokens (the last one
// shorter).
template <int kT, class Blocks>
void lane_gemm_tokens(const MatmulArgs& a, const Blocks& blocks, int64_t rt, int64_t c0, int64_t nb,
                      TokenRange tokens) {
  static_assert(kT >= 1 && kT <= 4);
  const int64_t stride = a.xl.stride;
  for (int64_t t0 = tokens.begin; t0 < tokens.end; t0 += kT) {
    const std::byte* x = a.xq + t0 * stride;
    float* y = a.y + t0 * a.n_out + rt;
    const bool first = c0 == 0;
    switch (min64(kT, tokens.end - t0)) {
      case 4:
        if constexpr (kT >= 4) lane_gemm_pass<4>(blocks, nb, x, y, a.n_out, first);
        break;
      case 3:
        if constexpr (kT >= 3) lane_gemm_pass<3>(blocks, nb, x, y, a.n_out, first);
        break;
      case 2:
        if constexpr (kT >= 2) lane_gemm_pass<2>(blocks, nb, x, y, a.n_out, first);
        break;
      default:
        lane_gemm_pass<1>(blocks, nb, x, y, a.n_out, first);
        break;
    }
  }
}

// Q4_0's (or MXFP4's) tile in L1: outputs rt..rt + V::kRows - 1 (+)= its
// chunk [c0, c0 + nb) for `tokens`, V::kTokens per pass.
template <class V, int kOffset = 8, int kWidenSteps = 8>
void q4_gemm_tokens(const MatmulArgs& a, const PackQ4Lanes<V>& p, int64_t rt, int64_t c0, int64_t nb,
                    TokenRange tokens) {
  const Q4GemmBlocks<V, kOffset, kWidenSteps> blocks{p, c0, a.n_in / 32, a.xl.stride, a.xl};
  lane_gemm_tokens<V::kTokens>(a, blocks, rt, c0, nb, tokens);
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
