// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// Q4_0 GEMM with weight rows in the vector lanes, for batches of 3 tokens and
// more (prefill, several sequences decoding at once).
//
// A tile of 8 (ymm) or 16 (zmm) rows x one chunk (up to 32 blocks) is
// repacked once into L1: per block, 8 vectors (step s: the rows' elements
// 4s..4s+3 as unsigned nibbles, row j in int32 lane j) and the rows' f32
// scales. Each step then costs one broadcast of the token's 4 activations
// and one vpdpbusd per token (AVX2: one vpmaddubsw; the 8 steps' int16 pair
// sums add without overflow, 8 x 2 x 15 x 127 < 32767, and one vpmaddwd
// leaves each row's exact int32 block sum in its lane), with no transpose.
// The row-by-row kernels (matmul_x86_quant.h) need a 4 x 4 transpose per
// group, row and token to get the same sums.
//
// The avx512 variant runs 16 rows per zmm (LaneVec16) and the AVX2 one 8 per
// ymm (LaneVec8) or a 16-row tile in ymm pairs (LaneVec8x2); a row's lane
// sees the same operations either way, so the width changes no bit. Rows
// left over from the 16-row tiles take an 8-row tile, then the row-by-row
// packed GEMM. On AVX2 a tile repacked into L1 (PackedChunk) is read by
// matmul_x86_q4_lanes_gemm_avx2.h's kernel instead of lane_tile_q4_0: the
// same operations with the chains in registers.
//
// Same bits as the row-by-row kernels: block sums are exact integers, and the
// float steps replay OpsQ4_0's order for each row, lane by lane. There a row
// keeps 16 f32 chains per chunk: lane i of the even units (groups of 8
// blocks) and of the odd units, lane i holding block kQ4GroupOrder[i] of its
// group; each chain is chain = fma(float(sum - 8 * sum32), dw * dx, chain)
// from +0, then store_tile adds the two parities and sums the 8 lanes as
// ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)). Here each of those 16
// chains is a vector over the tile's rows, kept in a small buffer per token.
// (Blocks missing from a last partial group add fma(0, 0, chain) there,
// which leaves a chain unchanged: chains are never -0. They are skipped.)
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cpu/matmul_x86_lanes.h"
#include "kernels/cpu/matmul_x86_q4_lanes_gemm_avx2.h"
#include "kernels/cpu/matmul_x86_q4_lanes_pack.h"
#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/quantize.h"

