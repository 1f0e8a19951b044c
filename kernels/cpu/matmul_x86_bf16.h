// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// kernels for BF16 weights, against x rounded to bf16 (XFormat::BF16).
//
// Summation order, the same in every x86 variant and fixed by n_in alone:
// an output is a sum over chunks of kBf16Chunk (512) inputs in ascending order.
// A chunk runs in steps of kBf16Step (32) inputs, the last one zero-padded,
// over 16 f32 lanes and two chains: one over the chunk's even steps, one
// over its odd steps, each ascending from +0. Step s adds to lane l what
// vdpbf16ps adds (checked on Zen 5: bit for bit),
//   lane = fma(w[32s + 2l + 1], x[32s + 2l + 1], lane);
//   lane = fma(w[32s + 2l], x[32s + 2l], lane);
// every product exact (bf16 x bf16 fits f32), bf16 subnormals read as zero
// and subnormal results flushed to zero: vdpbf16ps's DAZ and FTZ, which
// every variant sets in MXCSR while its BF16 kernel runs (Bf16FloatMode),
// so the FMA variants and the reductions behave alike. The two chains are
// added lane by lane, lanes 8-15 onto lanes 0-7, and the 8 lanes reduced as
// ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) and added to y.
//
// One step, three ways, the same bits (Bf16Lanes): vdpbf16ps on zmm
// (TC_MATMUL_BF16: the avx512bf16 variant), the two FMAs on zmm (avx512)
// and on two ymm halves, lanes 0-7 and 8-15 (avx2). vdpbf16ps does a step
// in one instruction where the FMA variants split each 32-bit weight pair
// into its odd (high) and even (low) halves and multiply them by x's odd
// and even values: avx512 loads them from x's f32 copy (XLayout's xs),
// avx2 splits x's bf16 pairs (hb) the same way (half the bytes from L2).
// AVX2's GEMM splits a block of rows' chunk once per block of tokens into
// an f32 panel (Bf16Panel) that its 5-row x 2-token tiles then load.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/matmul_x86_common.h"

namespace tc::kernels::detail {
namespace {

// Inputs per chunk of the summation order (see the top of the file).
constexpr int64_t kBf16Chunk = 512;

// How far ahead decode prefetches its rows, dense or gathered
// (MatmulArgs::rows), as the F16 decode does (kDecodePrefetchBytes). Dense
// rows too: on the 2-core Xeon (AVX-512 BF16, AMX) the hardware
// prefetcher left alone read a 1B BF16 model's decode at 86% of the read
// probe, where F16's prefetched rows read at 136%.
constexpr int64_t kBf16DecodePrefetchBytes = 4096;

// A bf16 pair's odd element is its high half: as f32 it is the pair with
// the low 16 bits cleared; the even element is the pair shifted up by 16.
constexpr int kBf16OddMask = static_cast<int>(0xffff0000u);

#if defined(TC_MATMUL_BF16) || defined(__AVX512F__)
// The low (kHalf 0) or high (1) 8 lanes of a zmm. (The masked extract:
// GCC 12 warns on the undefined operand of the plain one and of the cast.)
template <int kHalf>
TC_SIMD_INLINE __m256 half8(__m512 v) {
  return _mm256_castpd_ps(_mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), 0xff, _mm512_castps_pd(v), kHalf));
}
#endif

#if defined(__AVX512F__)
// A step's 64 bytes of weights as two 32-byte loads: GGUF aligns tensors to
// 32 bytes only (general.alignment), so one 64-byte load would straddle two
// cache lines on every step of a mapped model's rows. Measured on the
// 7B-layer BF16 model, 2 threads, tg64, old and new binaries alternating:
// 15.8/16.7/13.5 t/s with one load per step, 20.0/19.6/14.7 with halves.
inline __m512i load_halves(const uint16_t* w) {
  // (The masked forms: GCC 12's plain inserti64x4 and casts pass an
  // undefined vector through, which -Wmaybe-uninitialized reports.)
  const __m512i zero = _mm512_setzero_si512();
  const __m512i lo =
      _mm512_mask_inserti64x4(zero, 0xff, zero, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)), 0);
  return _mm512_mask_inserti64x4(lo, 0xff, lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16)), 1);
}
#endif

