// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h):
// activation preparation, the loaders of float weights and the kernels for
// F32 weights (F16: matmul_x86_f16.h, BF16: matmul_x86_bf16.h).
//
// Summation order, fixed by (dtype, n_in) alone so that tile shapes, row
// ranges, thread counts and token batching never change a bit: an output
// is a sum over chunks (256 inputs for F32, 1024 for the quantized types)
// in ascending order. A chunk is summed in 8 f32 lanes by two chains of
// FMAs (of x*w, or of exact int32 block sums times their scale): one over
// its even steps (8 inputs; or one unit: a group of 8 Q8_0 or Q4_0 blocks,
// one exact int32 sum per block in the lanes of kQ4GroupOrder, a Q2_K
// super-block; Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS take a whole chunk as one
// unit, the super-block lane order of matmul_x86_superblock.h), one over its
// odd steps, each ascending. The chains
// are added lane by lane, reduced as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) and
// added to y. Single-row kernels interleave the two chains (memory stays
// sequential); wide tiles run the even pass, then the odd one. (F16 sums
// whole rows instead: matmul_x86_f16.h.)
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_x86_common.h"

namespace tc::kernels::detail {
namespace {

// ---- activations ----

// h[i] = x[i] clamped to f16's finite range and rounded to nearest-even
// f16, xf[i] = h[i] widened (exact). Bit for bit the portable variant's
// f32_to_f16(clamp(x)) for finite x.
TC_SIMD_INLINE __m128i to_f16_saturated(__m256 v) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m256 limit = _mm256_set1_ps(kF16Max);
  return _mm256_cvtps_ph(_mm256_max_ps(_mm256_min_ps(v, limit), _mm256_sub_ps(_mm256_setzero_ps(), limit)), kRound);
}

inline void round_to_f16(const float* x, int64_t n, uint16_t* h, float* xf) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i hv = to_f16_saturated(_mm256_loadu_ps(x + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), hv);
    _mm256_storeu_ps(xf + i, _mm256_cvtph_ps(hv));
  }
  if (i < n) {
    alignas(32) float tail[8] = {};
    alignas(16) uint16_t tail_h[8];
    alignas(32) float tail_f[8];
    std::memcpy(tail, x + i, static_cast<size_t>(n - i) * sizeof(float));
    const __m128i hv = to_f16_saturated(_mm256_load_ps(tail));
    _mm_store_si128(reinterpret_cast<__m128i*>(tail_h), hv);
    _mm256_store_ps(tail_f, _mm256_cvtph_ps(hv));
    std::memcpy(h + i, tail_h, static_cast<size_t>(n - i) * sizeof(uint16_t));
    std::memcpy(xf + i, tail_f, static_cast<size_t>(n - i) * sizeof(float));
  }
}

void quantize_x(const XLayout& xl, const float* x, int64_t t_begin, int64_t t_end, std::byte* xq) {
  const int64_t n = xl.n_in;
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256i pack_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t t = t_begin; t < t_end; ++t) {
    const float* xr = x + t * n;
    std::byte* row = xq + t * xl.stride;
    if (xl.format == XFormat::F32) {
      std::memcpy(row, xr, static_cast<size_t>(n) * sizeof(float));
      continue;
    }
    if (xl.format == XFormat::F16) {
      round_to_f16(xr, n, reinterpret_cast<uint16_t*>(row), reinterpret_cast<float*>(row + xl.f32_offset));
      continue;
    }
    if (xl.format == XFormat::BF16) {
      prepare_bf16_x(xr, n, reinterpret_cast<uint16_t*>(row), reinterpret_cast<float*>(row + xl.f32_offset));
      continue;
    }
    auto* qs = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + xl.d_offset);
    auto* sum32 = reinterpret_cast<int32_t*>(row + xl.sum32_offset);
    auto* sum16 = reinterpret_cast<int16_t*>(row + xl.sum16_offset);
    const int64_t nb = n / xl.block;
    const int64_t n32 = n / 32;
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = xr + b * xl.block;
      __m256 m = _mm256_setzero_ps();
      for (int64_t i = 0; i < xl.block; i += 8)
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign_bit, _mm256_loadu_ps(xb + i)));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
      const float amax = _mm_cvtss_f32(m4);
      const float db = amax < kTinyAmax ? 0.0f : amax / 127.0f;
      const float id = db == 0.0f ? 0.0f : 1.0f / db;
      d[b] = db;
      const __m256 vid = _mm256_set1_ps(id);
      for (int64_t g = b * xl.block / 32; g < (b + 1) * xl.block / 32; ++g) {
        const float* xg = xr + g * 32;
        const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg), vid));
        const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 8), vid));
        const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 16), vid));
        const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 24), vid));
        const int32_t s_lo = hsum_i32(_mm256_add_epi32(i0, i1));
        const int32_t s_hi = hsum_i32(_mm256_add_epi32(i2, i3));
        sum32[g] = s_lo + s_hi;
        if (xl.format == XFormat::Q8_256) {
          sum16[2 * g] = static_cast<int16_t>(s_lo);
          sum16[2 * g + 1] = static_cast<int16_t>(s_hi);
        }
        const __m256i q = _mm256_permutevar8x32_epi32(
            _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3)), pack_order);
        if (xl.format == XFormat::Q8_32_NIB && (g % 2 == 1 || g + 1 < n32)) {
          int8_t* pair = qs + 64 * (g / 2) + 16 * (g % 2);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(pair), _mm256_castsi256_si128(q));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(pair + 32), _mm256_extracti128_si256(q, 1));
        } else {
          _mm256_store_si256(reinterpret_cast<__m256i*>(qs + g * 32), q);
        }
      }
    }
    for (int64_t b = nb; b % 8 != 0; ++b) d[b] = 0.0f;
    for (int64_t g = n32; g % 8 != 0; ++g) sum32[g] = 0;
    if (xl.format == XFormat::Q8_32_NIB) {
      fill_q4_groups(d, sum32, nb, reinterpret_cast<float*>(row + xl.gd_offset),
                     reinterpret_cast<int32_t*>(row + xl.gs8_offset));
    }
  }
}

