// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// GEMM of the super-block types (Q2_K-Q6_K, IQ4_XS; their Ops in
// matmul_x86_superblock.h and matmul_x86_kquants.h) for prefill and batches of
// more than kGemvTokens tokens: each chunk of two rows unpacked once, then
// swept by steps of two rows x four tokens.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_superblock.h"

namespace tc::kernels::detail {
namespace {

// GEMM order for the super-block types: the chunk
// (kChunkBlocks super-blocks) of kUnpackedRows rows is unpacked once into
// an L1 buffer, then each token's sums are taken from it, so the unpacking
// is paid once per row and chunk instead of once per few tokens. Two rows
// x kUnpackedTokens tokens per step (unpacked_rows_tokens: each vector of
// quants and scales loaded once for four tokens; `matmul_bench --dtype
// q4_k --tokens 512`, Zen 3, 2 threads, medians of 5 alternating runs,
// 5632 x 2048 / 2048 x 5632: two rows x one token 109 / 98, x four 141 /
// 118 GFLOP/s; 3 tokens 103 / 93, 5 tokens 109 / 104 against 4's 105 / 103
// in a later run; before, 1 row x 1 token 0.83-0.97x and 4 rows
// 0.81-0.92x as fast as two, and 2 or 4 tokens of one row with the float
// accumulators in registers spilled: 0.9x and 0.85x). Each accumulator
// gets its super-blocks in quant_chunk's order (Q2_K: even ones,
// then odd ones; Q3_K-Q6_K, IQ4_XS: the lane order,
// unpacked_rows_tokens_lanes): the same bits as every other path. Batches of up to kGemvTokens tokens
// keep the small-batch tile, which unpacks a super-block once per call too;
// from kUnpackedMinTokens on this path serves batches as well (1B Q4_K_M,
// 8 sequences decoding, `bench --parallel 8`, 4 alternating runs: 46 ->
// 58 t/s on the 2-core Zen 3).
constexpr int kUnpackedRows = 2;
constexpr int64_t kUnpackedMinTokens = kGemvTokens + 1;

// Tokens per step of unpacked_rows_tokens: with two rows, 8 integer sums
// and the rows' quants and scales of one vector fill the registers.
constexpr int kUnpackedTokens = 4;

// isum[r][t] = scaled_dot8(u[r]->q, u[r]->sc, xq[t]) for R rows x T tokens
// (the same integer lanes; with Ops::dot32, the sum of its vectors'
// dot32): each row's vector of quants and scales loaded once for the T
// tokens, each token's activations once for the R rows.
template <class Ops, int R, int T>
TC_SIMD_INLINE void scaled_dot8_tile(const typename Ops::W* const (&u)[R], const int8_t* const (&xq)[T],
                                     __m256i (&isum)[R][T]) {
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) isum[r][t] = _mm256_setzero_si256();
  }
  // Not unrolled: unrolled, GCC 12 regrouped each sum's eight additions
  // into a tree whose partial sums spilled.
#pragma GCC unroll 1
  for (int c = 0; c < 8; ++c) {
    __m256i q[R], sc[R];
    for (int r = 0; r < R; ++r) {
      q[r] = u[r]->q[c];
      sc[r] = u[r]->sc[c];
    }
    for (int t = 0; t < T; ++t) {
      const __m256i xv = load32(xq[t] + 32 * c);
      for (int r = 0; r < R; ++r) {
        if constexpr (requires { Ops::dot32(q[r], sc[r], xv); }) {
          isum[r][t] = _mm256_add_epi32(isum[r][t], Ops::dot32(q[r], sc[r], xv));
        } else {
          isum[r][t] = _mm256_add_epi32(isum[r][t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[r], xv), sc[r]));
        }
      }
    }
  }
}

