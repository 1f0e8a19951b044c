// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// kernels for F16 weights (F32: matmul_x86_float.h, whose activation
// preparation and loaders these use).
//
// Summation order, fixed by n_in alone so that tile shapes, row ranges,
// thread counts and token batching never change a bit: an output is summed
// over its whole row in 8 f32 lanes by two chains of FMAs of w * x, one
// over the even steps (8 inputs), one over the odd ones, each ascending (a
// partial last step ends its chain). The chains are added lane by lane,
// reduced as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) and stored to y. x is
// rounded to f16 first (XFormat::F16) and every path reads that copy.
//
// Against the 256-input chunks F32 keeps (each chunk reduced and added to y,
// tiles sweeping all rows chunk after chunk), the whole-row order lets a
// GEMM tile run a row's length with its accumulators in registers:
// `matmul_bench --dtype f16 --tokens 512` (Zen 3, 2 threads, 2048 x 5632 and
// 5632 x 2048, alternating runs) 72-103 -> 100-133 GFLOP/s, where each
// chunk's reduction, y update and spills had taken a third of a tile's time.
// F32 weights measured slower in this order (0.45-0.8x: their rows and
// tokens, twice the bytes, spill from L1 and L2 sooner), so they keep theirs.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_float.h"

namespace tc::kernels::detail {
namespace {

// 8 f16 values from p widened (n < 8: the first n, zeros after).
TC_SIMD_INLINE __m256 f16x8(const uint16_t* p, int64_t n = 8) {
  return n == 8 ? LoadF16::load(p) : load_partial<LoadF16>(p, n);
}

// acc[r][t] += w[r][k..k+8) * x[t][k..k+8) (n < 8: the first n only); token
// t's x at x + t * xs.
template <int R, int T>
TC_SIMD_INLINE void f16_step(__m256 (&acc)[R][T], const uint16_t* const* w, const uint16_t* x, int64_t xs, int64_t k,
                             int64_t n = 8) {
  // The smaller operand set is held in registers, the other loaded one
  // vector at a time: 4 x 3 then needs 12 + 3 + 1 registers (holding the
  // rows, 12 + 4 + 1, spilled an accumulator inside the loop).
  if constexpr (R > T) {
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = f16x8(x + t * xs + k, n);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = f16x8(w[r] + k, n);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  } else {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = f16x8(w[r] + k, n);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = f16x8(x + t * xs + k, n);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
}

// Whole rows of n inputs for R rows x T tokens, both chains interleaved
// (few accumulators: R * T <= 4), the outputs stored to y. Few rows stream
// straight from DRAM here: each line is prefetched well ahead,
// non-temporal so the weights do not evict x from L1.
template <int R, int T>
TC_SIMD_INLINE void f16_rows_interleaved(const uint16_t* const* w, const uint16_t* x, int64_t xs,
                                         int64_t n, float* y, int64_t ys) {
  __m256 a0[R][T], a1[R][T];
  zero(a0);
  zero(a1);
  const int64_t n_full = n / 8;  // full steps; a partial one after them has index n_full
  int64_t s = 0;
  for (; s + 1 < n_full; s += 2) {
    if ((s * 8 * static_cast<int64_t>(sizeof(uint16_t))) % 64 == 0) {
      for (int r = 0; r < R; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(w[r] + 8 * s) + kStreamPrefetchBytes, _MM_HINT_NTA);
      }
    }
    f16_step<R, T>(a0, w, x, xs, 8 * s);
    f16_step<R, T>(a1, w, x, xs, 8 * s + 8);
  }
  if (s < n_full) f16_step<R, T>(a0, w, x, xs, 8 * s);
  if (n % 8 != 0) f16_step<R, T>(n_full % 2 == 0 ? a0 : a1, w, x, xs, 8 * n_full, n % 8);
  store_tile<R, T>(a0, a1, y, ys, true);
}

// Bytes of each weight row per block of the two-pass tile: 4 KiB (2048
// inputs) keep a 4 x 3 tile's rows and tokens (28 KiB) in L1 for the
// second pass (`matmul_bench --tokens 512`: 1 KiB blocks 0.7-0.8x as fast,
// 8 KiB and whole rows within the runs' spread of 4 KiB).
constexpr int64_t kF16TwoPassBlockBytes = 4096;

// Whole rows of n inputs for R rows x T tokens with more accumulators than
// the registers hold twice: block by block, the even chains run (their
// state loaded from `park` and put back), then the odd ones over the same
// block, now in L1. The outputs are stored to y. next (or nullptr): rows
// the caller reads after these, each block of them prefetched.
template <int R, int T>
TC_SIMD_INLINE void f16_rows_two_pass(const uint16_t* const* w, const uint16_t* x, int64_t xs,
                                      int64_t n, float* y, int64_t ys, const uint16_t* const* next) {
  const int64_t n_full = n / 8;  // full steps; a partial one after them has index n_full
  const int64_t n_steps = (n + 7) / 8;
  // Even: a block's steps keep their parity.
  constexpr int64_t kBlockSteps = kF16TwoPassBlockBytes / (8 * static_cast<int64_t>(sizeof(uint16_t)));
  static_assert(kBlockSteps % 2 == 0);
  alignas(32) float park[2][R][T][8];
  for (int64_t s0 = 0; s0 < n_steps; s0 += kBlockSteps) {
    const int64_t s1 = min64(s0 + kBlockSteps, n_steps);
    if (next != nullptr) {
      for (int r = 0; r < R; ++r) {
        const char* p = reinterpret_cast<const char*>(next[r] + 8 * s0);
        const int64_t bytes = (min64(8 * s1, n) - 8 * s0) * static_cast<int64_t>(sizeof(uint16_t));
        for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
      }
    }
    for (int chain = 0; chain < 2; ++chain) {
      __m256 acc[R][T];
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) acc[r][t] = s0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps(park[chain][r][t]);
      }
      const int64_t full_end = min64(s1, n_full);
      for (int64_t s = s0 + chain; s < full_end; s += 2) f16_step<R, T>(acc, w, x, xs, 8 * s);
      if (n % 8 != 0 && n_full < s1 && n_full % 2 == chain) {
        f16_step<R, T>(acc, w, x, xs, 8 * n_full, n % 8);
      }
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) _mm256_store_ps(park[chain][r][t], acc[r][t]);
      }
    }
  }
  __m256 a0[R][T], a1[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      a0[r][t] = _mm256_load_ps(park[0][r][t]);
      a1[r][t] = _mm256_load_ps(park[1][r][t]);
    }
  }
  store_tile<R, T>(a0, a1, y, ys, true);
}

