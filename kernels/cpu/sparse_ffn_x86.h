// Internal to the x86 SIMD axpy variants (sparse_ffn_avx2.cpp and
// sparse_ffn_avx512.cpp, each compiled with its own -m flags, hence the
// anonymous namespace): 64-column tiles of the gathered rows are
// dequantized to their exact f32 values (as dequantize_row gives them) and
// added, scaled by each neuron's activation, into y by FMA.
//
// Summation order: y[t, j] starts at +0; then for each k ascending with
// a[t, k] != 0: y[t, j] = fma(a[t, k], W[rows[k], j], y[t, j]). The same
// for any column range, row grouping and token batch, so the thread count
// never changes a bit and a token's outputs do not depend on its batch.
// Rows are taken in groups, one pass over a tile of y per group (y is
// loaded and stored once per group, not once per row), and the rows of the
// next group are prefetched tile by tile: gathered rows do not follow each
// other in memory, so the hardware prefetcher cannot find them.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "sparse_ffn_x86.h needs -mavx2 -mfma -mf16c"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/sparse_ffn_kernels.h"

#define TC_AXPY_INLINE inline __attribute__((always_inline))

namespace tc::kernels::detail {
namespace {

constexpr int64_t kTile = 64;      // columns per tile: 8 vectors of 8
constexpr int kGroupRowsOne = 4;   // rows per pass over y with one token (8 accumulators live)
constexpr int kGroupRowsMany = 8;  // rows per pass with several tokens (dequantized once, used by each)
constexpr int kMaxGroupRows = 8;
constexpr int kTokenBlock = 8;  // tokens per pass over the rows; more tokens take another pass

// ---- dequantizers: exact f32 values of 32 columns of a row ----
// half(row, c, h, w): columns [c + 32h, c + 32h + 32) into w[0..3], c a
// multiple of 64 and h 0 or 1 (a tile is two halves, so that a half's FMAs
// run before the next half is unpacked: 8 accumulators, 4 weight vectors
// and the constants fit the 16 AVX2 registers). byte_of(c) is where column
// c's data starts (its block's start for the block formats; approximate
// inside k-quant blocks, which only prefetching uses).

struct DeqF32 {
  static constexpr int64_t kBlock = 1;
  static constexpr int64_t byte_of(int64_t c) { return c * 4; }
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const float* p = reinterpret_cast<const float*>(row) + c + 32 * h;
    for (int v = 0; v < 4; ++v) w[v] = _mm256_loadu_ps(p + 8 * v);
  }
};

struct DeqF16 {
  static constexpr int64_t kBlock = 1;
  static constexpr int64_t byte_of(int64_t c) { return c * 2; }
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const auto* p = reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + c + 32 * h);
    for (int v = 0; v < 4; ++v) w[v] = _mm256_cvtph_ps(_mm_loadu_si128(p + v));
  }
};

struct DeqBF16 {
  static constexpr int64_t kBlock = 1;
  static constexpr int64_t byte_of(int64_t c) { return c * 2; }
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const auto* p = reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + c + 32 * h);
    for (int v = 0; v < 4; ++v) {
      w[v] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(p + v)), 16));
    }
  }
};

// Bytes 0-3 (lanes 0-3) and 4-7 (lanes 4-7) of each 128-bit half of a
// vector, one per 32-bit lane: zero-extended (kSigned false: byte at the
// bottom of the lane) or at the top of the lane (kSigned true: the lane is
// byte * 2^24, a sign-preserving int32). With `first` 8: bytes 8-15. A
// shuffle within 128-bit lanes, cheaper than vpmovzxbd plus the unpacks
// that feed it.
template <bool kSigned>
TC_AXPY_INLINE __m256i spread_bytes(int first) {
  const char z = -1;  // pshufb: zero this byte
  const auto b = [first](int i) { return static_cast<char>(first + i); };
  if constexpr (kSigned) {
    return _mm256_setr_epi8(z, z, z, b(0), z, z, z, b(1), z, z, z, b(2), z, z, z, b(3),  //
                            z, z, z, b(4), z, z, z, b(5), z, z, z, b(6), z, z, z, b(7));
  } else {
    return _mm256_setr_epi8(b(0), z, z, z, b(1), z, z, z, b(2), z, z, z, b(3), z, z, z,  //
                            b(4), z, z, z, b(5), z, z, z, b(6), z, z, z, b(7), z, z, z);
  }
}