// ---- float weights ----

struct LoadF32 {
  using Elem = float;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
};
struct LoadF16 {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

// How far ahead single-row kernels prefetch their weights (measured here:
// F16 decode from DRAM went from ~70% to ~85% of the read bandwidth).
constexpr int64_t kStreamPrefetchBytes = 2048;

// How far ahead decode prefetches gathered rows (MatmulArgs::rows) into L2:
// the hardware prefetcher cannot guess the jump to the next gathered row.
// Dense F32 rows are not prefetched by hand at all: one sequential stream
// per thread is what the hardware prefetcher follows best (see
// float_row_chunk). F16 decode reads two rows at once and prefetches both
// (matmul_x86_f16.h).
constexpr int64_t kDecodePrefetchBytes = 4096;

// The first n (< 8) elements, zeros after.
template <class L>
inline __m256 load_partial(const typename L::Elem* p, int64_t n) {
  typename L::Elem tmp[8] = {};
  std::memcpy(tmp, p, static_cast<size_t>(n) * sizeof(tmp[0]));
  return L::load(tmp);
}

// acc[r][t] += w[r][k..k+8) * x[t][k..k+8) (n < 8: the first n only).
template <class L, int R, int T>
TC_SIMD_INLINE void float_step(__m256 (&acc)[R][T], const typename L::Elem* const* w, const float* x, int64_t xs,
                               int64_t k, int64_t n = 8) {
  __m256 wv[R];
  for (int r = 0; r < R; ++r) wv[r] = n == 8 ? L::load(w[r] + k) : load_partial<L>(w[r] + k, n);
  for (int t = 0; t < T; ++t) {
    const __m256 xv = n == 8 ? _mm256_loadu_ps(x + t * xs + k) : load_partial<LoadF32>(x + t * xs + k, n);
    for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
  }
}

// One chunk of n inputs for R rows x T tokens; w[r] and x point at the chunk.
// kInterleave runs the even and odd chains together (few accumulators).
template <class L, int R, int T, bool kInterleave = (R * T <= 4)>
TC_SIMD_INLINE void float_tile(const typename L::Elem* const* w, const float* x, int64_t xs, int64_t n, float* y,
                               int64_t ys, bool first) {
  __m256 a0[R][T], a1[R][T];
  zero(a0);
  zero(a1);
  const int64_t n_full = n / 8;  // full steps; a partial one after them has index n_full
  if constexpr (kInterleave) {
    int64_t s = 0;
    for (; s + 1 < n_full; s += 2) {
      // Few rows stream straight from DRAM here: prefetch each line well
      // ahead, non-temporal so the weights do not evict x from L1.
      if ((s * 8 * static_cast<int64_t>(sizeof(typename L::Elem))) % 64 == 0) {
        for (int r = 0; r < R; ++r) {
          _mm_prefetch(reinterpret_cast<const char*>(w[r] + 8 * s) + kStreamPrefetchBytes, _MM_HINT_NTA);
        }
      }
      float_step<L, R, T>(a0, w, x, xs, 8 * s);
      float_step<L, R, T>(a1, w, x, xs, 8 * s + 8);
    }
    if (s < n_full) float_step<L, R, T>(a0, w, x, xs, 8 * s);
  } else {
    for (int64_t s = 0; s < n_full; s += 2) float_step<L, R, T>(a0, w, x, xs, 8 * s);
    for (int64_t s = 1; s < n_full; s += 2) float_step<L, R, T>(a1, w, x, xs, 8 * s);
  }
  if (n % 8 != 0) float_step<L, R, T>(n_full % 2 == 0 ? a0 : a1, w, x, xs, 8 * n_full, n % 8);
  store_tile<R, T>(a0, a1, y, ys, first);
}

// Decode (one token): one chunk of one row, its two chains interleaved,
// added to y. XL loads x (LoadF32: the f32 copy).
//
// One chunk at a time keeps each thread's reads one sequential stream, which
// the hardware prefetcher follows at full speed; two chains already outrun
// one core's share of DRAM. Measured on the 1B and 7B-layer F16 models, 2
// threads, alternating runs against llama.cpp's decode (medians of 5-8;
// docs/benchmarks-history.md): four chunks at once with software prefetching 4 KiB
// ahead 0.81-0.86x of llama.cpp; one chunk, no prefetching, f32 x
// 0.76-0.96x; the same with f16 x 0.99-1.13x; two or four chunks without
// prefetching 0.4x (several streams within a 4 KiB page defeat the hardware
// prefetcher).
template <class L, class XL, bool kGathered>
TC_SIMD_INLINE void float_row_chunk(const typename L::Elem* w, const typename XL::Elem* x, float* y, bool first,
                                    const RowStream& stream) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  for (int64_t s = 0; s < kChunk / 8; s += 2) {
    if (kGathered && (s * 8 * static_cast<int64_t>(sizeof(typename L::Elem))) % 64 == 0) {
      _mm_prefetch(stream.ahead(w + 8 * s, kDecodePrefetchBytes), _MM_HINT_T1);
    }
    a0 = _mm256_fmadd_ps(L::load(w + 8 * s), XL::load(x + 8 * s), a0);
    a1 = _mm256_fmadd_ps(L::load(w + 8 * s + 8), XL::load(x + 8 * s + 8), a1);
  }
  const float sum = hsum8(_mm256_add_ps(a0, a1));
  *y = first ? sum : *y + sum;
}