namespace tc::kernels::detail {
namespace {

// The int32 block sums of NT tiles of V::kRows rows x T tokens for one
// block, x[t] pointing at the block's activations: a pair (2k, 2k+1) of
// Q8_32_NIB interleaves its halves, so elements 0-15 sit at +0 and 16-31 at
// +32 from block 2k + h's first byte 64k + 16h (kLone: a lone last block,
// stored in order). weights(n, s) gives tile n's step s vector (the rows'
// elements 4s..4s+3 as unsigned nibbles, see PackQ4Lanes); two tiles share
// each broadcast of the activations (VNNI only). The sums are exact
// integers, so the order of the steps changes no bit.
template <class V, int T, int NT, bool kLone, int kWidenSteps = 8, class Weights>
TC_SIMD_INLINE void lane_block_sums(Weights&& weights, const int8_t* const* x, typename V::I (&sum)[NT][T]) {
  auto x4 = [&](int t, int s) __attribute__((always_inline)) {
    int32_t v;
    std::memcpy(&v, x[t] + (kLone || s < 4 ? 4 * s : 32 + 4 * (s - 4)), 4);
    return V::set1_i(v);
  };
#if defined(TC_MATMUL_VNNI)
  for (int n = 0; n < NT; ++n) {
    for (int t = 0; t < T; ++t) sum[n][t] = V::zero_i();
  }
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    typename V::I w[NT];
    for (int n = 0; n < NT; ++n) w[n] = weights(n, s);
    for (int t = 0; t < T; ++t) {
      const typename V::I xs = x4(t, s);
      for (int n = 0; n < NT; ++n) sum[n][t] = V::dot_acc(sum[n][t], w[n], xs);
    }
  }
#else
  // AVX2: LaneVec8, or LaneVec8x2 (a tile's two 8-row halves at once).
  static_assert(NT == 1, "the AVX2 lane kernels read one tile per pass");
  // Weights up to 15 keep 8 steps' int16 pair sums below 32767; larger
  // ones (MXFP4's 24) widen every kWidenSteps steps.
  typename V::I pairs[T];
  for (int t = 0; t < T; ++t) pairs[t] = V::zero_i();
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    const typename V::I w = weights(0, s);
    for (int t = 0; t < T; ++t) {
      pairs[t] = V::add_pairs(pairs[t], w, x4(t, s));
      // Keeps the additions in step order: GCC otherwise regroups them into
      // a tree over all 8 steps, which needs 8 x T live registers and spills.
      V::keep(pairs[t]);
    }
    if constexpr (kWidenSteps < 8) {
      if (s == kWidenSteps - 1) {
        for (int t = 0; t < T; ++t) {
          sum[0][t] = V::pairs_to_sums(pairs[t]);
          pairs[t] = V::zero_i();
        }
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    if constexpr (kWidenSteps < 8) {
      sum[0][t] = V::add_i(sum[0][t], V::pairs_to_sums(pairs[t]));
    } else {
      sum[0][t] = V::pairs_to_sums(pairs[t]);
    }
  }
#endif
}

// lane_block_sums for signed weights (IQ4_NL's levels, matmul_x86_lut4_lanes.h):
// weights(n, s) gives the step's levels, mags(n, s) their magnitudes; each
// step multiplies |level| by x with the level's sign (pairs within 2 * 127
// * 127, so each step widens to int32 on its own). Exact integers again.
template <class V, int T, int NT, bool kLone, class Weights, class Mags>
TC_SIMD_INLINE void lane_block_sums_signed(Weights&& weights, Mags&& mags, const int8_t* const* x,
                                           typename V::I (&sum)[NT][T]) {
  static_assert(NT == 1, "the signed lane kernels read one tile per pass");
  auto x4 = [&](int t, int s) __attribute__((always_inline)) {
    int32_t v;
    std::memcpy(&v, x[t] + (kLone || s < 4 ? 4 * s : 32 + 4 * (s - 4)), 4);
    return V::set1_i(v);
  };
  for (int t = 0; t < T; ++t) sum[0][t] = V::zero_i();
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    const typename V::I w = weights(0, s);
    const typename V::I m = mags(0, s);
    for (int t = 0; t < T; ++t) {
      sum[0][t] = V::signed_dot_acc(sum[0][t], m, w, x4(t, s));
#if !defined(TC_MATMUL_VNNI)
      V::keep(sum[0][t]);  // step order, as lane_block_sums: a tree over the steps spilled
#endif
    }
  }
}

// The weights of a chunk as lane_tile_q4_0 reads them, block i of the chunk
// at a time: a tile repacked from the file's rows into L1 (PackQ4Lanes)...
// kMins: Q4_1, levels 0..15 with no offset and a minimum per block.
template <class V, bool kMins = false>
struct PackedChunk {
  static constexpr int kOffset = kMins ? 0 : 8;
  const PackQ4Lanes<V>& p;
  TC_SIMD_INLINE typename V::I weights(int64_t i, int s) const { return V::load_i(p.q[i][s]); }
  TC_SIMD_INLINE typename V::F scales(int64_t i) const { return V::load_f(p.dw[i]); }
  TC_SIMD_INLINE typename V::F mins(int64_t i) const
    requires kMins
  {
    return V::load_f(p.mw[i]);
  }
  TC_SIMD_INLINE void prefetch(int64_t) const {}
};


// ... or read in place from a Q4_0Lanes16 tile (q4_lanes16.h): qs at the
// chunk's first block (and the half's first row), blocks 256 bytes apart,
// one 4-byte step of every row per 64 bytes, both nibbles of each byte
// used; d the chunk's first f16 scales, 16 per block. The sweep reads
// `left` blocks from qs on, then goes on at block left of the next tile's
// streams, skip_qs and skip_d bytes further than this tile's would be.
// kMins: a Q4_1Lanes16 tile, its minimums m_off f16 values after d.
template <class V, int64_t kAheadBlocks, bool kMins = false>
struct Lanes16Chunk {
  static constexpr int kOffset = kMins ? 0 : 8;
  const std::byte* qs;
  const uint16_t* d;
  int64_t left;
  int64_t skip_qs;
  int64_t skip_d;
  int64_t m_off = 0;
  TC_SIMD_INLINE typename V::I weights(int64_t i, int s) const {
    const typename V::I raw = V::load_i(qs + 256 * i + 64 * (s % 4));
    return s < 4 ? V::lo_nibbles(raw) : V::hi_nibbles(raw);
  }
  TC_SIMD_INLINE typename V::F scales(int64_t i) const { return V::cvt_ph(d + 16 * i); }
  TC_SIMD_INLINE typename V::F mins(int64_t i) const
    requires kMins
  {
    return V::cvt_ph(d + m_off + 16 * i);
  }
  // The qs and scales of the block kAheadBlocks after block i in the
  // order the sweep reads them (the hardware prefetcher restarts at every
  // 4 KiB page, and the scales at a tile's start stalled the 8-token kernel
  // before this followed the sweep into the next tile).
  TC_SIMD_INLINE void prefetch(int64_t i) const {
    const int64_t k = i + kAheadBlocks;
    const bool next = k >= left;
    const char* q = reinterpret_cast<const char*>(qs) + 256 * k + (next ? skip_qs : 0);
    for (int l = 0; l < 4; ++l) _mm_prefetch(q + 64 * l, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(d) + 32 * k + (next ? skip_d : 0), _MM_HINT_T0);
    if constexpr (kMins) {
      _mm_prefetch(reinterpret_cast<const char*>(d + m_off) + 32 * k + (next ? skip_d : 0), _MM_HINT_T0);
    }
  }
};

// Blocks [0, nb) of a chunk read through `c` (a Lanes16Chunk) unpacked into
// p, as PackedChunk serves them: the same weight bytes and f32 scales, so
// either source gives the kernel the same operands.
template <class V, class Chunk>
TC_SIMD_INLINE void unpack_chunk(PackQ4Lanes<V>& p, const Chunk& c, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    c.prefetch(i);
    for (int s = 0; s < 8; ++s) {
      const typename V::I w = c.weights(i, s);
      std::memcpy(p.q[i][s], &w, sizeof w);
    }
    const typename V::F d = c.scales(i);
    std::memcpy(p.dw[i], &d, sizeof d);
    if constexpr (requires { c.mins(i); }) {
      const typename V::F m = c.mins(i);
      std::memcpy(p.mw[i], &m, sizeof m);
    }
  }
}