// The 16 bytes at p in both 128-bit halves.
TC_AXPY_INLINE __m256i broadcast16(const void* p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}

struct DeqQ8_0 {
  static constexpr int64_t kBlock = 32;
  static constexpr int64_t byte_of(int64_t c) { return c / 32 * static_cast<int64_t>(sizeof(BlockQ8_0)); }
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(row)[c / 32 + h];
    const __m256i spread_lo = spread_bytes<true>(0), spread_hi = spread_bytes<true>(8);
    // The lanes hold q * 2^24; (q * 2^24) * (d * 2^-24) = q * d exactly
    // (8 x 11 significant bits; d * 2^-24 is exact, f16 scales being >= 2^-24).
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d) * 0x1p-24f);
    const __m256i q0 = broadcast16(blk.qs), q1 = broadcast16(blk.qs + 16);
    w[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(q0, spread_lo)), d);
    w[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(q0, spread_hi)), d);
    w[2] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(q1, spread_lo)), d);
    w[3] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(q1, spread_hi)), d);
  }
};

struct DeqQ4_0 {
  static constexpr int64_t kBlock = 32;
  static constexpr int64_t byte_of(int64_t c) { return c / 32 * static_cast<int64_t>(sizeof(BlockQ4_0)); }
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(row)[c / 32 + h];
    const __m256i m4 = _mm256_set1_epi32(0x0f);
    const __m256 vd = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(blk.d)));
    const __m256 minus_8d = _mm256_mul_ps(vd, _mm256_set1_ps(-8.0f));
    // Byte i holds element i (low nibble) and element 16 + i (high).
    const __m256i v = broadcast16(blk.qs);
    const __m256i b0 = _mm256_shuffle_epi8(v, spread_bytes<false>(0));  // bytes 0-7, one per lane
    const __m256i b1 = _mm256_shuffle_epi8(v, spread_bytes<false>(8));  // bytes 8-15
    // (q - 8) * d = q * d - 8d exactly (at most 15 significant bits), so
    // one FMA gives dequantize_row's value.
    w[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b0, m4)), vd, minus_8d);
    w[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b1, m4)), vd, minus_8d);
    w[2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b0, 4)), vd, minus_8d);
    w[3] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b1, 4)), vd, minus_8d);
  }
};

// 32 bytes of q (16 at p, in both 128-bit halves), nibble `shift` (0 or 4)
// of each, as four f32 vectors in order.
TC_AXPY_INLINE void nibbles_to_f32(const uint8_t* p, int shift, __m256* w) {
  const __m256i m4 = _mm256_set1_epi32(0x0f);
  const __m128i count = _mm_cvtsi32_si128(shift);
  const __m256i lo = broadcast16(p), hi = broadcast16(p + 16);
  const __m256i spread_lo = spread_bytes<false>(0), spread_hi = spread_bytes<false>(8);
  w[0] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(_mm256_shuffle_epi8(lo, spread_lo), count), m4));
  w[1] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(_mm256_shuffle_epi8(lo, spread_hi), count), m4));
  w[2] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(_mm256_shuffle_epi8(hi, spread_lo), count), m4));
  w[3] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(_mm256_shuffle_epi8(hi, spread_hi), count), m4));
}

struct DeqQ4_K {
  static constexpr int64_t kBlock = kQK_K;
  static constexpr int64_t byte_of(int64_t c) { return c * static_cast<int64_t>(sizeof(BlockQ4_K)) / kQK_K; }
  // Tile c is the block's 64-element chunk j: half h is sub-block 2j + h,
  // nibble h of qs[32j..32j+31]; x = (d * sc) * q - dmin * m.
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ4_K& blk = reinterpret_cast<const BlockQ4_K*>(row)[c / kQK_K];
    const int j = static_cast<int>(c % kQK_K) / 64;
    int sc, m;
    q4_K_scale_min(blk.scales, 2 * j + h, sc, m);
    nibbles_to_f32(blk.qs + 32 * j, 4 * h, w);
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(blk.d) * static_cast<float>(sc));
    const __m256 min = _mm256_set1_ps(_cvtsh_ss(blk.dmin) * static_cast<float>(m));
    // Two roundings, as dequantize_row (this file is built with -ffp-contract=off).
    for (int v = 0; v < 4; ++v) w[v] = _mm256_sub_ps(_mm256_mul_ps(scale, w[v]), min);
  }
};