// One step's lanes as the kernels see them: kGroups vectors of f32 lanes
// (zmm: one group of 16; ymm: lanes 0-7, then 8-15), a step of a weight row
// loaded per group (W), and step() adding it, times x, to one group's lanes.
#if defined(TC_MATMUL_BF16)
struct Bf16Lanes {
  using Acc = __m512;
  using W = __m512i;  // the step's 32 bf16 weights
  static constexpr int kGroups = 1;
  static constexpr int kAccBudget = 24;  // registers a tile may spend on accumulators
  static constexpr int kGemvRows = 2;
  // GEMM tiles, measured on Zen 5 (2 threads, 4096 x 4096 and 11008 x 4096,
  // 512 tokens): 4 x 4 about 410 GFLOP/s, 6 x 4 and 8 x 3 390-430.
  static constexpr int kGemmRows = 4;
  static constexpr int kGemmTokens = 4;
  static Acc zero() { return _mm512_setzero_ps(); }
  static W load(const uint16_t* w, int) { return load_halves(w); }
  static W load_partial(const uint16_t* w, int64_t n, int) {
    return _mm512_maskz_loadu_epi16(static_cast<__mmask32>((uint64_t{1} << n) - 1), w);
  }
  using X = __m512i;  // the step's 32 bf16 inputs
  static X load_x(const uint16_t* xh, const float*, int) { return _mm512_load_si512(xh); }
  static Acc step(Acc acc, const W& w, const X& x) {
    return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)x);  // NOLINT: vector casts
  }
  // The two chains' group sums -> the 8 lanes hsum8 reduces.
  static __m256 fold(const Acc (&a0)[2], const Acc (&a1)[2]) {  // [group]
    const __m512 c = _mm512_add_ps(a0[0], a1[0]);
    return _mm256_add_ps(half8<0>(c), half8<1>(c));
  }
};
#elif defined(__AVX512F__)
struct Bf16Lanes {
  using Acc = __m512;
  struct W {
    __m512 odd, even;
  };
  static constexpr int kGroups = 1;
  static constexpr int kAccBudget = 20;
  static constexpr int kGemvRows = 2;
  // 4 x 3 about 200 GFLOP/s; 4 x 4 185-195, 3 x 6 135-150.
  static constexpr int kGemmRows = 4;
  static constexpr int kGemmTokens = 3;
  static Acc zero() { return _mm512_setzero_ps(); }
  static W split(__m512i v) {
    return {_mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(kBf16OddMask))),
            _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, v, 16))};  // (maskz: see half8)
  }
  static W load(const uint16_t* w, int) { return split(load_halves(w)); }
  static W load_partial(const uint16_t* w, int64_t n, int) {
    return split(_mm512_maskz_loadu_epi16(static_cast<__mmask32>((uint64_t{1} << n) - 1), w));
  }
  using X = W;  // the step's inputs as f32, odd and even (xs)
  static X load_x(const uint16_t*, const float* xs, int) { return {_mm512_load_ps(xs), _mm512_load_ps(xs + 16)}; }
  static Acc step(Acc acc, const W& w, const X& x) {
    acc = _mm512_fmadd_ps(w.odd, x.odd, acc);
    return _mm512_fmadd_ps(w.even, x.even, acc);
  }
  static __m256 fold(const Acc (&a0)[2], const Acc (&a1)[2]) {  // [group]
    const __m512 c = _mm512_add_ps(a0[0], a1[0]);
    return _mm256_add_ps(half8<0>(c), half8<1>(c));
  }
};
#else
struct Bf16Lanes {
  using Acc = __m256;
  struct W {
    __m256 odd, even;
  };
  static constexpr int kGroups = 2;  // group g: lanes 8g..8g+7, weights 16g..16g+15 of the step
  static constexpr int kAccBudget = 12;
  static constexpr int kGemvRows = 2;
  static Acc zero() { return _mm256_setzero_ps(); }
  static W split(__m256i v) {
    return {_mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(kBf16OddMask))),
            _mm256_castsi256_ps(_mm256_slli_epi32(v, 16))};
  }
  static W load(const uint16_t* w, int g) { return split(loadu32(w + 16 * g)); }
  static W load_partial(const uint16_t* w, int64_t n, int g) {
    alignas(32) uint16_t tmp[kBf16Step] = {};
    std::memcpy(tmp, w, static_cast<size_t>(n) * sizeof(uint16_t));
    return load(tmp, g);
  }
  // The GEMM's pre-split weights (Bf16Panel): per step, per group, the
  // odd lanes then the even ones, as load() gives them.
  static void store_panel(const W& w, float* p) {
    _mm256_store_ps(p, w.odd);
    _mm256_store_ps(p + 8, w.even);
  }
  // Group g's inputs as f32, odd and even: split from the bf16 pairs (hb)
  // as the weights are, which reads half the bytes of xs's f32 copies (the
  // GEMM reads x from L2; 4 x 2 tiles, 1B BF16 prefill about 1.1x).
  using X = W;
  static X load_x(const uint16_t* xh, const float*, int g) { return split(load32(xh + 16 * g)); }
  static Acc step(Acc acc, const W& w, const X& x) {
    acc = _mm256_fmadd_ps(w.odd, x.odd, acc);
    return _mm256_fmadd_ps(w.even, x.even, acc);
  }
  static __m256 fold(const Acc (&a0)[2], const Acc (&a1)[2]) {  // [group]
    return _mm256_add_ps(_mm256_add_ps(a0[0], a1[0]), _mm256_add_ps(a0[1], a1[1]));
  }
};
#endif

