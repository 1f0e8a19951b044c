// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// Q8_0 GEMM with weight rows in the vector lanes, for the avx512 variant
// (prefill: the batches run_packed_gemm would take). Other variants, and
// the rows left over from its 16-row tiles, take run_packed_gemm. Matrices
// repacked at load (Q8_0Lanes16, q8_lanes16.h) are read in place by decode
// and small batches (run_lanes16_q8_0) and copied chunk by chunk into the
// same L1 form for the GEMM order and the AMX tiles.
//
// A tile of 16 rows x one chunk (up to 32 blocks) is repacked once into L1:
// per block and step s (elements 4s..4s+3), the 16 rows' 4 signed weights,
// row j in int32 lane j, and per block a bias of -128 x the sum of its 32
// weights. A token's 4 activations are broadcast as unsigned bytes
// (x + 128), so vpdpbusd over the 8 steps from the bias gives each row's
// exact block sum: sum (x + 128) w - 128 sum w = sum x w, within 32 x 255 x
// 127 before the bias (vpdpbusd adds in int32 without saturating; AVX2's
// vpmaddubsw would overflow its int16 pairs, hence VNNI only).
//
// Same bits as the row-by-row kernels (OpsQ8_0, packed_tile_q8_0): per row
// and token, block i of a group of 8 goes to lane i / 2 + 4 (i % 2)
// (kQ4GroupOrder) of one of two f32 chains, even groups and odd groups,
// chain = fma(float(block sum), dw * dx, chain) from +0; store_tile adds the
// chains and sums the 8 lanes as ((v0 + v1) + (v2 + v3)) + ((v4 + v5) +
// (v6 + v7)). Here each of those 16 chain lanes is a zmm over the tile's 16
// rows.
#pragma once

#if defined(__AVX512F__) && defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_lanes.h"
#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

using Q8Lanes = LaneVec16;
// Tokens per micro-kernel: 8 chain lanes and a block sum per token, the
// step's weights, the block's bias and scales and a broadcast fit the 32
// zmm registers at 2 tokens (3 measured the same, within this VM's noise).
constexpr int kQ8LaneTokens = 2;

struct PackQ8Lanes {
  // Block i, step s: the rows' weights 4s..4s+3 (int8), row j in lane j.
  alignas(64) int8_t q[kChunkBlocks32][8][4 * Q8Lanes::kRows];
  // Block i: -128 x the sum of its 32 weights, per row.
  alignas(64) int32_t bias[kChunkBlocks32][Q8Lanes::kRows];
  alignas(64) float dw[kChunkBlocks32][Q8Lanes::kRows];  // block i: the rows' scales
};

// An 8 x 8 transpose of dwords: dword s of v[r] to lane r of steps[s] (8
// rows' 32 bytes to 8 steps of their 4 bytes each, row r at bytes 4r..4r+3).
TC_SIMD_INLINE void transpose_dwords_8x8(const __m256i (&v)[8], __m256i (&steps)[8]) {
  const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
  const __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]), t5 = _mm256_unpackhi_epi32(v[4], v[5]);
  const __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]), t7 = _mm256_unpackhi_epi32(v[6], v[7]);
  // u0..u3: rows 0-3 of steps 0..3 in the low half, steps 4..7 in the high
  // half; u4..u7 the same for rows 4-7.
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  steps[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  steps[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  steps[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  steps[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  steps[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  steps[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  steps[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  steps[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// Repacks blocks [b0, b0 + nb) of 16 rows, 8 rows (one ymm per step) at a time.
inline void pack_q8_lanes(PackQ8Lanes& p, const std::byte* const* w, int64_t b0, int64_t nb) {
  const __m256i ones = _mm256_set1_epi8(1);
  for (int h = 0; h < Q8Lanes::kRows / 8; ++h) {
    const BlockQ8_0* blk[8];
    for (int r = 0; r < 8; ++r) blk[r] = reinterpret_cast<const BlockQ8_0*>(w[8 * h + r]) + b0;
    for (int64_t i = 0; i < nb; ++i) {
      __m256i v[8], steps[8];
      for (int r = 0; r < 8; ++r) v[r] = loadu32(blk[r][i].qs);
      transpose_dwords_8x8(v, steps);
      __m256i sum32 = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.q[i][s] + 32 * h), steps[s]);
        sum32 = _mm256_dpbusd_epi32(sum32, ones, steps[s]);
      }
      const __m256i bias = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), sum32), 7);
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.bias[i] + 8 * h), bias);
      uint16_t dh[8];
      for (int r = 0; r < 8; ++r) dh[r] = blk[r][i].d;
      _mm256_store_ps(p.dw[i] + 8 * h, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dh))));
    }
  }
}