// The activations of the tokens as lane_tile_q4_0 reads them: pair p
// (blocks 2p and 2p + 1, see lane_block_sums) and group entry i of gs8 and
// gd of token t, from each token's prepared row...
struct XRows {
  const XRow* x;
  TC_SIMD_INLINE const int8_t* pair(int t, int64_t p) const { return x[t].qs + 64 * p; }
  TC_SIMD_INLINE int32_t gs8(int t, int64_t i) const { return x[t].gs8[i]; }
  TC_SIMD_INLINE float gd(int t, int64_t i) const { return x[t].gd[i]; }
};

// ... or from LaneX (matmul_kernels.h): every token at a constant offset
// from one pointer. With eight rows' three pointers each GCC kept them in
// vector registers and on the stack; this made 8 tokens 5-10% faster.
struct XLanes {
  const std::byte* base;
  const int32_t* gs8v;
  const float* gdv;
  XLanes(const std::byte* lane_x, int64_t nb)
      : base(lane_x),
        gs8v(reinterpret_cast<const int32_t*>(lane_x + lane_x_gs8_offset(nb))),
        gdv(reinterpret_cast<const float*>(lane_x + lane_x_gd_offset(nb))) {}
  TC_SIMD_INLINE const int8_t* pair(int t, int64_t p) const {
    return reinterpret_cast<const int8_t*>(base + (p * kLaneXTokens + t) * 64);
  }
  TC_SIMD_INLINE int32_t gs8(int t, int64_t i) const { return gs8v[(i / 8 * kLaneXTokens + t) * 8 + i % 8]; }
  TC_SIMD_INLINE float gd(int t, int64_t i) const { return gdv[(i / 8 * kLaneXTokens + t) * 8 + i % 8]; }
  // The same activations from token t0 on (t0 + t read as token t).
  XLanes from_token(int t0) const {
    XLanes x = *this;
    x.base += 64 * t0;
    x.gs8v += 8 * t0;
    x.gdv += 8 * t0;
    return x;
  }
};

