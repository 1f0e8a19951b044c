// The AVX-512 score, exp and weighted-V loops of CPU attention (attention_avx512.h).
#include "kernels/cpu/attention_avx512.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kernels/cpu/attention_f16_avx2.h"
#include "kernels/dtype.h"
#include "kernels/cpu/prefetch_lines.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

namespace tc::kernels::detail {
namespace {

// Off when THERMOCLINE_ISA caps the kernels below AVX-512.
bool isa_allows_zmm() {
  const char* isa = std::getenv("THERMOCLINE_ISA");
  return isa == nullptr || (std::strcmp(isa, "portable") != 0 && std::strcmp(isa, "avx2") != 0);
}

bool cpu_has_zmm() {
  return f16_kv_direct_available() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         isa_allows_zmm();
}

std::atomic<bool>& zmm_switch() {
  static std::atomic<bool> on{cpu_has_zmm()};
  return on;
}

// Lane indices of the dot8 tree over pair registers (see score_heads_pairs).
alignas(64) constexpr int kLowHalves[16] = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27};
alignas(64) constexpr int kHighHalves[16] = {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};
alignas(64) constexpr int kEvenPairs[16] = {0, 2, 8, 10, 4, 6, 12, 14, 16, 18, 24, 26, 20, 22, 28, 30};
alignas(64) constexpr int kOddPairs[16] = {1, 3, 9, 11, 5, 7, 13, 15, 17, 19, 25, 27, 21, 23, 29, 31};
// The last step's even and odd lanes of two heads' [c0 | c1], in row order (A's rows, then B's).
alignas(64) constexpr int kEvenOut[16] = {0, 4, 2, 6, 8, 12, 10, 14, 16, 20, 18, 22, 24, 28, 26, 30};
alignas(64) constexpr int kOddOut[16] = {1, 5, 3, 7, 9, 13, 11, 15, 17, 21, 19, 23, 25, 29, 27, 31};

inline __m512i lanes(const int* idx) { return _mm512_load_si512(idx); }

// A value the compiler must keep in a register: it would otherwise fold
// each use's load into its FMA, loading a shared K or V value twice (zmm
// loads, two a cycle, would then bound the loops instead of the FMAs).
inline __m512 in_register(__m512 x) {
  asm("" : "+v"(x));
  return x;
}

// 8 q values in both halves of a register.
inline __m512 broadcast8(const float* q) {
  return _mm512_castpd_ps(_mm512_maskz_broadcast_f64x4(0xff, _mm256_loadu_pd(reinterpret_cast<const double*>(q))));
}

}  // namespace

bool attention_zmm_enabled() { return zmm_switch().load(std::memory_order_relaxed); }

void set_attention_zmm_for_testing(bool enabled) { zmm_switch().store(enabled && cpu_has_zmm()); }

void f16_block_to_pairs(const uint16_t* src, int64_t src_stride, int64_t n, int64_t width, float* dst) {
  // Pair p's register of 8-value group g: row 2p's 8 values in lanes 0-7,
  // row 2p + 1's in lanes 8-15, converted together; a row at or past n
  // gives +0.
  const int64_t n_groups = width / 8;
  const __m128i zeros = _mm_setzero_si128();
  for (int64_t p = 0; p < 4; ++p) {
    const uint16_t* row0 = 2 * p < n ? src + 2 * p * src_stride : nullptr;
    const uint16_t* row1 = 2 * p + 1 < n ? src + (2 * p + 1) * src_stride : nullptr;
    float* d = dst + p * n_groups * 16;
    for (int64_t g = 0; g < n_groups; ++g) {
      const __m128i h0 = row0 != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(row0 + 8 * g)) : zeros;
      const __m128i h1 = row1 != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(row1 + 8 * g)) : zeros;
      const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1);
      _mm512_storeu_ps(d + g * 16, _mm512_maskz_cvtph_ps(0xffff, both));
    }
  }
}

void f16_row_to_f32(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  }
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
}