// MXCSR's DAZ and FTZ (vdpbf16ps's rules, see the top of the file) for the
// lifetime of the object, on the calling thread.
class Bf16FloatMode {
 public:
  Bf16FloatMode() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kDaz | kFtz); }
  ~Bf16FloatMode() { _mm_setcsr(saved_); }
  Bf16FloatMode(const Bf16FloatMode&) = delete;
  Bf16FloatMode& operator=(const Bf16FloatMode&) = delete;

 private:
  static constexpr unsigned kDaz = 0x0040, kFtz = 0x8000;
  unsigned saved_;
};

// One token's prepared activations at input k (a multiple of kBf16Step).
struct Bf16X {
  const uint16_t* hb;
  const float* xs;
};

Bf16X bf16_x(const MatmulArgs& a, int64_t t, int64_t k) {
  const std::byte* row = a.xq + t * a.xl.stride;
  return {reinterpret_cast<const uint16_t*>(row) + k, reinterpret_cast<const float*>(row + a.xl.f32_offset) + k};
}

// Writes or adds (first: the row's first chunk) the R x T folded sums: the
// same hsum8 tree as store_tile.
template <int R, int T>
TC_SIMD_INLINE void store_folded(const __m256 (&v)[R][T], float* y, int64_t ys, bool first) {
  for (int t = 0; t < T; ++t) {
    float* yt = y + t * ys;
    int r = 0;
    for (; r + 4 <= R; r += 4) {
      const __m128 s = hsum8x4(v[r][t], v[r + 1][t], v[r + 2][t], v[r + 3][t]);
      _mm_storeu_ps(yt + r, first ? s : _mm_add_ps(_mm_loadu_ps(yt + r), s));
    }
    for (; r < R; ++r) {
      const float s = hsum8(v[r][t]);
      yt[r] = first ? s : yt[r] + s;
    }
  }
}