// y[t, rows 0..NT * V::kRows-1] (+)= the chunk [b0, b0 + nb) for T tokens,
// tile n's weights from w[n] (rows n * V::kRows on). Each tile's rows see
// the same operations whatever NT. Also IQ4_NL's (its chunk's signed levels,
// matmul_x86_lut4_lanes.h), whose OpsGroup32 order is Q4_0's.
template <class V, int T, int NT, class Chunk, class X>
void lane_tile_q4_0(const Chunk* w, const X& x, int64_t b0, int64_t nb, int64_t n_blocks, float* y, int64_t ys,
                    bool first) {
  using F = typename V::F;
  using I = typename V::I;
  // Signed levels (a chunk with mags(): IQ4_NL) take no offset; unsigned
  // ones are levels plus kOffset (Q4_0's 8; a chunk may name its own, with
  // the steps its int16 sums may add, MXFP4's 12 and 4, Q5_0's 16 and 4).
  constexpr bool kSigned = requires(const Chunk& c) { c.mags(0, 0); };
  constexpr int kOffset = [] {
    if constexpr (requires { Chunk::kOffset; }) return Chunk::kOffset;
    return 8;
  }();
  constexpr int kWidenSteps = [] {
    if constexpr (requires { Chunk::kWidenSteps; }) return Chunk::kWidenSteps;
    return 8;
  }();
  static_assert(kOffset == 0 || kOffset == 8 || kOffset == 12 || kOffset == 16,
                "lane_tile_q4_0: offsets are exact multiples of gs8 / 8");
  // Q4_1: m dx sum(x) per block, a second FMA after the first, as
  // group32_fma adds it.
  constexpr bool kMins = requires(const Chunk& c) { c.mins(0); };
  // Plain activations (XRowsQ8: Q8_0's own Q8_32 rows, each block's 32
  // bytes in order and its d per block) go with signed weights only.
  constexpr bool kPlainX = requires { X::kPlain; };
  static_assert(!kPlainX || kSigned, "lane_tile_q4_0: plain activations need a signed chunk");
  // chains[n][t][8 * parity + lane]: OpsQ4_0's chain of that unit parity
  // and lane, for tile n's rows. They start at +0. When the first two units
  // are whole (nb >= 16: every chunk but a row's short last one), those
  // units' fmas read their +0 from kZero instead, which saves zeroing the
  // 16 T vectors per tile (at 8 tokens 8 KiB of stores per call, 10% of the
  // kernel's samples in perf).
  static constexpr F kZero[16] = {};
  F chains[NT][T][16];
  const bool first_units_whole = nb >= 2 * kGroup;
  if (!first_units_whole) {
    for (int n = 0; n < NT; ++n) {
      for (int t = 0; t < T; ++t) {
        for (int c = 0; c < 16; ++c) chains[n][t][c] = V::zero_f();
      }
    }
  }
  for (int64_t u = 0; u * kGroup < nb; ++u) {
    const int64_t g = b0 + kGroup * u;  // the unit's first block (even)
    const int64_t count = min64(kGroup, nb - kGroup * u);
    const int parity = static_cast<int>(u % 2) * 8;
    const bool from_zero = first_units_whole && u < 2;
#pragma GCC unroll 8
    for (int j = 0; j < kGroup; ++j) {
      if (j >= count) break;
      const int64_t b = g + j;
      const bool lone = (n_blocks & 1) != 0 && b == n_blocks - 1;
      for (int n = 0; n < NT; ++n) w[n].prefetch(b - b0);
      auto weights = [w, i = b - b0](int n, int s) __attribute__((always_inline)) { return w[n].weights(i, s); };
      const int8_t* xb[T];
      I sum[NT][T];
      if constexpr (kPlainX) {
        for (int t = 0; t < T; ++t) xb[t] = x.block(t, b);
      } else if (lone) {
        for (int t = 0; t < T; ++t) xb[t] = x.pair(t, b / 2);  // b is even
      } else {
        for (int t = 0; t < T; ++t) xb[t] = x.pair(t, g / 2 + j / 2) + 16 * (j % 2);
      }
      if constexpr (kPlainX) {
        auto mags = [w, i = b - b0](int n, int s) __attribute__((always_inline)) { return w[n].mags(i, s); };
        lane_block_sums_signed<V, T, NT, true>(weights, mags, xb, sum);  // every block in order
      } else if constexpr (kSigned) {
        auto mags = [w, i = b - b0](int n, int s) __attribute__((always_inline)) { return w[n].mags(i, s); };
        if (lone) {
          lane_block_sums_signed<V, T, NT, true>(weights, mags, xb, sum);
        } else {
          lane_block_sums_signed<V, T, NT, false>(weights, mags, xb, sum);
        }
      } else if (lone) {
        lane_block_sums<V, T, NT, true, kWidenSteps>(weights, xb, sum);
      } else {
        lane_block_sums<V, T, NT, false, kWidenSteps>(weights, xb, sum);
      }
      // Block j's lane in kQ4GroupOrder, where gd and gs8 hold its d and
      // 8 * sum32.
      const int lane = j % 2 == 0 ? j / 2 : 4 + j / 2;
      F dw[NT], mw[NT];
      for (int n = 0; n < NT; ++n) dw[n] = w[n].scales(b - b0);
      if constexpr (kMins) {
        for (int n = 0; n < NT; ++n) mw[n] = w[n].mins(b - b0);
      }
      for (int t = 0; t < T; ++t) {
        const F gd = [&] {
          if constexpr (kPlainX) {
            return V::set1_f(x.d(t, b));
          } else {
            return V::set1_f(x.gd(t, g + lane));
          }
        }();
        for (int n = 0; n < NT; ++n) {
          // Unsigned levels are the format's plus kOffset: kOffset * sum(x)
          // comes off (gs8 = 8 * sum(x): offset_sum).
          const I exact = [&] {
            if constexpr (kSigned || kOffset == 0) {
              return sum[n][t];
            } else {
              return V::sub_i(sum[n][t], V::set1_i(offset_sum<kOffset>(x.gs8(t, g + lane))));
            }
          }();
          const F d = V::mul_f(dw[n], gd);
          const F* from = from_zero ? kZero : chains[n][t];
          chains[n][t][parity + lane] = V::fma_f(V::cvt_f(exact), d, from[parity + lane]);
          if constexpr (kMins) {
            chains[n][t][parity + lane] = V::fma_f(V::cvt_f(V::set1_i(x.gs8(t, g + lane) >> 3)),
                                                   V::mul_f(mw[n], gd), chains[n][t][parity + lane]);
          }
        }
      }
    }
  }
  for (int n = 0; n < NT; ++n) {
    for (int t = 0; t < T; ++t) {
      const F* a = chains[n][t];
      F v[8];
      for (int l = 0; l < 8; ++l) v[l] = V::add_f(a[l], a[8 + l]);
      const F s = V::add_f(V::add_f(V::add_f(v[0], v[1]), V::add_f(v[2], v[3])),
                           V::add_f(V::add_f(v[4], v[5]), V::add_f(v[6], v[7])));
      float* yt = y + t * ys + n * V::kRows;
      V::storeu_f(yt, first ? s : V::add_f(V::loadu_f(yt), s));
    }
  }
}