// Where lane_tile_q8_0 gets a chunk's operands: the file's rows repacked
// into L1 (signed weights, -128 x each block's weight sum, f32 scales; the
// activations go in as x + 128)...
struct PackedQ8Chunk {
  using V = Q8Lanes;
  const PackQ8Lanes& p;
  TC_SIMD_INLINE V::I bias(int64_t i, const XRow&, int64_t) const { return V::load_i(p.bias[i]); }
  TC_SIMD_INLINE V::I weights(int64_t i, int s) const { return V::load_i(p.q[i][s]); }
  TC_SIMD_INLINE static V::I dot(V::I sum, V::I w, int32_t x4) {
    const V::I offset = _mm512_set1_epi8(static_cast<char>(0x80));  // x + 128 as unsigned = x xor 0x80
    return V::dot_acc(sum, _mm512_xor_si512(V::set1_i(x4), offset), w);
  }
  TC_SIMD_INLINE V::F scales(int64_t i) const { return V::load_f(p.dw[i]); }
  TC_SIMD_INLINE void prefetch(int64_t) const {}
};

// ... or a Q8_0Lanes16 tile read in place (q8_lanes16.h): qs and d at the
// chunk's first block, the weights unsigned (w + 128) and the activations
// signed, less 128 x the block's sum of the token's activations. Block i
// prefetches block i of the chunk the sweep reads next (next_qs, next_d;
// nullptr: none), 16 KiB ahead. The hardware prefetcher alone, which
// restarts at every 4 KiB page, left one-token decode at 117-127% of the
// read probe (`matmul_bench -t 2 --dtype q8_0x16 --no-gemm`, 1B shapes,
// the Xeon, distances alternating twice); 4-8 KiB ahead made 128-146%,
// 12-16 KiB 137-156%, 24-32 KiB 123-139%.
struct Lanes16Q8Chunk {
  using V = Q8Lanes;
  const std::byte* qs;
  const uint16_t* d;
  const std::byte* next_qs;
  const uint16_t* next_d;
  TC_SIMD_INLINE static V::I bias(int64_t, const XRow& x, int64_t b) { return V::set1_i(-128 * x.sum32[b]); }
  TC_SIMD_INLINE V::I weights(int64_t i, int s) const { return V::load_i(qs + 512 * i + 64 * s); }
  TC_SIMD_INLINE static V::I dot(V::I sum, V::I w, int32_t x4) { return V::dot_acc(sum, w, V::set1_i(x4)); }
  TC_SIMD_INLINE V::F scales(int64_t i) const { return V::cvt_ph(d + 16 * i); }
  TC_SIMD_INLINE void prefetch(int64_t i) const {
    if (next_qs == nullptr) return;
    const char* q = reinterpret_cast<const char*>(next_qs) + 512 * i;
    for (int l = 0; l < 8; ++l) _mm_prefetch(q + 64 * l, _MM_HINT_T0);
    if (i % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(next_d + 16 * i), _MM_HINT_T0);
  }
};

// Tile rt's chunk c0 of a Q8_0Lanes16 matrix (q8_lanes16.h: qs [nb][8][16][4],
// then d [nb][16]), prefetching nothing.
TC_SIMD_INLINE Lanes16Q8Chunk lanes16_q8_chunk(const MatmulArgs& a, int64_t rt, int64_t c0) {
  const std::byte* tile = a.w + rt / 16 * a.lane_tile_bytes;
  return {tile + 512 * c0, reinterpret_cast<const uint16_t*>(tile + 512 * (a.n_in / 32)) + 16 * c0, nullptr, nullptr};
}