// scaled_dot8_tile for super-block b0 + i of the unpacked chunk.
template <class Ops, int R, int T>
TC_SIMD_INLINE void unpacked_isums(const typename Ops::W (&u)[kUnpackedRows][Ops::kChunkBlocks], const XRow* x,
                                   int64_t b0, int64_t i, __m256i (&isum)[R][T]) {
  const typename Ops::W* ur[R];
  for (int r = 0; r < R; ++r) ur[r] = &u[r][i];
  const int8_t* xq[T];
  for (int t = 0; t < T; ++t) xq[t] = x[t].qs + kQK_K * (b0 + i);
  scaled_dot8_tile<Ops, R, T>(ur, xq, isum);
}

// The chunk's [d_s | -dmin_s] per row (superblock_scales), for the lane order.
using ChunkScales = float[kUnpackedRows][8];

// R rows x T tokens over the unpacked chunk: per super-block the integer
// sums of the whole tile, then each accumulator's finish, the even
// super-blocks' chain and the odd ones' kept in memory (in registers with
// the sums GCC spilled them inside the loop). Each chain gets its
// super-blocks ascending: quant_chunk's bits. (Not inlined: in the
// caller's loops GCC 12 allocates a tile's registers worse.)
template <class Ops, int R, int T>
__attribute__((noinline)) void unpacked_rows_tokens(const typename Ops::W (&u)[kUnpackedRows][Ops::kChunkBlocks],
                                                    const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys,
                                                    bool first) {
  alignas(32) float acc[2][R][T][8];  // [chain][row][token]: the 8 lanes
  for (int c = 0; c < 2; ++c) {
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) _mm256_store_ps(acc[c][r][t], _mm256_setzero_ps());
    }
  }
  for (int64_t i = 0; i < nb; ++i) {
    __m256i isum[R][T];
    unpacked_isums<Ops, R, T>(u, x, b0, i, isum);
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        __m256 v = _mm256_load_ps(acc[i % 2][r][t]);
        Ops::finish_token(v, u[r][i], x[t], b0 + i, isum[r][t]);
        _mm256_store_ps(acc[i % 2][r][t], v);
      }
    }
  }
  __m256 a0[R][T], a1[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      a0[r][t] = _mm256_load_ps(acc[0][r][t]);
      a1[r][t] = _mm256_load_ps(acc[1][r][t]);
    }
  }
  store_tile<R, T>(a0, a1, y, ys, first);
}

// unpacked_rows_tokens in the lane order (SuperBlockLanes, matmul_x86_superblock.h):
// the R x T outputs side by side, output (r, t) in vector lane r T + t. Per
// super-block the tile's lanes of T (and of M) reduce to the outputs'
// totals in one transpose-and-add (lane_totals8), scaled by one FMA onto
// +0; the chunk's 8 such vectors are then summed in store_tile's tree, so
// each output gets the lanes and the reduction of quant_chunk's path.
template <class Ops, int R, int T>
__attribute__((noinline)) void unpacked_rows_tokens_lanes(const typename Ops::W (&u)[kUnpackedRows][Ops::kChunkBlocks],
                                                          const ChunkScales& dw, const XRow* x, int64_t b0, int64_t nb,
                                                          float* y, int64_t ys, bool first) {
  static_assert(R * T <= 8 && Ops::kChunkBlocks == 4, "one lane per output, one per super-block and total");
  const __m256 zero = _mm256_setzero_ps();
  __m256 l[8];  // l[s]: the outputs' T_s lanes, l[4 + s]: their M_s lanes
  for (int s = 0; s < 4; ++s) {
    l[s] = l[4 + s] = zero;
    if (s >= nb) continue;
    __m256i isum[R][T];
    unpacked_isums<Ops, R, T>(u, x, b0, s, isum);
    // The T lanes first, then the M lanes: together with the sums they
    // would not fit the registers.
    alignas(32) float dt[8] = {}, dm[8] = {};
    __m256i v[8];
    for (int k = 0; k < 8; ++k) v[k] = _mm256_setzero_si256();
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        const float dx = x[t].d[b0 + s];
        v[r * T + t] = Ops::total_lanes(u[r][s], x[t], b0 + s, isum[r][t]);
        dt[r * T + t] = dw[r][s] * dx;
        if constexpr (Ops::kMins) dm[r * T + t] = dw[r][4 + s] * dx;
      }
    }
    l[s] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lane_totals8(v)), _mm256_load_ps(dt), zero);
    if constexpr (Ops::kMins) {
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) v[r * T + t] = Ops::min_lanes(u[r][s], x[t], b0 + s);
      }
      l[4 + s] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lane_totals8(v)), _mm256_load_ps(dm), zero);
    }
  }
  const __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(l[0], l[1]), _mm256_add_ps(l[2], l[3])),
                                   _mm256_add_ps(_mm256_add_ps(l[4], l[5]), _mm256_add_ps(l[6], l[7])));
  alignas(32) float out[8];
  _mm256_store_ps(out, sum);
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) {
      float& yo = y[t * ys + r];
      yo = first ? out[r * T + t] : yo + out[r * T + t];
    }
  }
}