// lane_tile_q4_0 for kMinT <= tt <= T tokens known at run time.
template <class V, int T, int NT = 1, int kMinT = 1, class Chunk, class X>
void lane_tile_q4_0_n(int tt, const Chunk* w, const X& x, int64_t b0, int64_t nb, int64_t n_blocks, float* y,
                      int64_t ys, bool first) {
  if constexpr (T > kMinT) {
    if (tt < T) return lane_tile_q4_0_n<V, T - 1, NT, kMinT>(tt, w, x, b0, nb, n_blocks, y, ys, first);
  }
  lane_tile_q4_0<V, T, NT>(w, x, b0, nb, n_blocks, y, ys, first);
}

// y[tokens, rows rt..rt + V::kRows-1] (+)= the chunk [c0, c0 + nb), kTok
// tokens per pass, their activations read through XOf (XRows, or Q8_0's
// plain rows).
template <class V, class Chunk, int kTok = V::kTokens, class XOf = XRows>
TC_SIMD_INLINE void lane_tile_tokens(const MatmulArgs& a, const Chunk& w, int64_t rt, int64_t c0, int64_t nb,
                                     TokenRange tokens) {
#if !defined(TC_MATMUL_VNNI)
  // Q4_0's tile in L1, or one derived from it with levels plus another
  // offset (MXFP4's): the same bits, the chains kept in registers.
  if constexpr ((std::is_same_v<V, LaneVec8> || std::is_same_v<V, LaneVec8x2>) &&
                std::is_base_of_v<PackedChunk<V>, Chunk> && std::is_same_v<XOf, XRows>) {
    constexpr int kWidenSteps = [] {
      if constexpr (requires { Chunk::kWidenSteps; }) return Chunk::kWidenSteps;
      return 8;
    }();
    q4_gemm_tokens<V, Chunk::kOffset, kWidenSteps>(a, w.p, rt, c0, nb, tokens);
  } else  // the generic kernel below for every other chunk
#endif
  {
    for (int64_t t0 = tokens.begin; t0 < tokens.end; t0 += kTok) {
      const int tt = static_cast<int>(min64(kTok, tokens.end - t0));
      XRow x[kTok];
      for (int i = 0; i < tt; ++i) x[i] = x_row(a, t0 + i);
      lane_tile_q4_0_n<V, kTok>(tt, &w, XOf{x}, c0, nb, a.n_in / 32, a.y + t0 * a.n_out + rt, a.n_out, c0 == 0);
    }
  }
}

