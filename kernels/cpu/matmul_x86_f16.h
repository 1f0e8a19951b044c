// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// kernels for F16 weights (F32: matmul_x86_float.h, whose activation
// preparation and loaders these use).
//
// Summation order, fixed by n_in alone so that tile shapes, row ranges,
// thread counts and token batching never change a bit: an output is summed
// over its whole row in 8 f32 lanes by one chain of FMAs of w * x over the
// steps of 8 inputs, ascending (a partial last step ends it, zero-padded).
// The lanes are reduced as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) and stored
// to y. x is rounded to f16 first (XFormat::F16) and every path reads that
// copy.
//
// One chain per output lets a GEMM tile of 4 rows x 3 tokens hold its 12
// accumulators in registers for a row's whole length and stream both
// operands once; decode hides the FMA latency across rows instead (two
// rows at once). Against the 256-input chunks F32 keeps (each chunk reduced
// and added to y, tiles sweeping all rows chunk after chunk), whole rows
// save each chunk's reduction, y update and spills; F32 weights measured
// slower in whole rows (0.45-0.8x: their rows and tokens, twice the bytes,
// spill from L1 and L2 sooner), so they keep theirs.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_f16_zmm.h"
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

// Reduces each accumulator's lanes and stores it to y[t * ys + r].
template <int R, int T>
TC_SIMD_INLINE void f16_store(const __m256 (&acc)[R][T], float* y, int64_t ys) {
  for (int t = 0; t < T; ++t) {
    float* yt = y + t * ys;
    int r = 0;
    for (; r + 4 <= R; r += 4) {
      _mm_storeu_ps(yt + r, hsum8x4(acc[r][t], acc[r + 1][t], acc[r + 2][t], acc[r + 3][t]));
    }
    for (; r < R; ++r) yt[r] = hsum8(acc[r][t]);
  }
}

// How a tile fetches the weights ahead of its loads.
enum class F16Prefetch {
  kNone,    // GEMM order: the block's rows are in L2 after its first tile
  kStream,  // rows read once from DRAM: non-temporal, so x stays in L1
  kNext,    // gathered rows: the next tile's rows (`next`), into L1
};

// Whole rows of n inputs for R rows x T tokens, outputs stored to y.
template <int R, int T, F16Prefetch kPrefetch>
TC_SIMD_INLINE void f16_rows(const uint16_t* const* w, const uint16_t* x, int64_t xs, int64_t n, float* y,
                             int64_t ys, const uint16_t* const* next) {
  __m256 acc[R][T];
  zero(acc);
  const int64_t n_full = n / 8;  // full steps; a partial one after them has index n_full
  for (int64_t s = 0; s < n_full; ++s) {
    if constexpr (kPrefetch != F16Prefetch::kNone) {
      if ((s * 8 * static_cast<int64_t>(sizeof(uint16_t))) % 64 == 0) {
        for (int r = 0; r < R; ++r) {
          if constexpr (kPrefetch == F16Prefetch::kStream) {
            _mm_prefetch(reinterpret_cast<const char*>(w[r] + 8 * s) + kStreamPrefetchBytes, _MM_HINT_NTA);
          } else {
            _mm_prefetch(reinterpret_cast<const char*>(next[r] + 8 * s), _MM_HINT_T0);
          }
        }
      }
    }
    f16_step<R, T>(acc, w, x, xs, 8 * s);
  }
  if (n % 8 != 0) f16_step<R, T>(acc, w, x, xs, 8 * n_full, n % 8);
  f16_store<R, T>(acc, y, ys);
}

// f16_rows for rr <= R rows and tt <= T tokens known at run time.
template <int R, int T, F16Prefetch kPrefetch>
void f16_rows_n(int rr, int tt, const uint16_t* const* w, const uint16_t* x, int64_t xs, int64_t n, float* y,
                int64_t ys, const uint16_t* const* next) {
  if constexpr (R > 1) {
    if (rr < R) return f16_rows_n<R - 1, T, kPrefetch>(rr, tt, w, x, xs, n, y, ys, next);
  }
  if constexpr (T > 1) {
    if (tt < T) return f16_rows_n<R, T - 1, kPrefetch>(rr, tt, w, x, xs, n, y, ys, next);
  }
  f16_rows<R, T, kPrefetch>(w, x, xs, n, y, ys, next);
}

// Rows per decode pass: one chain per row, so two rows keep two FMAs in
// flight (one row alone: 10.1 against 11.1 t/s on the 1b-k F16 model).
constexpr int kF16DecodeRows = 2;

