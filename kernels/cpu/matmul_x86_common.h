// Internal to the x86 SIMD matmul variants: constants, horizontal sums,
// tile stores and the int8 dot product, included (with matmul_x86_float.h
// and matmul_x86_quant.h) by matmul_avx2.cpp and matmul_avx512.cpp only,
// which are compiled with their own -m flags. Everything here has internal
// linkage (anonymous namespace), so no SIMD code reaches baseline
// translation units through the linker.
//
// TC_MATMUL_VNNI (set by matmul_avx512.cpp) computes u8 x s8 dot products
// with vpdpbusd instead of vpmaddubsw + vpmaddwd: the same exact int32 lanes
// (the kernels keep maddubs' int16 pairs below saturation), so both variants
// give the same bits.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "matmul_x86_common.h needs -mavx2 -mfma -mf16c"
#endif
#if defined(TC_MATMUL_VNNI) && !(defined(__AVX512VNNI__) && defined(__AVX512VL__))
#error "TC_MATMUL_VNNI needs -mavx512vnni -mavx512vl"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_kernels.h"

// The per-block and per-chunk pieces must inline into one loop: calls and
// spilled pointers between 8-block chunks cost more than the blocks.
#define TC_SIMD_INLINE inline __attribute__((always_inline))

namespace tc::kernels::detail {
namespace {

constexpr int64_t kChunk = 256;
// Must equal matmul_portable.cpp's: every variant writes the same bytes.
constexpr float kTinyAmax = 1e-30f;
// The largest finite f16: F16-weight activations are clamped to +-this
// before rounding (XFormat::F16), so a huge x cannot become inf.
constexpr float kF16Max = 65504.0f;

// GEMV order (few tokens): one row at a time, streamed once from memory
// (several interleaved row streams read DRAM markedly slower here), with up
// to kGemvTokens tokens per pass. GEMM order: for each chunk, the chunk of
// every token stays in L2 while tiles of rows x tokens sweep it.
constexpr int kGemvTokens = 4;
// Rows per small-batch tile of float weights (n_tokens > 1, GEMV order):
// two rows x up to four tokens keep enough FMA chains in flight to hide
// their latency (n=2..8 1.1-1.4x faster than one row). Quantized weights
// choose per dtype (Ops::kGemvRows).
constexpr int kGemvRows = 2;
// Prepared activations of all tokens above this size switch to GEMM order.
constexpr int64_t kGemvMaxXBytes = 192 << 10;
// GEMM order takes the tokens in blocks of this many: one chunk of a
// block's activations (about 1 KiB a token for every dtype: 1024 int8
// inputs with their scales, or 256 f32 ones) stays in L2 while every row
// tile sweeps it. A chunk of all 512 tokens of a prompt (over 512 KiB)
// spilled out of a Zen 3 core's L2: `matmul_bench -t 1 --tokens 512`,
// Q4_K and Q6_K 58-68 GFLOP/s unblocked, 73-80 in blocks of 32-128 tokens.
constexpr int64_t kGemmBlockTokens = 128;

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

inline float hsum8(__m256 v) {
  __m256 h = _mm256_hadd_ps(v, v);
  h = _mm256_hadd_ps(h, h);
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

// hsum8 of four vectors at once, bit for bit the same sums.
inline __m128 hsum8x4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// Sums of u[4i..4i+3] * s[4i..4i+3] (u unsigned, s signed) in int32 lane i.
// Callers keep each pair u[2j]*s[2j] + u[2j+1]*s[2j+1] within int16.
TC_SIMD_INLINE __m256i dot_u8s8(__m256i u, __m256i s) {
#if defined(TC_MATMUL_VNNI)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// dot_u8s8(u0, s0) + dot_u8s8(u1, s1) lane by lane.
TC_SIMD_INLINE __m256i dot2_u8s8(__m256i u0, __m256i s0, __m256i u1, __m256i s1) {
#if defined(TC_MATMUL_VNNI)
  return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u0, s0), u1, s1);
#else
  // Both int16 pair sums stay small enough here to add before widening.
  return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1)),
                           _mm256_set1_epi16(1));