void q8_0_block_to_pairs(const void* src, int64_t src_stride_bytes, int64_t n, int64_t width, float* dst) {
  // Pair p's register of 8-value group g: row 2p's 8 int8 values in lanes
  // 0-7, row 2p + 1's in lanes 8-15, times their blocks' scales. A row at
  // or past n reads as zeros with scale 0 (its slots come out +0).
  const int64_t n_groups = width / 8;
  const auto* base = static_cast<const char*>(src);
  const __m128i no_values = _mm_setzero_si128();
  for (int64_t p = 0; p < 4; ++p) {
    const int64_t r0 = 2 * p, r1 = 2 * p + 1;
    const auto* row0 = r0 < n ? reinterpret_cast<const BlockQ8_0*>(base + r0 * src_stride_bytes) : nullptr;
    const auto* row1 = r1 < n ? reinterpret_cast<const BlockQ8_0*>(base + r1 * src_stride_bytes) : nullptr;
    float* d = dst + p * n_groups * 16;
    for (int64_t b = 0; b < n_groups / 4; ++b) {
      const __m256 s0 = row0 != nullptr ? _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(row0[b].d)))
                                        : _mm256_setzero_ps();
      const __m256 s1 = row1 != nullptr ? _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(row1[b].d)))
                                        : _mm256_setzero_ps();
      const __m512 scale = _mm512_castpd_ps(
          _mm512_maskz_insertf64x4(0xff, _mm512_castpd256_pd512(_mm256_castps_pd(s0)), _mm256_castps_pd(s1), 1));
      for (int64_t g = 0; g < 4; ++g) {
        const __m128i q0 = row0 != nullptr ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row0[b].qs + 8 * g))
                                           : no_values;
        const __m128i q1 = row1 != nullptr ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row1[b].qs + 8 * g))
                                           : no_values;
        const __m512 v = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, _mm_unpacklo_epi64(q0, q1)));
        _mm512_storeu_ps(d + (4 * b + g) * 16, _mm512_mul_ps(v, scale));
      }
    }
  }
}

void q8_0_row_to_f32(const void* src, int64_t n, float* dst) {
  const auto* blocks = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const __m512 scale = _mm512_maskz_cvtph_ps(0xffff, _mm256_set1_epi16(static_cast<int16_t>(blocks[b].d)));
    for (int64_t h = 0; h < 2; ++h) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[b].qs + 16 * h));
      const __m512 v = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, q));
      _mm512_storeu_ps(dst + b * kQK8_0 + 16 * h, _mm512_mul_ps(v, scale));
    }
  }
}