// One chunk of n (<= kBf16Chunk) inputs for R rows x T tokens: w[r] and
// x[t] point at the chunk's first input. kInterleave runs every chain and
// lane group together (few accumulators); otherwise one pass per (lane
// group, chain): the even steps of group 0, its odd steps, then group 1's.
// kPrefetch: prefetch the row's stream (R = 1: decode's rows).
template <int R, int T, bool kInterleave, bool kPrefetch = false>
TC_SIMD_INLINE void bf16_tile(const uint16_t* const* w, const Bf16X* x, int64_t n, float* y, int64_t ys, bool first,
                              const RowStream* stream = nullptr) {
  using L = Bf16Lanes;
  using Acc = typename L::Acc;
  // Chains (even, odd steps) of lane groups 0 and 1 (group 1: ymm only),
  // each its own array so that GCC keeps them in registers.
  Acc e0[R][T], o0[R][T], e1[R][T], o1[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) e0[r][t] = o0[r][t] = e1[r][t] = o1[r][t] = L::zero();
  }
  const int64_t n_full = n / kBf16Step;  // full steps; a partial last one has index n_full
  // Step s of lane group g into a, its chain's accumulators of that group.
  // (The partial step is a separate instantiation: a branch inside the loop
  // made GCC keep every accumulator in memory too.)
  auto step = [&]<bool kPartial>(Acc(&a)[R][T], int64_t s, int g) __attribute__((always_inline)) {
    const int64_t k = kBf16Step * s;
    if constexpr (kPrefetch) {
      // A step is one cache line of bf16 weights.
      if (g == 0) _mm_prefetch(stream->ahead(w[0] + k, kBf16DecodePrefetchBytes), _MM_HINT_T1);
    }
    typename L::X xv[T];
    for (int t = 0; t < T; ++t) xv[t] = L::load_x(x[t].hb + k, x[t].xs + k, g);
    for (int r = 0; r < R; ++r) {
      const typename L::W wv = kPartial ? L::load_partial(w[r] + k, n - k, g) : L::load(w[r] + k, g);
      for (int t = 0; t < T; ++t) a[r][t] = L::step(a[r][t], wv, xv[t]);
    }
  };
  auto full = [&](Acc(&a)[R][T], int64_t s, int g) __attribute__((always_inline)) { step.template operator()<false>(a, s, g); };
  // The chains' accumulators of group g (0, 1) and parity p (0 even, 1 odd).
  auto chain = [&](int g, int64_t p) -> Acc(&)[R][T] { return g == 0 ? (p == 0 ? e0 : o0) : (p == 0 ? e1 : o1); };
  if constexpr (kInterleave) {
    int64_t s = 0;
    for (; s + 1 < n_full; s += 2) {
      full(e0, s, 0);
      if constexpr (L::kGroups == 2) full(e1, s, 1);
      full(o0, s + 1, 0);
      if constexpr (L::kGroups == 2) full(o1, s + 1, 1);
    }
    if (s < n_full) {
      full(e0, s, 0);
      if constexpr (L::kGroups == 2) full(e1, s, 1);
    }
  } else {
    for (int64_t s = 0; s < n_full; s += 2) full(e0, s, 0);
    for (int64_t s = 1; s < n_full; s += 2) full(o0, s, 0);
    if constexpr (L::kGroups == 2) {
      for (int64_t s = 0; s < n_full; s += 2) full(e1, s, 1);
      for (int64_t s = 1; s < n_full; s += 2) full(o1, s, 1);
    }
  }
  if (n_full * kBf16Step < n) {
    for (int g = 0; g < L::kGroups; ++g) step.template operator()<true>(chain(g, n_full % 2), n_full, g);
  }
  __m256 v[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      const Acc a0[2] = {e0[r][t], e1[r][t]}, a1[2] = {o0[r][t], o1[r][t]};
      v[r][t] = L::fold(a0, a1);
    }
  }
  store_folded<R, T>(v, y, ys, first);
}