// Decode rows [r0, r1) of one token: full chunks with float_row_chunk, a
// partial last chunk with the f32 tile (the same products: xf holds x's
// values exactly).
template <class L, class XL, bool kGathered>
void float_decode_rows(const MatmulArgs& a, const typename XL::Elem* x, const float* xf, int64_t r0, int64_t r1) {
  using Elem = typename L::Elem;
  const int64_t n_in = a.n_in;
  for (int64_t r = r0; r < r1; ++r) {
    const Elem* w = reinterpret_cast<const Elem*>(weight_row(a, r));
    const RowStream stream(a, r);
    int64_t k0 = 0;
    for (; k0 + kChunk <= n_in; k0 += kChunk) {
      float_row_chunk<L, XL, kGathered>(w + k0, x + k0, a.y + r, k0 == 0, stream);
    }
    if (k0 < n_in) {
      const Elem* wp[1] = {w + k0};
      float_tile<L, 1, 1>(wp, xf + k0, 0, n_in - k0, a.y + r, a.n_out, k0 == 0);
    }
  }
}

// float_tile for tt <= T tokens known at run time.
template <class L, int R, int T>
void float_tile_n(int tt, const typename L::Elem* const* w, const float* x, int64_t xs, int64_t n, float* y, int64_t ys,
                  bool first) {
  if constexpr (T > 1) {
    if (tt < T) return float_tile_n<L, R, T - 1>(tt, w, x, xs, n, y, ys, first);
  }
  float_tile<L, R, T>(w, x, xs, n, y, ys, first);
}

template <int T>
void float_tile_rt(int rr, int tt, const float* const* w, const float* x, int64_t xs, int64_t n, float* y, int64_t ys,
                   bool first) {
  switch (rr) {
    case 4:
      return float_tile_n<LoadF32, 4, T>(tt, w, x, xs, n, y, ys, first);
    case 3:
      return float_tile_n<LoadF32, 3, T>(tt, w, x, xs, n, y, ys, first);
    case 2:
      return float_tile_n<LoadF32, 2, T>(tt, w, x, xs, n, y, ys, first);
    default:
      return float_tile_n<LoadF32, 1, T>(tt, w, x, xs, n, y, ys, first);
  }
}

constexpr int kFloatGemmRows = 4;
constexpr int kFloatGemmTokens = 3;