namespace {

// dot8's a registers of query heads A and B over one block (A's KV rows at
// k_a, B's at k_b, in the pair layout): a[p] holds dot8's a[2p] in lanes
// 0-7 and a[2p + 1] in lanes 8-15. Two heads give eight independent FMA
// chains; heads of one KV group (kShared) load each K value once.
template <bool kShared>
inline void accumulate_two(const float* q_a, const float* k_a, const float* q_b, const float* k_b, int64_t pair_stride,
                           int64_t head_blocks, __m512 (&a)[4], __m512 (&b)[4]) {
  for (int p = 0; p < 4; ++p) a[p] = b[p] = _mm512_setzero_ps();
  for (int64_t j = 0; j < head_blocks; ++j) {
    const __m512 qa = broadcast8(q_a + j * 8), qb = broadcast8(q_b + j * 8);
    for (int p = 0; p < 4; ++p) {
      const __m512 ka = kShared ? in_register(_mm512_loadu_ps(k_a + j * 16 + p * pair_stride))
                                : _mm512_loadu_ps(k_a + j * 16 + p * pair_stride);
      a[p] = _mm512_fmadd_ps(qa, ka, a[p]);
      b[p] = _mm512_fmadd_ps(qb, kShared ? ka : _mm512_loadu_ps(k_b + j * 16 + p * pair_stride), b[p]);
    }
  }
}

// dot8's tree up to its last step: b = lanes 0-3 + lanes 4-7 of each row
// ([b0 | b1], [b2 | b3]), then neighbouring lanes ([c0 | c1]).
inline __m512 reduce_to_c(const __m512 (&a)[4]) {
  const __m512i low = lanes(kLowHalves), high = lanes(kHighHalves);
  const __m512 b01 = _mm512_add_ps(_mm512_permutex2var_ps(a[0], low, a[1]), _mm512_permutex2var_ps(a[0], high, a[1]));
  const __m512 b23 = _mm512_add_ps(_mm512_permutex2var_ps(a[2], low, a[3]), _mm512_permutex2var_ps(a[2], high, a[3]));
  return _mm512_add_ps(_mm512_permutex2var_ps(b01, lanes(kEvenPairs), b23),
                       _mm512_permutex2var_ps(b01, lanes(kOddPairs), b23));
}

// o_a[0, 64) += p_a[i] * v_a[i * stride + 0, 64) and the same for B, i < n
// ascending: add_rows64 for two heads at once (eight FMA chains); heads of
// one KV group (kShared) load each V value once.
template <bool kShared>
inline void add_rows64_two(const float* p_a, const float* v_a, float* o_a, const float* p_b, const float* v_b,
                           float* o_b, int64_t stride, int64_t n) {
  __m512 a[4], b[4];
  for (int c = 0; c < 4; ++c) a[c] = _mm512_loadu_ps(o_a + 16 * c), b[c] = _mm512_loadu_ps(o_b + 16 * c);
  for (int64_t i = 0; i < n; ++i) {
    const __m512 pa = _mm512_set1_ps(p_a[i]), pb = _mm512_set1_ps(p_b[i]);
    for (int c = 0; c < 4; ++c) {
      const __m512 va = kShared ? in_register(_mm512_loadu_ps(v_a + i * stride + 16 * c))
                                : _mm512_loadu_ps(v_a + i * stride + 16 * c);
      a[c] = _mm512_fmadd_ps(pa, va, a[c]);
      b[c] = _mm512_fmadd_ps(pb, kShared ? va : _mm512_loadu_ps(v_b + i * stride + 16 * c), b[c]);
    }
  }
  for (int c = 0; c < 4; ++c) _mm512_storeu_ps(o_a + 16 * c, a[c]), _mm512_storeu_ps(o_b + 16 * c, b[c]);
}

// o[0, 64) += p[i] * v[i * stride + 0, 64), i < n ascending: add_rows64.
inline void add_rows64_one(const float* p, const float* v, float* o, int64_t stride, int64_t n) {
  __m512 a[4];
  for (int c = 0; c < 4; ++c) a[c] = _mm512_loadu_ps(o + 16 * c);
  for (int64_t i = 0; i < n; ++i) {
    const __m512 pv = _mm512_set1_ps(p[i]);
    for (int c = 0; c < 4; ++c) a[c] = _mm512_fmadd_ps(pv, _mm512_loadu_ps(v + i * stride + 16 * c), a[c]);
  }
  for (int c = 0; c < 4; ++c) _mm512_storeu_ps(o + 16 * c, a[c]);
}

// exp(x) for x <= 88.37: exp8_nonpositive (f8_lanes.h) on 16 lanes, with
// the FMAs the x86-64-v3 clone contracts its expressions into, so the same
// bits: the range reduction, Cephes' degree-7 polynomial and 2^n in the
// exponent bits; 0 below -87.3.
inline __m512 exp16_nonpositive(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3f);
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_mask_blend_ps(underflow, x, lo);
  const __m512 magic = _mm512_set1_ps(0x1.8p23f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic), magic);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_add_ps(_mm512_fmadd_ps(y, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i biased = _mm512_add_epi32(_mm512_maskz_cvttps_epi32(0xffff, n), _mm512_set1_epi32(127));
  const __m512i scale = _mm512_maskz_slli_epi32(0xffff, biased, 23);  // 2^n, -126 <= n <= 127
  return _mm512_maskz_mul_ps(static_cast<__mmask16>(~underflow), y, _mm512_castsi512_ps(scale));
}

// Lanes 0-7 / 8-15 of x as doubles.
inline __m512d low_to_double(__m512 x) {
  return _mm512_maskz_cvtps_pd(0xff, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(x), 0)));
}
inline __m512d high_to_double(__m512 x) {
  return _mm512_maskz_cvtps_pd(0xff, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(x), 1)));
}

}  // namespace