// Whether an R x T tile keeps both chains' accumulators in registers.
template <int R, int T>
constexpr bool bf16_interleave() {
  return 2 * Bf16Lanes::kGroups * R * T <= Bf16Lanes::kAccBudget;
}

// bf16_tile for rr <= R rows and tt <= T tokens known at run time.
template <int R, int T>
void bf16_tile_n(int rr, int tt, const uint16_t* const* w, const Bf16X* x, int64_t n, float* y, int64_t ys,
                 bool first) {
  if constexpr (R > 1) {
    if (rr < R) return bf16_tile_n<R - 1, T>(rr, tt, w, x, n, y, ys, first);
  }
  if constexpr (T > 1) {
    if (tt < T) return bf16_tile_n<R, T - 1>(rr, tt, w, x, n, y, ys, first);
  }
  bf16_tile<R, T, bf16_interleave<R, T>(), false>(w, x, n, y, ys, first);
}

#if !defined(__AVX512F__)
// AVX2's GEMM: a block of rows' chunk split into f32 once per block of
// tokens (Bf16Lanes::store_panel's layout, one float per input, the partial
// last step zero-padded), so the tiles of the block's tokens load f32
// weights instead of splitting each bf16 pair again for every token.
template <int R>
struct Bf16Panel {
  alignas(32) float v[R][kBf16Chunk];
  // Splits rows w[0..rr) of the chunk (n inputs) into v.
  void fill(const uint16_t* const* w, int rr, int64_t n) {
    using L = Bf16Lanes;
    for (int r = 0; r < rr; ++r) {
      for (int64_t k = 0; k < n; k += kBf16Step) {
        for (int g = 0; g < L::kGroups; ++g) {
          const L::W wv = k + kBf16Step <= n ? L::load(w[r] + k, g) : L::load_partial(w[r] + k, n - k, g);
          L::store_panel(wv, v[r] + k + 16 * g);
        }
      }
    }
  }
};

// AVX2's GEMM tile: one chunk of n_steps steps for R panel rows (wp, split
// weights) x T tokens (x, split from hb), one pass per lane group and chain
// as bf16_tile's non-interleaved order, the same operations. Each
// accumulator takes two dependent FMAs per step; 5 x 2 holds 10 of them, x's
// 4 split vectors and one row's 2 (all 16 registers), so each weight vector
// is loaded once for both tokens (2R + T loads for 4R FMAs; the 4 x 2 tile
// that held x and read each weight once per token had 2RT + T).
template <int R, int T>
__attribute__((noinline)) void bf16_panel_tile(const float* const* wp, const uint16_t* const* xh, int64_t n_steps,
                                               float* y, int64_t ys, bool first) {
  using L = Bf16Lanes;
  __m256 acc[R][T], even[R][T], v[R][T];
  zero(even);
  zero(v);
  for (int g = 0; g < L::kGroups; ++g) {
    for (int64_t parity = 0; parity < 2; ++parity) {
      zero(acc);
#pragma GCC unroll 1
      for (int64_t s = parity; s < n_steps; s += 2) {
        const int64_t k = kBf16Step * s;
        L::X xv[T];
        for (int t = 0; t < T; ++t) {
          xv[t] = L::split(load32(xh[t] + k + 16 * g));
          // Held in registers (GCC would fold the loads into the FMAs).
          asm("" : "+x"(xv[t].odd), "+x"(xv[t].even));
        }
        for (int r = 0; r < R; ++r) {
          __m256 wo = _mm256_load_ps(wp[r] + k + 16 * g);
          __m256 we = _mm256_load_ps(wp[r] + k + 16 * g + 8);
          asm("" : "+x"(wo), "+x"(we));  // loaded once for the T tokens
          for (int t = 0; t < T; ++t) {
            acc[r][t] = _mm256_fmadd_ps(wo, xv[t].odd, acc[r][t]);
            acc[r][t] = _mm256_fmadd_ps(we, xv[t].even, acc[r][t]);
          }
        }
      }
      // Bf16Lanes::fold's tree: (even0 + odd0) + (even1 + odd1).
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) {
          if (parity == 0) {
            even[r][t] = acc[r][t];
          } else {
            const __m256 sum = _mm256_add_ps(even[r][t], acc[r][t]);
            v[r][t] = g == 0 ? sum : _mm256_add_ps(v[r][t], sum);
          }
        }
      }
    }
  }
  store_folded<R, T>(v, y, ys, first);
}