// A Q8_0Lanes16 chunk's blocks [0, nb) as pack_q8_lanes leaves a chunk of
// rows: the weights signed again (xor 0x80), each block's bias and f32
// scales. For the GEMM order, where a chunk serves a block of tokens: read
// in place, every token paid the bias and the scales' widening again, and
// the avx512 GEMM ran 15-20% slower than from rows (`matmul_bench -t 2
// --tokens 512 --isa avx512 --dtype q8_0,q8_0x16`, 1B shapes).
TC_SIMD_INLINE void pack_q8_lanes(PackQ8Lanes& p, const Lanes16Q8Chunk& c, int64_t nb) {
  using V = Q8Lanes;
  const V::I offset = _mm512_set1_epi8(static_cast<char>(0x80));
  const V::I ones = _mm512_set1_epi8(1);
  for (int64_t i = 0; i < nb; ++i) {
    c.prefetch(i);
    V::I sum = V::zero_i();
    for (int s = 0; s < 8; ++s) {
      const V::I q = _mm512_xor_si512(c.weights(i, s), offset);
      _mm512_store_si512(p.q[i][s], q);
      sum = V::dot_acc(sum, ones, q);
    }
    // -128 x the sum (the zero-masked shift: GCC 12's plain one reads an
    // undefined vector and warns, as V::cvt_f's note says).
    _mm512_store_si512(p.bias[i], _mm512_maskz_slli_epi32(0xffff, V::sub_i(V::zero_i(), sum), 7));
    _mm512_store_ps(p.dw[i], c.scales(i));
  }
}

// y[t, rows 0-15] (+)= the chunk [b0, b0 + nb) for T tokens. Both chunk
// sources give every block the same exact int32 sums and the same f32
// scales, so the same bits.
template <int T, class Chunk>
TC_SIMD_INLINE void lane_tile_q8_0(const Chunk& c, const XRow* x, int64_t b0, int64_t nb, float* y, int64_t ys,
                                   bool first) {
  using V = Q8Lanes;
  using F = V::F;
  using I = V::I;
  const int64_t n_units = (nb + kGroup - 1) / kGroup;
  // The even groups, then the odd ones, as packed_tile_q8_0.
  F chains[2][T][8];
  for (int parity = 0; parity < 2; ++parity) {
    F acc[T][8];
    for (int t = 0; t < T; ++t) {
      for (int l = 0; l < 8; ++l) acc[t][l] = V::zero_f();
    }
    for (int64_t u = parity; u < n_units; u += 2) {
      const int64_t g = kGroup * u;
      const int64_t count = min64(kGroup, nb - g);
      for (int64_t j = 0; j < count; ++j) {
        const int64_t i = g + j;
        const int64_t b = b0 + i;
        const int lane = static_cast<int>(j / 2 + 4 * (j % 2));  // kQ4GroupOrder
        c.prefetch(i);
        I sum[T];
        for (int t = 0; t < T; ++t) sum[t] = c.bias(i, x[t], b);
#pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
          const I w = c.weights(i, s);
          for (int t = 0; t < T; ++t) {
            int32_t x4;
            std::memcpy(&x4, x[t].qs + 32 * b + 4 * s, 4);
            sum[t] = Chunk::dot(sum[t], w, x4);
          }
        }
        const F dw = c.scales(i);
        for (int t = 0; t < T; ++t) {
          acc[t][lane] = V::fma_f(V::cvt_f(sum[t]), V::mul_f(dw, V::set1_f(x[t].d[b])), acc[t][lane]);
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      for (int l = 0; l < 8; ++l) chains[parity][t][l] = acc[t][l];
    }
  }
  for (int t = 0; t < T; ++t) {
    F v[8];
    for (int l = 0; l < 8; ++l) v[l] = V::add_f(chains[0][t][l], chains[1][t][l]);
    const F sum = V::add_f(V::add_f(V::add_f(v[0], v[1]), V::add_f(v[2], v[3])),
                           V::add_f(V::add_f(v[4], v[5]), V::add_f(v[6], v[7])));
    float* yt = y + t * ys;
    V::storeu_f(yt, first ? sum : V::add_f(V::loadu_f(yt), sum));
  }
}

// Every token of `tokens` through one tile's chunk, kQ8LaneTokens at a time.
template <class Chunk>
TC_SIMD_INLINE void lane_tile_q8_0_tokens(const MatmulArgs& a, const Chunk& c, int64_t rt, int64_t c0, int64_t nb,
                                          TokenRange tokens) {
  int64_t t0 = tokens.begin;
  for (; t0 + kQ8LaneTokens <= tokens.end; t0 += kQ8LaneTokens) {
    XRow x[kQ8LaneTokens];
    for (int i = 0; i < kQ8LaneTokens; ++i) x[i] = x_row(a, t0 + i);
    lane_tile_q8_0<kQ8LaneTokens>(c, x, c0, nb, a.y + t0 * a.n_out + rt, a.n_out, c0 == 0);
  }
  for (; t0 < tokens.end; ++t0) {
    const XRow x = x_row(a, t0);
    lane_tile_q8_0<1>(c, &x, c0, nb, a.y + t0 * a.n_out + rt, a.n_out, c0 == 0);
  }
}

// Outputs [r0, r1): tiles of 16 rows in lanes, the last r1 - r0 mod 16 rows
// by the row-by-row packed GEMM (same bits either way). (Unused where only
// the packing is wanted: the amx variant.)
[[maybe_unused]] void run_lane_gemm_q8_0(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(BlockQ8_0));
  constexpr int kRows = Q8Lanes::kRows;
  const int64_t n_blocks = a.n_in / 32;
  const int64_t r_lanes = r0 + (r1 - r0) / kRows * kRows;
  PackQ8Lanes p;
  sweep_chunk_tiles<kRows>(a, r0, r_lanes, kRows, n_blocks, kChunkBlocks32, kBlockBytes,
                           [&](int64_t rt, int, const std::byte* const* w, int64_t c0, int64_t nb,
                               TokenRange tokens) {
                             pack_q8_lanes(p, w, c0, nb);
                             lane_tile_q8_0_tokens(a, PackedQ8Chunk{p}, rt, c0, nb, tokens);
                           });
  if (r_lanes < r1) run_packed_gemm<OpsQ8_0>(a, r_lanes, r1);
}