// unpacked_rows_tokens for rr <= R rows and tt <= T tokens known at run time.
template <class Ops, int R, int T>
void unpacked_rows_tokens_n(int rr, int tt, const typename Ops::W (&u)[kUnpackedRows][Ops::kChunkBlocks],
                            const ChunkScales& dw, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys,
                            bool first) {
  if constexpr (R > 1) {
    if (rr < R) return unpacked_rows_tokens_n<Ops, R - 1, T>(rr, tt, u, dw, x, b0, nb, y, ys, first);
  }
  if constexpr (T > 1) {
    if (tt < T) return unpacked_rows_tokens_n<Ops, R, T - 1>(rr, tt, u, dw, x, b0, nb, y, ys, first);
  }
  if constexpr (SuperBlockLanes<Ops>) {
    unpacked_rows_tokens_lanes<Ops, R, T>(u, dw, x, b0, nb, y, ys, first);
  } else {
    unpacked_rows_tokens<Ops, R, T>(u, x, b0, nb, y, ys, first);
  }
}

template <class Ops>
void run_unpacked_gemm(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int64_t K = Ops::kChunkBlocks;
  constexpr int R = kUnpackedRows;
  constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(typename Ops::Block));
  typename Ops::W u[R][K];
  alignas(32) ChunkScales dw = {};
  auto tile = [&](int64_t rt, int rr, const std::byte* const* w, int64_t c0, int64_t nb,
                  TokenRange tokens) __attribute__((always_inline)) {
    for (int r = 0; r < rr; ++r) {
      const auto* blk = reinterpret_cast<const typename Ops::Block*>(w[r]) + c0;
      for (int64_t i = 0; i < nb; ++i) Ops::unpack(blk + i, u[r][i]);
      if constexpr (SuperBlockLanes<Ops>) {
        _mm256_store_ps(dw[r], superblock_scales<typename Ops::Block, Ops::kMins>(blk, nb));
      }
    }
    for (int64_t t0 = tokens.begin; t0 < tokens.end; t0 += kUnpackedTokens) {
      const int tt = static_cast<int>(min64(kUnpackedTokens, tokens.end - t0));
      XRow x[kUnpackedTokens];
      for (int i = 0; i < tt; ++i) x[i] = x_row(a, t0 + i);
      unpacked_rows_tokens_n<Ops, R, kUnpackedTokens>(rr, tt, u, dw, x, c0, nb, a.y + t0 * a.n_out + rt, a.n_out,
                                                      c0 == 0);
    }
  };
  // Small batches (their activations stay in L1/L2 anyway) read each row's
  // chunks in turn, the next one prefetched.
  const int64_t n_blocks = a.n_in / Ops::kBlock;
  if (gemm_order(a)) {
    sweep_chunk_tiles<R>(a, r0, r1, R, n_blocks, K, kBlockBytes, tile);
  } else {
    sweep_tile_chunks<R>(a, r0, r1, R, n_blocks, K, kBlockBytes, tile);
  }
}

template <class Ops>
concept SuperBlockOps = requires(const typename Ops::Block* blk, typename Ops::W& u) {
  Ops::unpack(blk, u);
  requires Ops::kBlock == kQK_K;
};

}  // namespace
}  // namespace tc::kernels::detail