float exp_scores(float* p, int64_t n, double& sum) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  auto tail = [&](int64_t j) { return static_cast<__mmask16>(n - j >= 16 ? 0xffffu : (1u << (n - j)) - 1); };
  __m512 vmax = neg_inf;
  for (int64_t j = 0; j < n; j += 16) {
    vmax = _mm512_maskz_max_ps(0xffff, vmax, _mm512_mask_loadu_ps(neg_inf, tail(j), p + j));
  }
  const __m256 max8 = _mm256_max_ps(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(vmax), 0)),
                                    _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(vmax), 1)));
  const __m128 max4 = _mm_max_ps(_mm256_castps256_ps128(max8), _mm256_extractf128_ps(max8, 1));
  const __m128 max2 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
  const float max = _mm_cvtss_f32(_mm_max_ss(max2, _mm_movehdup_ps(max2)));
  const __m512 max16 = _mm512_set1_ps(max);
  // chunk_exp's two f64 accumulators side by side: lanes 0-3 take each
  // 8-score step's lanes 0-3, lanes 4-7 its lanes 4-7, steps in order (a
  // padded step past n adds exp(-inf) = 0, which changes nothing).
  __m512d acc = _mm512_setzero_pd();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail(j);
    const __m512 e = exp16_nonpositive(_mm512_sub_ps(_mm512_mask_loadu_ps(neg_inf, m, p + j), max16));
    _mm512_mask_storeu_ps(p + j, m, e);
    acc = _mm512_add_pd(acc, low_to_double(e));
    acc = _mm512_add_pd(acc, high_to_double(e));
  }
  alignas(64) double s[8];
  _mm512_store_pd(s, acc);
  sum = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
  return max;
}

void score_heads_pairs(const float* q, int64_t n_heads, const int64_t* kv_offsets, const float* k_pairs,
                       int64_t width, int64_t head_dim, float scale, int64_t n_valid, float* scores,
                       int64_t score_stride, const void* ahead, int64_t ahead_bytes) {
  const int64_t n_pairs = (n_heads + 1) / 2;
  const int64_t pair_stride = width / 8 * 16;  // floats from one pair's slots to the next's
  const int64_t head_blocks = head_dim / 8;
  const __m512 scale16 = _mm512_set1_ps(scale);
  const auto keep = static_cast<__mmask16>((1u << n_valid) - 1);  // lanes 0..n_valid-1 of the 8 rows
  // Heads two at a time (the last one with itself when n_heads is odd);
  // in the pair layout a KV head's slots take twice its head_dim floats.
  for (int64_t r = 0; r < n_heads; r += 2) {
    const int64_t r_b = std::min(r + 1, n_heads - 1);
    const float* k_a = k_pairs + 2 * kv_offsets[r];
    const float* k_b = k_pairs + 2 * kv_offsets[r_b];
    prefetch_part(ahead, ahead_bytes, r / 2, n_pairs);
    __m512 a[4], b[4];
    if (k_a == k_b) {
      accumulate_two<true>(q + r * head_dim, k_a, q + r_b * head_dim, k_b, pair_stride, head_blocks, a, b);
    } else {
      accumulate_two<false>(q + r * head_dim, k_a, q + r_b * head_dim, k_b, pair_stride, head_blocks, a, b);
    }
    // dot8's last step for both heads, its operands already permuted into
    // row order: head A's 8 scores in lanes 0-7, B's in lanes 8-15.
    const __m512 c_a = reduce_to_c(a), c_b = reduce_to_c(b);
    const __m512 e = _mm512_mul_ps(_mm512_add_ps(_mm512_permutex2var_ps(c_a, lanes(kEvenOut), c_b),
                                                 _mm512_permutex2var_ps(c_a, lanes(kOddOut), c_b)),
                                   scale16);
    _mm512_mask_storeu_ps(scores + r * score_stride, keep, e);
    if (r_b != r) {
      const __m512 b_low = _mm512_maskz_shuffle_f32x4(0xffff, e, e, _MM_SHUFFLE(1, 0, 3, 2));  // B's rows in 0-7
      _mm512_mask_storeu_ps(scores + r_b * score_stride, keep, b_low);
    }
  }
}