// Outputs [r0, r1) of a Q8_0Lanes16 matrix (whole 16-row tiles, below
// a.lane_rows), every token, the tiles read in place: tile after tile, each
// one's chunks in order, for few tokens (one stream per thread that the
// hardware prefetcher follows); chunk after chunk, tokens in blocks, in
// GEMM order, as the row layout's GEMM sweeps. Each row gets its chunks in
// order either way.
[[maybe_unused]] void run_lanes16_q8_0(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_blocks = a.n_in / 32;
  // Tile rt's chunk c0, prefetching tile rt_next's chunk c_next (rt_next
  // at r1: none).
  auto chunk = [&](int64_t rt, int64_t c0, int64_t rt_next, int64_t c_next) __attribute__((always_inline)) {
    Lanes16Q8Chunk c = lanes16_q8_chunk(a, rt, c0);
    if (rt_next < r1) {
      const Lanes16Q8Chunk next = lanes16_q8_chunk(a, rt_next, c_next);
      c.next_qs = next.qs;
      c.next_d = next.d;
    }
    return c;
  };
  if (gemm_order(a)) {
    PackQ8Lanes p;
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
      const int64_t nb = min64(kChunkBlocks32, n_blocks - c0);
      for_each_token_block(a.n_tokens, kGemmBlockTokens, [&](TokenRange tokens) __attribute__((always_inline)) {
        for (int64_t rt = r0; rt < r1; rt += 16) {
          pack_q8_lanes(p, chunk(rt, c0, rt + 16, c0), nb);
          lane_tile_q8_0_tokens(a, PackedQ8Chunk{p}, rt, c0, nb, tokens);
        }
      });
    }
    return;
  }
  for (int64_t rt = r0; rt < r1; rt += 16) {
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunkBlocks32) {
      const bool last = c0 + kChunkBlocks32 >= n_blocks;
      lane_tile_q8_0_tokens(a, chunk(rt, c0, last ? rt + 16 : rt, last ? 0 : c0 + kChunkBlocks32), rt, c0,
                            min64(kChunkBlocks32, n_blocks - c0), TokenRange{0, a.n_tokens});
    }
  }
}

}  // namespace
}  // namespace tc::kernels::detail

#endif