// Decode (one token): rows [r0, r1), kF16DecodeRows at a time, each row
// prefetched by hand 4 KiB ahead, dense or gathered (RowStream: the jump to
// the row the stream reads next); two streams per thread left to the
// hardware prefetcher decoded at 9.2-9.6 t/s against 11.8. x is the f16
// copy (XFormat::F16).
void f16_decode_rows(const MatmulArgs& a, const uint16_t* x, int64_t r0, int64_t r1) {
  const int64_t n = a.n_in;
  const int64_t n_full = n / 8;
  int64_t r = r0;
  for (; r + kF16DecodeRows <= r1; r += kF16DecodeRows) {
    const uint16_t* w0 = reinterpret_cast<const uint16_t*>(weight_row(a, r));
    const uint16_t* w1 = reinterpret_cast<const uint16_t*>(weight_row(a, r + 1));
    // Each row's stream continues into the same row of the next pair.
    const RowStream s0(a, r, r + kF16DecodeRows), s1(a, r + 1, r + 1 + kF16DecodeRows);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int64_t s = 0; s < n_full; ++s) {
      if ((s * 8 * static_cast<int64_t>(sizeof(uint16_t))) % 64 == 0) {
        _mm_prefetch(s0.ahead(w0 + 8 * s, kDecodePrefetchBytes), _MM_HINT_T1);
        _mm_prefetch(s1.ahead(w1 + 8 * s, kDecodePrefetchBytes), _MM_HINT_T1);
      }
      const __m256 xv = LoadF16::load(x + 8 * s);
      a0 = _mm256_fmadd_ps(LoadF16::load(w0 + 8 * s), xv, a0);
      a1 = _mm256_fmadd_ps(LoadF16::load(w1 + 8 * s), xv, a1);
    }
    if (n % 8 != 0) {
      const __m256 xv = f16x8(x + 8 * n_full, n % 8);
      a0 = _mm256_fmadd_ps(f16x8(w0 + 8 * n_full, n % 8), xv, a0);
      a1 = _mm256_fmadd_ps(f16x8(w1 + 8 * n_full, n % 8), xv, a1);
    }
    a.y[r] = hsum8(a0);
    a.y[r + 1] = hsum8(a1);
  }
  for (; r < r1; ++r) {
    const uint16_t* w = reinterpret_cast<const uint16_t*>(weight_row(a, r));
    f16_rows<1, 1, F16Prefetch::kNone>(&w, x, 0, n, a.y + r, 0, nullptr);
  }
}

// GEMM order: blocks of rows (kF16GemmBlockWBytes of weights) x tokens
// (kF16GemmBlockXBytes of x), swept by tiles of kF16GemmRows x
// kF16GemmTokens over whole rows: the block's rows and tokens stay in L2
// while its tiles pass.
//
// Tried on AVX2 and slower (docs/benchmarks.md has the earlier tries, under
// "what is left"; again on 2026-11-29, Zen 3, 4096 x 4096, 512 tokens, one thread:
// 33-47 against 56-61 GFLOP/s; FMA peak 100): rows cut into chunks of
// 64-256 inputs, each block of 12-48 rows widened to f32 once per block of
// 12-48 tokens, x from XFormat::F16's f32 copy, chains kept unreduced
// between chunks. Its 3 x 4 tile (7 plain loads per 12 FMAs) reached only
// 70% of the FMA peak even from L1, so it could gain at most about 15%
// over these whole-row tiles, and the widening and chain traffic cost more.
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
    f16_decode_rows(a, x, r0, r1);
    return;
  }
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  // Dense rows take the zmm tiles from two tokens on: they widen a weight
  // once per row pair and token tile, where the small-batch tiles below
  // widen every weight and input per use and were compute-bound at two
  // tokens (see run_f16_zmm's note on speed).
  if (a.rows == nullptr || gemm_order(a)) {
    r0 = run_f16_zmm(a, r0, r1);  // two rows per zmm; an odd last row below
    if (r0 == r1) return;
  }
#endif
  if (!gemm_order(a)) {
    // Small batches: kGemvRows rows x up to kGemvTokens tokens per tile,
    // each weight read from memory once per call. Gathered rows do not
    // follow each other in memory: the next tile's rows are fetched while
    // this one computes; dense rows stream from DRAM.
    for (int64_t r = r0; r < r1; r += kGemvRows) {
      const int rr = static_cast<int>(min64(kGemvRows, r1 - r));
      const uint16_t* w[kGemvRows];
      const uint16_t* next[kGemvRows];
      for (int i = 0; i < rr; ++i) w[i] = row(r + i);
      const bool prefetch_next = a.rows != nullptr && r + 2 * kGemvRows <= r1;
      for (int i = 0; i < kGemvRows && prefetch_next; ++i) next[i] = row(r + kGemvRows + i);
      for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kGemvTokens) {
        const int tt = static_cast<int>(min64(kGemvTokens, a.n_tokens - t0));
        float* y = a.y + t0 * n_out + r;
        if (t0 > 0) {  // the rows are in L1 now
          f16_rows_n<kGemvRows, kGemvTokens, F16Prefetch::kNone>(rr, tt, w, x + t0 * xs, xs, n_in, y, n_out, nullptr);
        } else if (prefetch_next) {
          f16_rows_n<kGemvRows, kGemvTokens, F16Prefetch::kNext>(rr, tt, w, x, xs, n_in, y, n_out, next);
        } else if (a.rows == nullptr) {
          f16_rows_n<kGemvRows, kGemvTokens, F16Prefetch::kStream>(rr, tt, w, x, xs, n_in, y, n_out, nullptr);
        } else {
          f16_rows_n<kGemvRows, kGemvTokens, F16Prefetch::kNone>(rr, tt, w, x, xs, n_in, y, n_out, nullptr);
        }
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
          f16_rows_n<kF16GemmRows, kF16GemmTokens, F16Prefetch::kNone>(rr, tt, w, x + t0 * xs, xs, n_in,
                                                                      a.y + t0 * n_out + rt, n_out, nullptr);
        }
      }
    });
  }
}

}  // namespace
}  // namespace tc::kernels::detail