// Outputs [r0, r0 + n_tiles * V::kRows), V::kRows rows in lanes per tile.
template <class V>
void run_lane_tiles_q4_0(const MatmulArgs& a, int64_t r0, int64_t n_tiles) {
  constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(BlockQ4_0));
  const int64_t n_blocks = a.n_in / 32;
  PackQ4Lanes<V> p;
  auto tile = [&](int64_t rt, int, const std::byte* const* w, int64_t c0, int64_t nb, TokenRange tokens) {
    pack_q4_lanes(p, w, c0, nb);
    lane_tile_tokens<V>(a, PackedChunk<V>{p}, rt, c0, nb, tokens);
  };
  const int64_t r1 = r0 + n_tiles * V::kRows;
  if (gemm_order(a)) {
    sweep_chunk_tiles<V::kRows>(a, r0, r1, V::kRows, n_blocks, kChunkBlocks32, kBlockBytes, tile);
  } else {
    sweep_tile_chunks<V::kRows>(a, r0, r1, V::kRows, n_blocks, kChunkBlocks32, kBlockBytes, tile);
  }
}

// Outputs [r0, r1): the widest lane tiles the variant has (AVX2: 16 rows in
// ymm pairs, each activation broadcast serving both halves), then 8-row
// tiles, then the last r1 - r0 mod 8 rows by the row-by-row packed GEMM
// (same bits every way).
void run_lane_gemm_q4_0(const MatmulArgs& a, int64_t r0, int64_t r1) {
  int64_t r = r0;
#if defined(__AVX512F__) && defined(TC_MATMUL_VNNI)
  const int64_t wide = (r1 - r) / LaneVec16::kRows;
  if (wide > 0) run_lane_tiles_q4_0<LaneVec16>(a, r, wide);
  r += wide * LaneVec16::kRows;
#endif
#if !defined(TC_MATMUL_VNNI)
  const int64_t pairs = (r1 - r) / LaneVec8x2::kRows;  // AVX2: 16 rows per broadcast
  if (pairs > 0) run_lane_tiles_q4_0<LaneVec8x2>(a, r, pairs);
  r += pairs * LaneVec8x2::kRows;
#endif
  const int64_t narrow = (r1 - r) / LaneVec8::kRows;
  if (narrow > 0) run_lane_tiles_q4_0<LaneVec8>(a, r, narrow);
  r += narrow * LaneVec8::kRows;
  if (r < r1) run_packed_gemm<OpsQ4_0>(a, r, r1);
}

// Where a sweep reads tile rt's chunk from block c0 on, rows row0 on (a
// Q4_0Lanes16 or Q8_0Lanes16 tile: block_bytes of quants per block, then
// 16 f16 scales per block): the quants and scales, the blocks the tile has
// left in the sweep's order, and how much further the streams of the tile
// read next_tiles tiles on go on (the same chunk there when chunks_outer,
// else from its first block).
struct Lanes16Streams {
  const std::byte* qs;
  const uint16_t* d;
  int64_t left;
  int64_t skip_qs;
  int64_t skip_d;
};

TC_SIMD_INLINE Lanes16Streams lanes16_streams(const MatmulArgs& a, int64_t rt, int64_t c0, int64_t row0,
                                              int64_t block_bytes, bool chunks_outer, int64_t next_tiles) {
  const int64_t n_blocks = a.n_in / 32;
  const std::byte* tile = a.w + rt / 16 * a.lane_tile_bytes;
  const auto* d = reinterpret_cast<const uint16_t*>(tile + block_bytes * n_blocks);
  const int64_t nb = min64(kChunkBlocks32, n_blocks - c0);
  const int64_t run = chunks_outer ? nb : n_blocks;
  const int64_t gap = next_tiles * a.lane_tile_bytes;
  return {tile + block_bytes * c0 + 4 * row0, d + 16 * c0 + row0, chunks_outer ? nb : n_blocks - c0,
          gap - block_bytes * run, gap - 32 * run};
}

// Tile rt's chunk [c0, c0 + kChunkBlocks32) as Lanes16Chunk (rows
// V::kRows * h on), for a sweep that reads it next_tiles tiles on after
// this one: the same chunk there (chunks_outer) or from its first block.
template <class V, int64_t kAheadBlocks, bool kMins>
TC_SIMD_INLINE Lanes16Chunk<V, kAheadBlocks, kMins> lanes16_chunk(const MatmulArgs& a, int64_t rt, int64_t c0, int h,
                                                                  bool chunks_outer, int64_t next_tiles) {
  const Lanes16Streams s = lanes16_streams(a, rt, c0, V::kRows * h, 256, chunks_outer, next_tiles);
  return {s.qs, s.d, s.left, s.skip_qs, s.skip_d, 16 * (a.n_in / 32)};
}