// Whole rows for R rows x T tokens, the kernel by accumulator count.
template <int R, int T>
TC_SIMD_INLINE void f16_rows(const uint16_t* const* w, const uint16_t* x, int64_t xs, int64_t n,
                             float* y, int64_t ys, const uint16_t* const* next) {
  if constexpr (R * T <= 4) {
    f16_rows_interleaved<R, T>(w, x, xs, n, y, ys);
  } else {
    f16_rows_two_pass<R, T>(w, x, xs, n, y, ys, next);
  }
}

// f16_rows for rr <= R rows and tt <= T tokens known at run time.
template <int R, int T>
void f16_rows_n(int rr, int tt, const uint16_t* const* w, const uint16_t* x, int64_t xs, int64_t n,
                float* y, int64_t ys, const uint16_t* const* next) {
  if constexpr (R > 1) {
    if (rr < R) return f16_rows_n<R - 1, T>(rr, tt, w, x, xs, n, y, ys, next);
  }
  if constexpr (T > 1) {
    if (tt < T) return f16_rows_n<R, T - 1>(rr, tt, w, x, xs, n, y, ys, next);
  }
  f16_rows<R, T>(w, x, xs, n, y, ys, next);
}

// Decode (one token): rows [r0, r1), each one sequential stream read by
// f16_rows_interleaved's loop (the same operations, so the same bits),
// prefetched by hand only when gathered. x is the f16 copy (XFormat::F16).
//
// One stream per thread is what the hardware prefetcher follows at full
// speed; two chains already outrun one core's share of DRAM. Measured on
// the 1B and 7B-layer F16 models, 2 threads, alternating runs against
// llama.cpp's decode (medians of 5-8; docs/benchmarks-history.md): four
// 256-input chunks at once with software prefetching 4 KiB ahead
// 0.81-0.86x of llama.cpp; one chunk, no prefetching, f32 x 0.76-0.96x; the
// same with f16 x 0.99-1.13x; two or four chunks without prefetching 0.4x
// (several streams within a 4 KiB page defeat the hardware prefetcher).
template <bool kGathered>
void f16_decode_rows(const MatmulArgs& a, const uint16_t* x, int64_t r0, int64_t r1) {
  const int64_t n = a.n_in;
  const int64_t n_full = n / 8;
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* w = reinterpret_cast<const uint16_t*>(weight_row(a, r));
    const RowStream stream(a, r);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t s = 0;
    for (; s + 1 < n_full; s += 2) {
      if (kGathered && (s * 8 * static_cast<int64_t>(sizeof(uint16_t))) % 64 == 0) {
        _mm_prefetch(stream.ahead(w + 8 * s, kDecodePrefetchBytes), _MM_HINT_T1);
      }
      a0 = _mm256_fmadd_ps(LoadF16::load(w + 8 * s), LoadF16::load(x + 8 * s), a0);
      a1 = _mm256_fmadd_ps(LoadF16::load(w + 8 * s + 8), LoadF16::load(x + 8 * s + 8), a1);
    }
    if (s < n_full) a0 = _mm256_fmadd_ps(LoadF16::load(w + 8 * s), LoadF16::load(x + 8 * s), a0);
    if (n % 8 != 0) {
      __m256& tail = n_full % 2 == 0 ? a0 : a1;
      tail = _mm256_fmadd_ps(f16x8(w + 8 * n_full, n % 8), f16x8(x + 8 * n_full, n % 8), tail);
    }
    a.y[r] = hsum8(_mm256_add_ps(a0, a1));
  }
}