void add_heads_rows(const float* p, int64_t p_stride, int64_t n_heads, const int64_t* kv_offsets, const float* v,
                    int64_t width, int64_t head_dim, int64_t n, float* out, const void* ahead, int64_t ahead_bytes) {
  int64_t r = 0;
  const int64_t n_pairs = (n_heads + 1) / 2;
  for (; r + 1 < n_heads; r += 2) {
    prefetch_part(ahead, ahead_bytes, r / 2, n_pairs);
    const float* p_a = p + r * p_stride;
    const float* p_b = p_a + p_stride;
    for (int64_t d = 0; d + 64 <= head_dim; d += 64) {
      const float* v_a = v + kv_offsets[r] + d;
      const float* v_b = v + kv_offsets[r + 1] + d;
      float* o_a = out + r * head_dim + d;
      if (v_a == v_b) {
        add_rows64_two<true>(p_a, v_a, o_a, p_b, v_b, o_a + head_dim, width, n);
      } else {
        add_rows64_two<false>(p_a, v_a, o_a, p_b, v_b, o_a + head_dim, width, n);
      }
    }
  }
  if (r < n_heads) {
    prefetch_part(ahead, ahead_bytes, r / 2, n_pairs);
    for (int64_t d = 0; d + 64 <= head_dim; d += 64) {
      add_rows64_one(p + r * p_stride, v + kv_offsets[r] + d, out + r * head_dim + d, width, n);
    }
  }
}

namespace {

// (The loops over tokens, columns and pairs are unrolled by pragma: at -O3
// GCC otherwise keeps the accumulator arrays in memory, storing every
// register of them on each step.)

// Scores of NT tokens' query rows q[t] (one head) against a block of 8
// positions in the pair layout: acc[t] holds dot8's a registers for token t,
// as accumulate_two's for one head. The block's K values are loaded once
// for all NT tokens.
template <int NT>
inline void accumulate_tokens(const float* const (&q)[NT], const float* k, int64_t pair_stride, int64_t head_blocks,
                              __m512 (&acc)[NT][4]) {
  #pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) {
    #pragma GCC unroll 16
    for (int p = 0; p < 4; ++p) acc[t][p] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < head_blocks; ++j) {
    __m512 kp[4];
    #pragma GCC unroll 16
    for (int p = 0; p < 4; ++p) kp[p] = in_register(_mm512_loadu_ps(k + j * 16 + p * pair_stride));
    #pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {
      const __m512 qt = broadcast8(q[t] + j * 8);
      #pragma GCC unroll 16
      for (int p = 0; p < 4; ++p) acc[t][p] = _mm512_fmadd_ps(qt, kp[p], acc[t][p]);
    }
  }
}

inline __mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// score_tokens_pairs for NT tokens: dot8's last step for two tokens at a
// time, as score_heads_pairs does it for two heads.
template <int NT>
void score_tile(const float* const (&q)[NT], float* const (&scores)[NT], const int64_t* n_valid, const float* k,
                int64_t pair_stride, int64_t head_blocks, __m512 scale16) {
  __m512 acc[NT][4];
  accumulate_tokens<NT>(q, k, pair_stride, head_blocks, acc);
  #pragma GCC unroll 16
  for (int t = 0; t < NT; t += 2) {
    const int u = t + 1 < NT ? t + 1 : t;
    const __m512 c_a = reduce_to_c(acc[t]), c_b = u != t ? reduce_to_c(acc[u]) : c_a;
    const __m512 e = _mm512_mul_ps(_mm512_add_ps(_mm512_permutex2var_ps(c_a, lanes(kEvenOut), c_b),
                                                 _mm512_permutex2var_ps(c_a, lanes(kOddOut), c_b)),
                                   scale16);
    _mm512_mask_storeu_ps(scores[t], first_lanes(n_valid[t]), e);
    if (u != t) {
      const __m512 high = _mm512_maskz_shuffle_f32x4(0xffff, e, e, _MM_SHUFFLE(1, 0, 3, 2));  // u's rows in 0-7
      _mm512_mask_storeu_ps(scores[u], first_lanes(n_valid[u]), high);
    }
  }
}