// bf16_panel_tile for rr <= R rows and tt <= T tokens known at run time.
template <int R, int T>
void bf16_panel_tile_n(int rr, int tt, const float* const* wp, const uint16_t* const* xh, int64_t n_steps,
                       float* y, int64_t ys, bool first) {
  if constexpr (R > 1) {
    if (rr < R) return bf16_panel_tile_n<R - 1, T>(rr, tt, wp, xh, n_steps, y, ys, first);
  }
  if constexpr (T > 1) {
    if (tt < T) return bf16_panel_tile_n<R, T - 1>(rr, tt, wp, xh, n_steps, y, ys, first);
  }
  bf16_panel_tile<R, T>(wp, xh, n_steps, y, ys, first);
}

// AVX2's GEMM order: chunks outer, then blocks of kGemmBlockTokens tokens
// (a chunk of their x stays in L2), then blocks of kBf16PanelRows rows split
// into the panel (20 KiB, in L1); for every kBf16GemmTokens tokens (x: 2
// KiB) the panel's row tiles pass.
constexpr int kBf16GemmRows = 5;
constexpr int kBf16GemmTokens = 2;
constexpr int kBf16PanelRows = 2 * kBf16GemmRows;

void bf16_gemm_avx2(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int64_t kElem = static_cast<int64_t>(sizeof(uint16_t));
  Bf16Panel<kBf16PanelRows> panel;
  for (int64_t k0 = 0; k0 < a.n_in; k0 += kBf16Chunk) {
    const int64_t n = min64(kBf16Chunk, a.n_in - k0);
    const int64_t n_steps = (n + kBf16Step - 1) / kBf16Step;
    for_each_token_block(a.n_tokens, kGemmBlockTokens, [&](TokenRange tokens) {
      for (int64_t rb = r0; rb < r1; rb += kBf16PanelRows) {
        const int rows = static_cast<int>(min64(kBf16PanelRows, r1 - rb));
        if (rb + 2 * kBf16PanelRows <= r1) prefetch_rows(a, rb + kBf16PanelRows, kBf16PanelRows, k0 * kElem, n * kElem);
        const uint16_t* w[kBf16PanelRows];
        for (int i = 0; i < rows; ++i) w[i] = reinterpret_cast<const uint16_t*>(weight_row(a, rb + i)) + k0;
        panel.fill(w, rows, n);
        for (int64_t t0 = tokens.begin; t0 < tokens.end; t0 += kBf16GemmTokens) {
          const int tt = static_cast<int>(min64(kBf16GemmTokens, tokens.end - t0));
          const uint16_t* xh[kBf16GemmTokens];
          for (int i = 0; i < tt; ++i) xh[i] = bf16_x(a, t0 + i, k0).hb;
          for (int rt = 0; rt < rows; rt += kBf16GemmRows) {
            const float* wp[kBf16GemmRows];
            const int rr = std::min(kBf16GemmRows, rows - rt);
            for (int i = 0; i < rr; ++i) wp[i] = panel.v[rt + i];
            bf16_panel_tile_n<kBf16GemmRows, kBf16GemmTokens>(rr, tt, wp, xh, n_steps,
                                                              a.y + t0 * a.n_out + rb + rt, a.n_out, k0 == 0);
          }
        }
      }
    });
  }
}
#endif