// F32 weights (L = LoadF32; F16 ones take run_f16 in matmul_x86_f16.h).
template <class L>
void run_float(const MatmulArgs& a, int64_t r0, int64_t r1) {
  static_assert(sizeof(typename L::Elem) == sizeof(float));
  using Elem = typename L::Elem;
  const int64_t n_in = a.n_in;
  const int64_t n_out = a.n_out;
  const auto* x = reinterpret_cast<const float*>(a.xq + a.xl.f32_offset);
  const int64_t xs = a.xl.stride / static_cast<int64_t>(sizeof(float));
  auto row = [&](int64_t r) { return reinterpret_cast<const Elem*>(weight_row(a, r)); };
  if (a.n_tokens == 1) {
    a.rows != nullptr ? float_decode_rows<L, LoadF32, true>(a, x, x, r0, r1)
                      : float_decode_rows<L, LoadF32, false>(a, x, x, r0, r1);
    return;
  }
  if (!gemm_order(a)) {
    // Small batches: kGemvRows rows at a time (more independent FMA chains
    // per pass), every token of a chunk while it sits in L1: each weight is
    // read from memory once per call.
    for (int64_t r = r0; r < r1; r += kGemvRows) {
      const int rr = static_cast<int>(min64(kGemvRows, r1 - r));
      for (int64_t k0 = 0; k0 < n_in; k0 += kChunk) {
        const int64_t n = min64(kChunk, n_in - k0);
        const Elem* w[kGemvRows];
        for (int i = 0; i < rr; ++i) w[i] = row(r + i) + k0;
        if (a.rows != nullptr && r + 2 * kGemvRows <= r1) {
          // Gathered rows do not follow each other in memory: fetch the next
          // tile's chunk while this one computes.
          prefetch_rows(a, r + kGemvRows, kGemvRows, k0 * static_cast<int64_t>(sizeof(Elem)),
                        n * static_cast<int64_t>(sizeof(Elem)));
        }
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kGemvTokens) {
          const int tt = static_cast<int>(min64(kGemvTokens, a.n_tokens - t0));
          float* yt = a.y + t0 * n_out + r;
          if (rr == kGemvRows) {
            float_tile_n<L, kGemvRows, kGemvTokens>(tt, w, x + t0 * xs + k0, xs, n, yt, n_out, k0 == 0);
          } else {
            float_tile_n<L, 1, kGemvTokens>(tt, w, x + t0 * xs + k0, xs, n, yt, n_out, k0 == 0);
          }
        }
      }
    }
    return;
  }
  // GEMM order: chunks outer (each output's chunks in ascending order, as
  // every path sums them); within a chunk, blocks of kGemmBlockTokens
  // tokens whose chunk of x is copied into one contiguous panel (128 KiB,
  // in L2), swept by tiles of rows x tokens. The panel rather than x in
  // place: 1.3x on the 1B model's pp512 when F16 weights took this path
  // (Zen 3, 2 threads, 3 alternating runs), where the tokens' chunks lie
  // 12 KiB apart, a page each.
  alignas(64) float panel[kGemmBlockTokens * kChunk];
  for (int64_t k0 = 0; k0 < n_in; k0 += kChunk) {
    const int64_t n = min64(kChunk, n_in - k0);
    for_each_token_block(a.n_tokens, kGemmBlockTokens, [&](TokenRange tokens) {
      const int64_t tb = tokens.begin, nt = tokens.end - tokens.begin;
      for (int64_t t = 0; t < nt; ++t) {
        std::memcpy(panel + t * kChunk, x + (tb + t) * xs + k0, static_cast<size_t>(n) * sizeof(float));
      }
      for (int64_t rt = r0; rt < r1; rt += kFloatGemmRows) {
        const int rr = static_cast<int>(min64(kFloatGemmRows, r1 - rt));
        if (rt + 2 * kFloatGemmRows <= r1) {
          prefetch_rows(a, rt + kFloatGemmRows, kFloatGemmRows, k0 * static_cast<int64_t>(sizeof(Elem)),
                        n * static_cast<int64_t>(sizeof(Elem)));
        }
        const float* w[kFloatGemmRows];
        for (int i = 0; i < rr; ++i) w[i] = row(rt + i) + k0;
        for (int64_t t0 = 0; t0 < nt; t0 += kFloatGemmTokens) {
          const int tt = static_cast<int>(min64(kFloatGemmTokens, nt - t0));
          float_tile_rt<kFloatGemmTokens>(rr, tt, w, panel + t0 * kChunk, kChunk, n, a.y + (tb + t0) * n_out + rt,
                                          n_out, k0 == 0);
        }
      }
    });
  }
}

}  // namespace
}  // namespace tc::kernels::detail