#endif
}

// The 4 activation bytes at p broadcast to every 32-bit lane (the lane
// kernels' step: one token's 4 inputs against 8 rows' 4 weights).
TC_SIMD_INLINE __m256i lane_x4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i load32(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }
inline __m256i loadu32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Adds the two chains and writes y[t * ys + r] for the tile: stored on a
// row's first chunk, added after.
template <int R, int T>
inline void store_tile(const __m256 (&a0)[R][T], const __m256 (&a1)[R][T], float* y, int64_t ys, bool first) {
  for (int t = 0; t < T; ++t) {
    float* yt = y + t * ys;
    int r = 0;
    for (; r + 4 <= R; r += 4) {
      const __m128 s = hsum8x4(_mm256_add_ps(a0[r][t], a1[r][t]), _mm256_add_ps(a0[r + 1][t], a1[r + 1][t]),
                               _mm256_add_ps(a0[r + 2][t], a1[r + 2][t]), _mm256_add_ps(a0[r + 3][t], a1[r + 3][t]));
      _mm_storeu_ps(yt + r, first ? s : _mm_add_ps(_mm_loadu_ps(yt + r), s));
    }
    for (; r < R; ++r) {
      const float s = hsum8(_mm256_add_ps(a0[r][t], a1[r][t]));
      yt[r] = first ? s : yt[r] + s;
    }
  }
}

template <int R, int T>
inline void zero(__m256 (&a)[R][T]) {
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) a[r][t] = _mm256_setzero_ps();
  }
}

// Prefetches bytes [offset, offset + n_bytes) of the weight rows of outputs
// r_first .. r_first + n_rows - 1.
inline void prefetch_rows(const MatmulArgs& a, int64_t r_first, int n_rows, int64_t offset, int64_t n_bytes) {
  for (int i = 0; i < n_rows; ++i) {
    const char* p = reinterpret_cast<const char*>(weight_row(a, r_first + i) + offset);
    for (int64_t b = 0; b < n_bytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
  }
}

// The weight rows a decode loop reads one after another, seen as one stream
// for prefetching: bytes past the end of `row` continue at `next`, the row
// of the next output. For a dense matmul next == row + row_bytes, so the
// addresses are those of plain row + offset prefetching; a gathered one
// (MatmulArgs::rows) prefetches the start of the next gathered row instead
// of the unused row that follows in memory.
struct RowStream {
  const char* row;
  const char* next;
  int64_t row_bytes;

  RowStream(const MatmulArgs& a, int64_t r) : RowStream(a, r, r + 1) {}
  // A stream that continues at output r_next's row instead of r + 1's.
  RowStream(const MatmulArgs& a, int64_t r, int64_t r_next)
      : row(reinterpret_cast<const char*>(weight_row(a, r))),
        next(r_next < a.n_out ? reinterpret_cast<const char*>(weight_row(a, r_next)) : row + a.row_bytes),
        row_bytes(a.row_bytes) {}

  // The address `distance` bytes after p (a pointer into `row`) in the stream.
  TC_SIMD_INLINE const char* ahead(const void* p, int64_t distance) const {
    const int64_t pos = static_cast<const char*>(p) - row + distance;
    return pos < row_bytes ? row + pos : next + (pos - row_bytes);
  }

  // Prefetches into L1 the n_bytes that lie `distance` bytes after p.
  // (Forced inline: left to GCC, this call cost Q4_0 decode a fifth of its
  // speed, back to where it was without the prefetch.)
  TC_SIMD_INLINE void prefetch_ahead(const void* p, int64_t n_bytes, int64_t distance) const {
    for (int64_t b = 0; b < n_bytes; b += 64) _mm_prefetch(ahead(static_cast<const char*>(p) + b, distance), _MM_HINT_T0);
  }
};

inline bool gemm_order(const MatmulArgs& a) { return a.n_tokens * a.xl.stride > kGemvMaxXBytes; }

// Tokens [begin, end) of a call: the ones a tile computes.
struct TokenRange {
  int64_t begin;
  int64_t end;
};

// fn(tokens) for tokens [0, n_tokens) in blocks of `block`, in order.
template <class Fn>
TC_SIMD_INLINE void for_each_token_block(int64_t n_tokens, int64_t block, Fn&& fn) {
  for (int64_t t0 = 0; t0 < n_tokens; t0 += block) fn(TokenRange{t0, min64(n_tokens, t0 + block)});
}

// The GEMM-order sweep over outputs [r0, r1) of a matrix of n_blocks blocks
// per row: chunks of chunk_blocks blocks outer, then blocks of
// kGemmBlockTokens tokens (a chunk of a block's activations stays in L2),
// tiles of `rows` rows inner (the last one shorter when rows does not
// divide r1 - r0). Each tile gets tile(rt, rr, w, c0, nb, tokens): its
// first row, its row count, the rows' weight pointers, the chunk and the
// token block, after the next tile's chunk was prefetched. Every output
// still gets its chunks in ascending order.
template <int kMaxRows, class Tile>
TC_SIMD_INLINE void sweep_chunk_tiles(const MatmulArgs& a, int64_t r0, int64_t r1, int rows, int64_t n_blocks,
                                      int64_t chunk_blocks, int64_t block_bytes, Tile&& tile) {
  for (int64_t c0 = 0; c0 < n_blocks; c0 += chunk_blocks) {
    const int64_t nb = min64(chunk_blocks, n_blocks - c0);
    // A plain loop, not for_each_token_block: the tiles' kernels inline
    // into it; through one more lambda the Q4_K GEMM ran 5-10% slower
    // (Zen 3, 2 threads, 512 tokens, 3 alternating runs).
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kGemmBlockTokens) {
      const TokenRange tokens{t0, min64(a.n_tokens, t0 + kGemmBlockTokens)};
      for (int64_t rt = r0; rt < r1; rt += rows) {
        const int rr = static_cast<int>(min64(rows, r1 - rt));
        if (rt + 2 * rows <= r1) prefetch_rows(a, rt + rows, rows, c0 * block_bytes, nb * block_bytes);
        const std::byte* w[kMaxRows];
        for (int i = 0; i < rr; ++i) w[i] = weight_row(a, rt + i);
        tile(rt, rr, w, c0, nb, tokens);
      }
    }
  }
}