struct DeqQ6_K {
  static constexpr int64_t kBlock = kQK_K;
  static constexpr int64_t byte_of(int64_t c) { return c * static_cast<int64_t>(sizeof(BlockQ6_K)) / kQK_K; }
  // Tile c is quarter u of half hb of the block. Element 64u + 32h + l
  // (l < 32) of that half: nibble u of ql[64hb + 32h + l] and bits 4u + 2h
  // of qh[32hb + l]; x = (d * scale) * (q - 32), one scale per 16 elements.
  static TC_AXPY_INLINE void half(const std::byte* row, int64_t c, int h, __m256* w) {
    const BlockQ6_K& blk = reinterpret_cast<const BlockQ6_K*>(row)[c / kQK_K];
    const int e = static_cast<int>(c % kQK_K);
    const int hb = e / 128, u = (e % 128) / 64;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03), k32 = _mm256_set1_epi8(32);
    const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.ql + 64 * hb + 32 * h));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * hb));
    const __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(4 * u + 2 * h)), m2);
    const __m256i low = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(4 * u)), m4);
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), k32);
    const __m128i q_lo = _mm256_castsi256_si128(q), q_hi = _mm256_extracti128_si256(q, 1);
    w[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q_lo));
    w[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q_lo, q_lo)));
    w[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q_hi));
    w[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q_hi, q_hi)));
    const float d = _cvtsh_ss(blk.d);
    const int8_t* sc = blk.scales + 8 * hb + 4 * u + 2 * h;  // vector v's scale: sc[v / 2]
    const __m256 d0 = _mm256_set1_ps(d * static_cast<float>(sc[0]));
    const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(sc[1]));
    w[0] = _mm256_mul_ps(d0, w[0]);
    w[1] = _mm256_mul_ps(d0, w[1]);
    w[2] = _mm256_mul_ps(d1, w[2]);
    w[3] = _mm256_mul_ps(d1, w[3]);
  }
};

}  // namespace
}  // namespace tc::kernels::detail

// The other block formats' dequantizers, which use the helpers above.
#include "kernels/cpu/sparse_ffn_x86_quants.h"