// o[t][0, 16 NC) += p[t][i] * v[i * stride + 0, 16 NC) for i < n ascending,
// NT tokens at once: each V value is loaded once for all of them. The last
// register takes only the lanes of `last` (a head size that is not a
// multiple of 16 NC). Per value: add_rows64's (and add_rows8's) FMAs in
// the same order.
template <int NT, int NC>
void add_tile(const float* const (&p)[NT], const float* v, int64_t stride, int64_t n, float* const (&o)[NT],
              __mmask16 last) {
  auto mask = [&](int c) { return c == NC - 1 ? last : static_cast<__mmask16>(0xffff); };
  __m512 acc[NT * NC];
  #pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) {
    #pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) acc[t * NC + c] = _mm512_maskz_loadu_ps(mask(c), o[t] + 16 * c);
  }
  for (int64_t i = 0; i < n; ++i) {
    __m512 vv[NC];
    #pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) vv[c] = in_register(_mm512_maskz_loadu_ps(mask(c), v + i * stride + 16 * c));
    #pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {
      const __m512 pt = _mm512_set1_ps(p[t][i]);
      #pragma GCC unroll 16
      for (int c = 0; c < NC; ++c) acc[t * NC + c] = _mm512_fmadd_ps(pt, vv[c], acc[t * NC + c]);
    }
  }
  #pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) {
    #pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) _mm512_mask_storeu_ps(o[t] + 16 * c, mask(c), acc[t * NC + c]);
  }
}

template <int NT>
void add_tile_columns(const float* const (&p)[NT], const float* v, int64_t stride, int64_t n, float* const (&o)[NT],
                      int nc, __mmask16 last) {
  switch (nc) {
    case 1: return add_tile<NT, 1>(p, v, stride, n, o, last);
    case 2: return add_tile<NT, 2>(p, v, stride, n, o, last);
    case 3: return add_tile<NT, 3>(p, v, stride, n, o, last);
    case 4: return add_tile<NT, 4>(p, v, stride, n, o, last);
    default: return add_tile<NT, 5>(p, v, stride, n, o, last);
  }
}

// Tokens [i, i + NT) of the list: their rows, then the common positions
// together and each token's own rest alone (its values keep ascending i).
template <int NT>
void add_token_group(const float* p, int64_t p_stride, float* out, int64_t out_stride, const int64_t* tokens,
                     const int64_t* n, const float* v, int64_t width, int nc, __mmask16 last) {
  const float* pr[NT];
  float* orow[NT];
  int64_t common = n[0];
  #pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) {
    pr[t] = p + tokens[t] * p_stride;
    orow[t] = out + tokens[t] * out_stride;
    common = std::min(common, n[t]);
  }
  add_tile_columns<NT>(pr, v, width, common, orow, nc, last);
  #pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) {
    if (n[t] == common) continue;
    const float* const p1[1] = {pr[t] + common};
    float* const o1[1] = {orow[t]};
    add_tile_columns<1>(p1, v + common * width, width, n[t] - common, o1, nc, last);
  }
}

}  // namespace