// The sweep over whole 16-row tiles [r0, r1) of a lane-tile matrix whose
// kernel reads a chunk in place or unpacks it into L1 first: GEMV order
// (tile after tile, each tile's chunks in order) in_place(rt, c0) below
// unpack_from tokens, else unpacked(rt, c0, every token); GEMM order (chunk
// after chunk, in blocks of tokens, every tile) unpacked(rt, c0, tokens).
// Each row gets its chunks in order either way.
template <class InPlace, class Unpacked>
TC_SIMD_INLINE void sweep_lanes16_tiles(const MatmulArgs& a, int64_t r0, int64_t r1, int64_t unpack_from,
                                        InPlace&& in_place, Unpacked&& unpacked) {
  const int64_t n_blocks = a.n_in / 32;
  if (!gemm_order(a)) {
    const TokenRange all{0, a.n_tokens};
    for (int64_t rt = r0; rt < r1; rt += 16) {
      for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
        if (a.n_tokens >= unpack_from) {
          unpacked(rt, c0, all);
        } else {
          in_place(rt, c0);
        }
      }
    }
    return;
  }
  for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
    for_each_token_block(a.n_tokens, kGemmBlockTokens, [&](TokenRange tokens) __attribute__((always_inline)) {
      for (int64_t rt = r0; rt < r1; rt += 16) unpacked(rt, c0, tokens);
    });
  }
}

// How far ahead (blocks) a sweep prefetches (see Lanes16Chunk::prefetch):
// `matmul_bench -t 2 --batch 1,8` from DRAM on 2 Zen 5 cores, 5632x2048 and
// 2048x5632: one token 24 blocks (6 KiB of quants) 0.105-0.112 ms against
// 0.112-0.123 at 16 and 0.123-0.131 at 12; 8 tokens in tile pairs 12 blocks
// 0.259-0.282 against 0.286-0.306 at 16 and 24. Measured on VNNI only: the
// AVX2 variant keeps 16 (4 KiB, from its own measurements).
#if defined(TC_MATMUL_VNNI)
constexpr int64_t kLanes16AheadOne = 24;
constexpr int64_t kLanes16AheadPair = 12;
#else
constexpr int64_t kLanes16AheadOne = 16;
constexpr int64_t kLanes16AheadPair = 16;
#endif
constexpr int64_t kLanes16Ahead = 16;

// Batches of at least this many tokens (with the activations in LaneX)
// take a 16-row tile's neighbour into the same pass, each broadcast of the
// activations serving both (a 32-row pass): `bench/lane_loop_bench` on a
// Zen 5 core, 4.46-4.67 against 4.32-4.33 G vpdpbusd/s.
constexpr int64_t kLanePairTokens = 4;

// Outputs [r0, r1) of a Q4_0Lanes16 matrix (kMins: Q4_1Lanes16; whole
// 16-row tiles, below a.lane_rows), every token: the tiles read in place,
// V::kRows rows at a time (the avx512 variant a whole tile or two, AVX2 its
// two halves). Small batches sweep tile after tile, one stream per thread
// that the hardware prefetcher follows; large ones chunk after chunk, as
// the row layout's GEMM order does. Each row gets its chunks in order
// either way.
template <class V, bool kMins>
void run_lanes16_tiles_q4_0(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_blocks = a.n_in / 32;
  const bool chunks_outer = gemm_order(a);
  constexpr int kMaxTokens = kLaneXTokens < V::kTokensInPlace ? kLaneXTokens : V::kTokensInPlace;
  PackQ4Lanes<V> unpacked;
  auto tile_chunk = [&](int64_t rt, int64_t c0, TokenRange tokens) __attribute__((always_inline)) {
    const int64_t nb = min64(kChunkBlocks32, n_blocks - c0);
    for (int h = 0; h < 16 / V::kRows; ++h) {
      float* y = a.y + rt + V::kRows * h;
#if !defined(TC_MATMUL_VNNI)
      if constexpr (std::is_same_v<V, LaneVec8x2> && !kMins) {
        if (a.n_tokens >= kQ4GemmFromTokens) {
          // The chunk unpacked once into L1 and read by the GEMM kernel
          // (matmul_x86_q4_lanes_gemm_avx2.h) from the activations' rows.
          unpack_chunk(unpacked, lanes16_chunk<V, kLanes16Ahead, kMins>(a, rt, c0, h, chunks_outer, 1), nb);
          q4_gemm_tokens<V>(a, unpacked, rt, c0, nb, tokens);
          continue;
        }
      }
#endif
      if (a.lane_x != nullptr && a.n_tokens == 1) {
        const auto chunk = lanes16_chunk<V, kLanes16AheadOne, kMins>(a, rt, c0, h, chunks_outer, 1);
        lane_tile_q4_0<V, 1, 1>(&chunk, XLanes(a.lane_x, n_blocks), c0, nb, n_blocks, y, a.n_out, c0 == 0);
      } else if (a.lane_x != nullptr) {
        // Passes of up to kMaxTokens tokens over the chunk (one pass where
        // the variant holds every LaneX token at once).
        const auto chunk = lanes16_chunk<V, kLanes16Ahead, kMins>(a, rt, c0, h, chunks_outer, 1);
        const XLanes x(a.lane_x, n_blocks);
        for (int t0 = 0; t0 < a.n_tokens; t0 += kMaxTokens) {
          const int tt = static_cast<int>(min64(kMaxTokens, a.n_tokens - t0));
          lane_tile_q4_0_n<V, kMaxTokens, 1, 1>(tt, &chunk, x.from_token(t0), c0, nb, n_blocks, y + t0 * a.n_out,
                                                a.n_out, c0 == 0);
        }
      } else {
        const auto chunk = lanes16_chunk<V, kLanes16Ahead, kMins>(a, rt, c0, h, chunks_outer, 1);
        if constexpr (requires { V::kTokens; }) {
          if (chunks_outer) {
            // GEMM order: the chunk (AVX2: the whole tile; Q4_1 an 8-row
            // half) unpacked once into L1 for the whole token block, then
            // the row layout's kernel on it. Reading in place unpacked it
            // again for every 8 tokens: Zen 3, 2 threads, 512 tokens, 3
            // alternating runs, 101-159 GFLOP/s in place, 135-207 unpacked
            // once (8-row halves, before the AVX2 GEMM kernel).
            unpack_chunk(unpacked, chunk, nb);
            lane_tile_tokens<V>(a, PackedChunk<V, kMins>{unpacked}, rt + V::kRows * h, c0, nb, tokens);
            continue;
          }
        }
        lane_tile_tokens<V, Lanes16Chunk<V, kLanes16Ahead, kMins>, V::kTokensInPlace>(a, chunk, rt + V::kRows * h,
                                                                                       c0, nb, tokens);
      }
    }
  };
  const TokenRange all{0, a.n_tokens};
  if (chunks_outer) {
    // In blocks of tokens, as sweep_chunk_tiles (the activations in LaneX,
    // read by every tile call whole, come in one block).
    const int64_t block = a.lane_x != nullptr ? a.n_tokens : kGemmBlockTokens;
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
      for_each_token_block(a.n_tokens, block, [&](TokenRange tokens) __attribute__((always_inline)) {
        for (int64_t rt = r0; rt < r1; rt += 16) tile_chunk(rt, c0, tokens);
      });
    }
    return;
  }
  int64_t rt = r0;