// GEMM order: blocks of rows (kF16GemmBlockWBytes of weights) x tokens
// (kF16GemmBlockXBytes of x), swept by tiles of kF16GemmRows x
// kF16GemmTokens over whole rows: the block's rows and tokens stay in L2
// while its tiles pass (192 KiB each measured as fast as 384 KiB and as 16
// rows x 24-72 tokens, within the runs' spread).
constexpr int kF16GemmRows = 4;
constexpr int kF16GemmTokens = 3;
constexpr int64_t kF16GemmBlockWBytes = 192 << 10;
constexpr int64_t kF16GemmBlockXBytes = 192 << 10;

void run_f16(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_in = a.n_in;
  const int64_t n_out = a.n_out;
  auto row = [&](int64_t r) { return reinterpret_cast<const uint16_t*>(weight_row(a, r)); };
  const auto* x = reinterpret_cast<const uint16_t*>(a.xq);  // x rounded to f16 (XFormat::F16)
  const int64_t xs = a.xl.stride / static_cast<int64_t>(sizeof(uint16_t));
  if (a.n_tokens == 1) {
    a.rows != nullptr ? f16_decode_rows<true>(a, x, r0, r1) : f16_decode_rows<false>(a, x, r0, r1);
    return;
  }
  if (!gemm_order(a)) {
    // Small batches: kGemvRows rows x up to kGemvTokens tokens per tile,
    // each weight read from memory once per call. Gathered rows do not
    // follow each other in memory: the next tile's rows are fetched while
    // this one computes.
    for (int64_t r = r0; r < r1; r += kGemvRows) {
      const int rr = static_cast<int>(min64(kGemvRows, r1 - r));
      const uint16_t* w[kGemvRows];
      const uint16_t* next[kGemvRows];
      for (int i = 0; i < rr; ++i) w[i] = row(r + i);
      const bool prefetch_next = a.rows != nullptr && r + 2 * kGemvRows <= r1;
      for (int i = 0; i < kGemvRows && prefetch_next; ++i) next[i] = row(r + kGemvRows + i);
      for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kGemvTokens) {
        const int tt = static_cast<int>(min64(kGemvTokens, a.n_tokens - t0));
        f16_rows_n<kGemvRows, kGemvTokens>(rr, tt, w, x + t0 * xs, xs, n_in, a.y + t0 * n_out + r, n_out,
                                                  prefetch_next && t0 == 0 ? next : nullptr);
      }
    }
    return;
  }
  const int64_t row_bytes = n_in * static_cast<int64_t>(sizeof(uint16_t));
  const int64_t block_rows =
      std::max<int64_t>(kF16GemmRows, kF16GemmBlockWBytes / row_bytes / kF16GemmRows * kF16GemmRows);
  const int64_t block_tokens =
      std::max<int64_t>(kF16GemmTokens, kF16GemmBlockXBytes / row_bytes / kF16GemmTokens * kF16GemmTokens);
  for (int64_t rb = r0; rb < r1; rb += block_rows) {
    const int64_t re = min64(rb + block_rows, r1);
    for_each_token_block(a.n_tokens, block_tokens, [&](TokenRange tokens) {
      for (int64_t rt = rb; rt < re; rt += kF16GemmRows) {
        const int rr = static_cast<int>(min64(kF16GemmRows, re - rt));
        const uint16_t* w[kF16GemmRows];
        for (int i = 0; i < rr; ++i) w[i] = row(rt + i);
        for (int64_t t0 = tokens.begin; t0 < tokens.end; t0 += kF16GemmTokens) {
          const int tt = static_cast<int>(min64(kF16GemmTokens, tokens.end - t0));
          f16_rows_n<kF16GemmRows, kF16GemmTokens>(rr, tt, w, x + t0 * xs, xs, n_in, a.y + t0 * n_out + rt,
                                                          n_out, nullptr);
        }
      }
    });
  }
}

}  // namespace
}  // namespace tc::kernels::detail
