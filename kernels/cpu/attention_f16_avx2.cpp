// The F16C inner loops of decode attention (attention_f16_avx2.h).
#include "kernels/cpu/attention_f16_avx2.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

namespace tc::kernels::detail {
namespace {

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

}  // namespace

bool f16_kv_direct_available() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool available = __builtin_cpu_supports("x86-64-v3");
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
  // dot8's tree: halves of row pairs, then neighbouring lanes twice.
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

}  // namespace tc::kernels::detail

#else  // not x86-64 with these flags: never called

namespace tc::kernels::detail {
bool f16_kv_direct_available() { return false; }
void dot8_f16(const float*, const uint16_t*, int64_t, int64_t, float*) {}
void add_rows64_f16(const float*, const uint16_t*, int64_t, int64_t, float*) {}
}  // namespace tc::kernels::detail

#endif