#if defined(TC_MATMUL_VNNI)
  if constexpr (V::kRows == 16) {
    if (a.lane_x != nullptr && a.n_tokens >= kLanePairTokens) {
      for (; rt + 32 <= r1; rt += 32) {
        for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
          const Lanes16Chunk<V, kLanes16AheadPair, kMins> pair[2] = {
              lanes16_chunk<V, kLanes16AheadPair, kMins>(a, rt, c0, 0, false, 2),
              lanes16_chunk<V, kLanes16AheadPair, kMins>(a, rt + 16, c0, 0, false, 2)};
          lane_tile_q4_0_n<V, kMaxTokens, 2, kLanePairTokens>(static_cast<int>(a.n_tokens), pair,
                                                              XLanes(a.lane_x, n_blocks), c0,
                                                              min64(kChunkBlocks32, n_blocks - c0), n_blocks,
                                                              a.y + rt, a.n_out, c0 == 0);
        }
      }
    }
  }
#endif
  for (; rt < r1; rt += 16) {
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) tile_chunk(rt, c0, all);
  }
}

// Q4_0Lanes16, or with kMins Q4_1Lanes16.
template <bool kMins>
void run_lanes16_q4(const MatmulArgs& a, int64_t r0, int64_t r1) {
#if defined(__AVX512F__) && defined(TC_MATMUL_VNNI)
  run_lanes16_tiles_q4_0<LaneVec16, kMins>(a, r0, r1);
#else
  // Read in place (GEMV order): whole tiles in ymm pairs, each broadcast of
  // an activation step serving 16 rows, in passes of up to 4 tokens. GEMM
  // order: each tile's chunk unpacked once for the token block (whole tiles;
  // Q4_1 in 8-row halves, which the generic kernel reads).
  if (!gemm_order(a) || !kMins) {
    run_lanes16_tiles_q4_0<LaneVec8x2, kMins>(a, r0, r1);
  } else {
    run_lanes16_tiles_q4_0<LaneVec8, kMins>(a, r0, r1);
  }
#endif
}

void run_lanes16_q4_0(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.dtype == DType::Q4_1) return run_lanes16_q4<true>(a, r0, r1);
  run_lanes16_q4<false>(a, r0, r1);
}

}  // namespace
}  // namespace tc::kernels::detail
