// The F16C (and q8_0) inner loops of decode attention (attention_f16_avx2.h).
#include "kernels/cpu/attention_f16_avx2.h"
#include "kernels/cpu/cpu_features.h"

#include "kernels/dtype.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

namespace tc::kernels::detail {
namespace {

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Values 8g..8g+7 of a q8_0 block as f32, q * d (exact).
inline __m256 load_q8x8(const BlockQ8_0& b, int g, __m256 d) {
  const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * g));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
}

inline __m256 scale_of(const BlockQ8_0& b) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(b.d))); }

// dot8's tree over the 8 rows' lane sums a[], into out[8].
inline void reduce8(__m256 (&a)[8], float* out) {
  __m256 b[4];
  for (int i = 0; i < 4; ++i) {
    b[i] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * i], a[2 * i + 1], 0x20),
                         _mm256_permute2f128_ps(a[2 * i], a[2 * i + 1], 0x31));
  }
  constexpr int kEven = _MM_SHUFFLE(2, 0, 2, 0), kOdd = _MM_SHUFFLE(3, 1, 3, 1);
  const __m256 c0 = _mm256_add_ps(_mm256_shuffle_ps(b[0], b[1], kEven), _mm256_shuffle_ps(b[0], b[1], kOdd));
  const __m256 c1 = _mm256_add_ps(_mm256_shuffle_ps(b[2], b[3], kEven), _mm256_shuffle_ps(b[2], b[3], kOdd));
  const __m256 e = _mm256_add_ps(_mm256_shuffle_ps(c0, c1, kEven), _mm256_shuffle_ps(c0, c1, kOdd));
  _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(e, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

}  // namespace

bool f16_kv_direct_available() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  // What this file is built for (-mavx2 -mfma -mf16c); named one by one, as
  // clang before 16 knows no "x86-64-v3" (nor "f16c") here.
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  return available;
#endif
}

void dot8_f16(const float* q, const uint16_t* k, int64_t k_stride, int64_t n, float* out) {
  __m256 a[8];
  for (auto& v : a) v = _mm256_setzero_ps();
  for (int64_t d = 0; d < n; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
    for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(qv, load_f16x8(k + i * k_stride + d), a[i]);
  }
  reduce8(a, out);  // dot8's tree: halves of row pairs, then neighbouring lanes twice
}

void dot8_q8_0(const float* q, const void* k, int64_t k_stride_bytes, int64_t n, float* out) {
  __m256 a[8];
  for (auto& v : a) v = _mm256_setzero_ps();
  const auto* rows = static_cast<const char*>(k);
  for (int64_t blk = 0; blk < n / kQK8_0; ++blk) {
    // The 8 rows' blocks and scales, then 8 independent FMAs per 8 values.
    const BlockQ8_0* b[8];
    __m256 d[8];
    for (int i = 0; i < 8; ++i) {
      b[i] = reinterpret_cast<const BlockQ8_0*>(rows + i * k_stride_bytes) + blk;
      d[i] = scale_of(*b[i]);
    }
    for (int g = 0; g < 4; ++g) {
      const __m256 qv = _mm256_loadu_ps(q + blk * kQK8_0 + 8 * g);
      for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(qv, load_q8x8(*b[i], g, d[i]), a[i]);
    }
  }
  reduce8(a, out);
}

void add_rows64_f16(const float* p, const uint16_t* v, int64_t v_stride, int64_t n, float* o) {
  __m256 a[8];
  for (int c = 0; c < 8; ++c) a[c] = _mm256_loadu_ps(o + 8 * c);
  for (int64_t i = 0; i < n; ++i) {
    const __m256 pv = _mm256_set1_ps(p[i]);
    const uint16_t* vi = v + i * v_stride;
    for (int c = 0; c < 8; ++c) a[c] = _mm256_fmadd_ps(pv, load_f16x8(vi + 8 * c), a[c]);
  }
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(o + 8 * c, a[c]);
}

void q8_0_row_to_f32_avx2(const void* src, int64_t n, float* dst) {
  const auto* blocks = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const __m256 d = scale_of(blocks[b]);
    for (int g = 0; g < 4; ++g) _mm256_storeu_ps(dst + b * kQK8_0 + 8 * g, load_q8x8(blocks[b], g, d));
  }
}

void add_rows64_q8_0(const float* p, const void* v, int64_t v_stride_bytes, int64_t n, float* o) {
  __m256 a[8];
  for (int c = 0; c < 8; ++c) a[c] = _mm256_loadu_ps(o + 8 * c);
  const auto* rows = static_cast<const char*>(v);
  for (int64_t i = 0; i < n; ++i) {
    const __m256 pv = _mm256_set1_ps(p[i]);
    const auto* b = reinterpret_cast<const BlockQ8_0*>(rows + i * v_stride_bytes);
    const __m256 d0 = scale_of(b[0]), d1 = scale_of(b[1]);
    for (int c = 0; c < 4; ++c) a[c] = _mm256_fmadd_ps(pv, load_q8x8(b[0], c, d0), a[c]);
    for (int c = 0; c < 4; ++c) a[4 + c] = _mm256_fmadd_ps(pv, load_q8x8(b[1], c, d1), a[4 + c]);
  }
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(o + 8 * c, a[c]);
}

}  // namespace tc::kernels::detail

#else  // not x86-64 with these flags: never called

namespace tc::kernels::detail {
bool f16_kv_direct_available() { return false; }
void dot8_f16(const float*, const uint16_t*, int64_t, int64_t, float*) {}
void add_rows64_f16(const float*, const uint16_t*, int64_t, int64_t, float*) {}
void dot8_q8_0(const float*, const void*, int64_t, int64_t, float*) {}
void add_rows64_q8_0(const float*, const void*, int64_t, int64_t, float*) {}
void q8_0_row_to_f32_avx2(const void*, int64_t, float*) {}
}  // namespace tc::kernels::detail

#endif