// The tile-outer twin of sweep_chunk_tiles, for batches small enough that
// their activations stay in L1/L2 anyway (!gemm_order): every token in
// each tile call, a tile's rows read chunk after chunk, and the next chunk of the same rows (or the next
// tile's first) is prefetched while this one computes. Each row still gets
// its chunks in ascending order, so the bits are those of sweep_chunk_tiles.
template <int kMaxRows, class Tile>
TC_SIMD_INLINE void sweep_tile_chunks(const MatmulArgs& a, int64_t r0, int64_t r1, int rows, int64_t n_blocks,
                                      int64_t chunk_blocks, int64_t block_bytes, Tile&& tile) {
  for (int64_t rt = r0; rt < r1; rt += rows) {
    const int rr = static_cast<int>(min64(rows, r1 - rt));
    const std::byte* w[kMaxRows];
    for (int i = 0; i < rr; ++i) w[i] = weight_row(a, rt + i);
    for (int64_t c0 = 0; c0 < n_blocks; c0 += chunk_blocks) {
      const int64_t nb = min64(chunk_blocks, n_blocks - c0);
      const int64_t c1 = c0 + chunk_blocks;
      if (c1 < n_blocks) {
        prefetch_rows(a, rt, rr, c1 * block_bytes, min64(chunk_blocks, n_blocks - c1) * block_bytes);
      } else if (rt + 2 * rows <= r1) {
        prefetch_rows(a, rt + rows, rows, 0, min64(chunk_blocks, n_blocks) * block_bytes);
      }
      tile(rt, rr, w, c0, nb, TokenRange{0, a.n_tokens});
    }
  }
}

}  // namespace
}  // namespace tc::kernels::detail