void score_tokens_pairs(const float* q, int64_t q_stride, float* scores, int64_t score_stride, const int64_t* tokens,
                        const int64_t* n_valid, int64_t n_tokens, const float* k_pairs, int64_t width,
                        int64_t head_dim, float scale) {
  const int64_t pair_stride = width / 8 * 16;
  const int64_t head_blocks = head_dim / 8;
  const __m512 scale16 = _mm512_set1_ps(scale);
  auto tile = [&]<int NT>(int64_t i) {
    const float* qr[NT];
    float* sr[NT];
    for (int t = 0; t < NT; ++t) qr[t] = q + tokens[i + t] * q_stride, sr[t] = scores + tokens[i + t] * score_stride;
    score_tile<NT>(qr, sr, n_valid + i, k_pairs, pair_stride, head_blocks, scale16);
  };
  int64_t i = 0;
  for (; i + 4 <= n_tokens; i += 4) tile.template operator()<4>(i);
  switch (n_tokens - i) {
    case 3: tile.template operator()<3>(i); break;
    case 2: tile.template operator()<2>(i); break;
    case 1: tile.template operator()<1>(i); break;
    default: break;
  }
}

void add_tokens_rows(const float* p, int64_t p_stride, float* out, int64_t out_stride, const int64_t* tokens,
                     const int64_t* n, int64_t n_tokens, const float* v, int64_t width, int64_t head_dim) {
  // The head's registers of 16 values in column blocks of at most 5 (4
  // tokens x 5 accumulators, 5 V values and a weight fit the 32 registers),
  // as even as they go: 72 values take one block of 5 (the last half
  // full), 96 two of 3, 128 two of 4.
  const int64_t n_regs = (head_dim + 15) / 16, n_blocks = (n_regs + 4) / 5;
  for (int64_t b = 0, d = 0; b < n_blocks; ++b) {
    const int64_t regs = (n_regs * (b + 1)) / n_blocks - (n_regs * b) / n_blocks;
    const int64_t cols = std::min<int64_t>(16 * regs, head_dim - d);
    const int nc = static_cast<int>(regs);
    const __mmask16 last = first_lanes(cols - 16 * (nc - 1));
    int64_t i = 0;
    for (; i + 4 <= n_tokens; i += 4) add_token_group<4>(p, p_stride, out + d, out_stride, tokens + i, n + i, v + d, width, nc, last);
    switch (n_tokens - i) {
      case 3: add_token_group<3>(p, p_stride, out + d, out_stride, tokens + i, n + i, v + d, width, nc, last); break;
      case 2: add_token_group<2>(p, p_stride, out + d, out_stride, tokens + i, n + i, v + d, width, nc, last); break;
      case 1: add_token_group<1>(p, p_stride, out + d, out_stride, tokens + i, n + i, v + d, width, nc, last); break;
      default: break;
    }
    d += cols;
  }
}

}  // namespace tc::kernels::detail

#else  // not x86-64 with these flags: never called

namespace tc::kernels::detail {
bool attention_zmm_enabled() { return false; }
void set_attention_zmm_for_testing(bool) {}
void f16_block_to_pairs(const uint16_t*, int64_t, int64_t, int64_t, float*) {}
void f16_row_to_f32(const uint16_t*, int64_t, float*) {}
void q8_0_block_to_pairs(const void*, int64_t, int64_t, int64_t, float*) {}
void q8_0_row_to_f32(const void*, int64_t, float*) {}
void score_heads_pairs(const float*, int64_t, const int64_t*, const float*, int64_t, int64_t, float, int64_t, float*,
                       int64_t, const void*, int64_t) {}
void add_heads_rows(const float*, int64_t, int64_t, const int64_t*, const float*, int64_t, int64_t, int64_t, float*,
                    const void*, int64_t) {}
float exp_scores(float*, int64_t, double& sum) { return sum = 0, 0.0f; }
void score_tokens_pairs(const float*, int64_t, float*, int64_t, const int64_t*, const int64_t*, int64_t, const float*,
                        int64_t, int64_t, float) {}
void add_tokens_rows(const float*, int64_t, float*, int64_t, const int64_t*, const int64_t*, int64_t, const float*,
                     int64_t, int64_t) {}
}  // namespace tc::kernels::detail

#endif