namespace tc::kernels::detail {
namespace {

// ---- groups of active rows ----

struct Group {
  int n = 0;                                 // rows in the group
  const std::byte* row[kMaxGroupRows];       // their weight rows
  float a[kTokenBlock][kMaxGroupRows];       // activation of group row i for token t
  int n_live[kTokenBlock];                   // per token: how many group rows are nonzero,
  uint8_t live[kTokenBlock][kMaxGroupRows];  // and which, ascending
};

// Collects into g the next rows from k = pos on (at most max_rows) that are
// nonzero for some token of [t0, t0 + tt); advances pos past them.
TC_AXPY_INLINE void next_group(const AxpyArgs& args, int64_t t0, int tt, int max_rows, int64_t& pos, Group& g) {
  g.n = 0;
  for (int t = 0; t < tt; ++t) g.n_live[t] = 0;
  for (; pos < args.n_rows && g.n < max_rows; ++pos) {
    bool active = false;
    for (int t = 0; t < tt; ++t) {
      const float ak = args.a[(t0 + t) * args.n_rows + pos];
      g.a[t][g.n] = ak;
      if (ak != 0.0f) {
        g.live[t][g.n_live[t]++] = static_cast<uint8_t>(g.n);
        active = true;
      }
    }
    if (active) g.row[g.n++] = args.w + static_cast<int64_t>(args.rows[pos]) * args.row_bytes;
  }
}

// Prefetches tile c of a row into L2: one line per 64 bytes from its start.
// Where a tile is shorter than a line, the next tiles start in the lines
// after it, so every line of the row's range is still asked for.
template <class D>
TC_AXPY_INLINE void prefetch_tile(const std::byte* row, int64_t c) {
  constexpr int64_t kTileBytes = D::byte_of(kTile);
  const char* p = reinterpret_cast<const char*>(row + D::byte_of(c));
  for (int64_t b = 0; b < kTileBytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T1);
}

// ---- one tile (64 columns) of y for one group ----

// The rows of a one-token group (at most kGroupRowsOne) and the rows to
// prefetch with them: the next group's, or, where it has fewer, this
// group's own (already in the caches, so the prefetch costs one load slot).
struct OneTokenRows {
  int n = 0;
  const std::byte* row[kGroupRowsOne];
  const std::byte* ahead[kGroupRowsOne];
  float a[kGroupRowsOne];
};

TC_AXPY_INLINE OneTokenRows one_token_rows(const Group& g, const Group& next) {
  OneTokenRows f;
  f.n = g.n;
  for (int i = 0; i < g.n; ++i) {
    f.row[i] = g.row[i];
    f.ahead[i] = i < next.n ? next.row[i] : g.row[i];
    f.a[i] = g.a[0][i];
  }
  return f;
}

// One token: y[c..c+64) (y points at column c) += the rows. kRows > 0: the
// row count, rows.n == kRows, known when compiling; 0: rows.n at run time.
// A full group takes kRows = kGroupRowsOne: unrolled, the tile runs about
// twice as fast (Q4_0 rows from L2, Zen 3: 6 -> 12 G elements/s), as the
// loop over a run-time count kept the core from overlapping one row's
// dequantization with the previous row's FMAs. Same operations, same order.
template <class D, int kRows>
TC_AXPY_INLINE void tile_one_token(const OneTokenRows& f, int64_t c, float* y) {
  const int n = kRows > 0 ? kRows : f.n;
  __m256 acc[8];
  for (int v = 0; v < 8; ++v) acc[v] = _mm256_loadu_ps(y + 8 * v);
#pragma GCC unroll 4
  for (int i = 0; i < n; ++i) {
    prefetch_tile<D>(f.ahead[i], c);
    const __m256 ak = _mm256_set1_ps(f.a[i]);
    for (int h = 0; h < 2; ++h) {
      __m256 w[4];
      D::half(f.row[i], c, h, w);
      for (int v = 0; v < 4; ++v) acc[4 * h + v] = _mm256_fmadd_ps(ak, w[v], acc[4 * h + v]);
    }
  }
  for (int v = 0; v < 8; ++v) _mm256_storeu_ps(y + 8 * v, acc[v]);
}

// tt tokens (y points at column c of the first, rows ys apart): each row's
// tile is dequantized once, then every token adds its nonzero rows.
template <class D>
TC_AXPY_INLINE void tile_tokens(const Group& g, const Group& next, int64_t c, int tt, float* y, int64_t ys) {
  __m256 w[kMaxGroupRows][8];
  for (int i = 0; i < g.n; ++i) {
    D::half(g.row[i], c, 0, w[i]);
    D::half(g.row[i], c, 1, w[i] + 4);
    if (i < next.n) prefetch_tile<D>(next.row[i], c);
  }
  for (int t = 0; t < tt; ++t) {
    float* yt = y + t * ys;
    __m256 acc[8];
    for (int v = 0; v < 8; ++v) acc[v] = _mm256_loadu_ps(yt + 8 * v);
    for (int e = 0; e < g.n_live[t]; ++e) {
      const int i = g.live[t][e];
      const __m256 ak = _mm256_set1_ps(g.a[t][i]);
      for (int v = 0; v < 8; ++v) acc[v] = _mm256_fmadd_ps(ak, w[i][v], acc[v]);
    }
    for (int v = 0; v < 8; ++v) _mm256_storeu_ps(yt + 8 * v, acc[v]);
  }
}

// A last tile of n < 64 columns (float types, or one block of Q8_0/Q4_0):
// the rows' bytes and y are copied into 64-column scratch padded with
// zeros, run as a full tile, and the n columns copied back.
template <class D>
void tail_tile(const AxpyArgs& args, const Group& g, int64_t c, int64_t n, int64_t t0, int tt) {
  alignas(32) std::byte rows[kMaxGroupRows][kTile * 4];
  alignas(32) float ys[kTokenBlock][kTile];
  Group padded = g;
  const int64_t offset = D::byte_of(c), n_bytes = D::byte_of(c + n) - offset;
  for (int i = 0; i < g.n; ++i) {
    std::memset(rows[i], 0, sizeof rows[i]);
    std::memcpy(rows[i], g.row[i] + offset, static_cast<size_t>(n_bytes));
    padded.row[i] = rows[i];
  }
  for (int t = 0; t < tt; ++t) {
    std::memset(ys[t], 0, sizeof ys[t]);
    std::memcpy(ys[t], args.y + (t0 + t) * args.n_out + c, static_cast<size_t>(n) * sizeof(float));
  }
  Group none;
  if (tt == 1) {
    tile_one_token<D, 0>(one_token_rows(padded, none), 0, ys[0]);
  } else {
    tile_tokens<D>(padded, none, 0, tt, ys[0], kTile);
  }
  for (int t = 0; t < tt; ++t) {
    std::memcpy(args.y + (t0 + t) * args.n_out + c, ys[t], static_cast<size_t>(n) * sizeof(float));
  }
}

// Wider one-token tiles an ISA may add (sparse_ffn_x86_512.h): Wide<D>::run(g,
// next, c, j1, y) adds the one-token group g into columns [c, c') of y (y
// at column 0) for whole tiles of its width from c up to j1, with the same
// operations per column as tile_one_token (so the same bits), and returns
// c'; the 64-column tiles take what is left. This default adds none.
template <class D>
struct NoWideTiles {
  static int64_t run(const Group&, const Group&, int64_t c, int64_t, float*) { return c; }
};

template <class D, template <class> class Wide>
void axpy_columns(const AxpyArgs& args, int64_t j0, int64_t j1) {
  for (int64_t t = 0; t < args.n_tokens; ++t) {
    std::memset(args.y + t * args.n_out + j0, 0, static_cast<size_t>(j1 - j0) * sizeof(float));
  }
  for (int64_t t0 = 0; t0 < args.n_tokens; t0 += kTokenBlock) {
    const int tt = static_cast<int>(args.n_tokens - t0 < kTokenBlock ? args.n_tokens - t0 : kTokenBlock);
    const int group_rows = tt == 1 ? kGroupRowsOne : kGroupRowsMany;
    float* y = args.y + t0 * args.n_out;
    Group groups[2];
    int cur = 0;
    int64_t pos = 0;
    next_group(args, t0, tt, group_rows, pos, groups[cur]);
    while (groups[cur].n > 0) {
      next_group(args, t0, tt, group_rows, pos, groups[cur ^ 1]);
      const Group& g = groups[cur];
      const Group& next = groups[cur ^ 1];
      int64_t c = j0;
      if (tt == 1) {
        c = Wide<D>::run(g, next, c, j1, y);
        const OneTokenRows f = one_token_rows(g, next);
        if (f.n == kGroupRowsOne) {
          for (; c + kTile <= j1; c += kTile) tile_one_token<D, kGroupRowsOne>(f, c, y + c);
        } else {
          for (; c + kTile <= j1; c += kTile) tile_one_token<D, 0>(f, c, y + c);
        }
      } else {
        for (; c + kTile <= j1; c += kTile) tile_tokens<D>(g, next, c, tt, y + c, args.n_out);
      }
      if constexpr (D::kBlock <= 32) {
        if (c < j1) tail_tile<D>(args, g, c, j1 - c, t0, tt);
      }
      cur ^= 1;
    }
  }
}

template <template <class> class Wide = NoWideTiles>
void compute_columns_x86(const AxpyArgs& args, int64_t j0, int64_t j1) {
  switch (args.dtype) {
    case DType::F32:
      return axpy_columns<DeqF32, Wide>(args, j0, j1);
    case DType::F16:
      return axpy_columns<DeqF16, Wide>(args, j0, j1);
    case DType::BF16:
      return axpy_columns<DeqBF16, Wide>(args, j0, j1);
    case DType::Q8_0:
      return axpy_columns<DeqQ8_0, Wide>(args, j0, j1);
    case DType::Q4_0:
      return axpy_columns<DeqQ4_0, Wide>(args, j0, j1);
    case DType::Q4_1:
      return axpy_columns<DeqQ4_1, Wide>(args, j0, j1);
    case DType::Q5_0:
      return axpy_columns<DeqQ5_0, Wide>(args, j0, j1);
    case DType::Q5_1:
      return axpy_columns<DeqQ5_1, Wide>(args, j0, j1);
    case DType::IQ4_NL:
      return axpy_columns<DeqIQ4_NL, Wide>(args, j0, j1);
    case DType::MXFP4:
      return axpy_columns<DeqMXFP4, Wide>(args, j0, j1);
    case DType::Q2_K:
      return axpy_columns<DeqQ2_K, Wide>(args, j0, j1);
    case DType::Q3_K:
      return axpy_columns<DeqQ3_K, Wide>(args, j0, j1);
    case DType::Q4_K:
      return axpy_columns<DeqQ4_K, Wide>(args, j0, j1);
    case DType::Q5_K:
      return axpy_columns<DeqQ5_K, Wide>(args, j0, j1);
    case DType::Q6_K:
      return axpy_columns<DeqQ6_K, Wide>(args, j0, j1);
    case DType::IQ4_XS:
      return axpy_columns<DeqIQ4_XS, Wide>(args, j0, j1);
    default:
      return;
  }
}

}  // namespace
}  // namespace tc::kernels::detail