// Decode: rows [r0, r1) of one token, one row at a time (one sequential
// stream per thread, as the float decode), prefetched kBf16DecodePrefetchBytes
// ahead along the stream (RowStream: into the next row, or the next
// gathered one).
void bf16_decode_rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = reinterpret_cast<const uint16_t*>(weight_row(a, r));
    const RowStream stream(a, r);
    for (int64_t k0 = 0; k0 < a.n_in; k0 += kBf16Chunk) {
      const uint16_t* w[1] = {row + k0};
      const Bf16X x[1] = {bf16_x(a, 0, k0)};
      bf16_tile<1, 1, true, true>(w, x, min64(kBf16Chunk, a.n_in - k0), a.y + r, 0, k0 == 0, &stream);
    }
  }
}

// Rows [r0, r1) x every token: tiles of R rows x T tokens over the chunks,
// in GEMV order (rows outer: each weight read from memory once per call) or
// GEMM order (chunks outer, then blocks of kGemmBlockTokens tokens: a chunk
// of a block's x stays in L2).
template <int R, int T>
void bf16_tiles(const MatmulArgs& a, int64_t r0, int64_t r1, bool chunks_outer) {
  constexpr int64_t kElem = static_cast<int64_t>(sizeof(uint16_t));
  auto tile = [&](int64_t rt, int64_t k0, TokenRange tokens) {
    const int rr = static_cast<int>(min64(R, r1 - rt));
    const int64_t n = min64(kBf16Chunk, a.n_in - k0);
    if (rt + 2 * R <= r1 && (chunks_outer || a.rows != nullptr)) {
      // The next tile's chunk: GEMM order jumps between rows; gathered rows
      // do not follow each other in memory.
      prefetch_rows(a, rt + R, R, k0 * kElem, n * kElem);
    }
    const uint16_t* w[R];
    for (int i = 0; i < rr; ++i) w[i] = reinterpret_cast<const uint16_t*>(weight_row(a, rt + i)) + k0;
    if (!chunks_outer && a.rows == nullptr) {
      // Dense rows in GEMV order: each row's stream (into the same row of
      // the next tile) kBf16DecodePrefetchBytes ahead, as decode's.
      for (int i = 0; i < rr; ++i) {
        RowStream(a, rt + i, rt + i + R).prefetch_ahead(w[i], n * kElem, kBf16DecodePrefetchBytes);
      }
    }
    for (int64_t t0 = tokens.begin; t0 < tokens.end; t0 += T) {
      const int tt = static_cast<int>(min64(T, tokens.end - t0));
      Bf16X x[T];
      for (int i = 0; i < tt; ++i) x[i] = bf16_x(a, t0 + i, k0);
      bf16_tile_n<R, T>(rr, tt, w, x, n, a.y + t0 * a.n_out + rt, a.n_out, k0 == 0);
    }
  };
  if (chunks_outer) {
    for (int64_t k0 = 0; k0 < a.n_in; k0 += kBf16Chunk) {
      for_each_token_block(a.n_tokens, kGemmBlockTokens, [&](TokenRange tokens) {
        for (int64_t rt = r0; rt < r1; rt += R) tile(rt, k0, tokens);
      });
    }
  } else {
    for (int64_t rt = r0; rt < r1; rt += R) {
      for (int64_t k0 = 0; k0 < a.n_in; k0 += kBf16Chunk) tile(rt, k0, TokenRange{0, a.n_tokens});
    }
  }
}

void run_bf16(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const Bf16FloatMode float_mode;
  if (a.n_tokens == 1) {
    bf16_decode_rows(a, r0, r1);
  } else if (!gemm_order(a)) {
    bf16_tiles<Bf16Lanes::kGemvRows, kGemvTokens>(a, r0, r1, false);
  } else {
#if defined(__AVX512F__)
    bf16_tiles<Bf16Lanes::kGemmRows, Bf16Lanes::kGemmTokens>(a, r0, r1, true);
#else
    bf16_gemm_avx2(a, r0, r1);
#endif
  }
}

}  // namespace
}  // namespace tc::kernels::detail
