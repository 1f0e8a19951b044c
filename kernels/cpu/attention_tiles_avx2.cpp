// Two-token tiles of prefill attention on the 8-lane path (attention_tiles_avx2.h).
#include "kernels/cpu/attention_tiles_avx2.h"

#include <algorithm>

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace tc::kernels::detail {
namespace {

// A value the compiler must keep in a register (not fold into each FMA as a
// memory operand, which would load a shared K or V value once per token).
inline __m256 in_register(__m256 x) {
  asm("" : "+x"(x));
  return x;
}

// dot8's tree for 4 rows' lane sums a[0..3] (rows r0..r3 of the 8): each
// row's ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)), as reduce8 and
// dot8 add them; out[r] = row r's sum.
inline void reduce4(const __m256 (&a)[4], float* out) {
  const __m256 b01 = _mm256_add_ps(_mm256_permute2f128_ps(a[0], a[1], 0x20), _mm256_permute2f128_ps(a[0], a[1], 0x31));
  const __m256 b23 = _mm256_add_ps(_mm256_permute2f128_ps(a[2], a[3], 0x20), _mm256_permute2f128_ps(a[2], a[3], 0x31));
  constexpr int kEven = _MM_SHUFFLE(2, 0, 2, 0), kOdd = _MM_SHUFFLE(3, 1, 3, 1);
  const __m256 c = _mm256_add_ps(_mm256_shuffle_ps(b01, b23, kEven), _mm256_shuffle_ps(b01, b23, kOdd));
  const __m256 e = _mm256_add_ps(_mm256_shuffle_ps(c, c, kEven), _mm256_shuffle_ps(c, c, kOdd));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, e);  // rows 0, 2, 0, 2 | 1, 3, 1, 3
  out[0] = lanes[0], out[1] = lanes[4], out[2] = lanes[1], out[3] = lanes[5];
}

// Rows [4h, 4h + 4) of the block for tokens q0 and q1 (the same pointer
// for a lone token): d8 sums into s0[4h..], s1[4h..].
inline void score_half(const float* q0, const float* q1, const float* k, int64_t width, int64_t head_dim,
                       float* s0, float* s1) {
  __m256 a0[4], a1[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  for (int64_t d = 0; d < head_dim; d += 8) {
    const __m256 x0 = _mm256_loadu_ps(q0 + d), x1 = _mm256_loadu_ps(q1 + d);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const __m256 kr = in_register(_mm256_loadu_ps(k + r * width + d));
      a0[r] = _mm256_fmadd_ps(x0, kr, a0[r]);
      a1[r] = _mm256_fmadd_ps(x1, kr, a1[r]);
    }
  }
  reduce4(a0, s0);
  reduce4(a1, s1);
}

// o[t][0, 8 NC) += p[t][i] * v[i * stride + 0, 8 NC), i < n ascending, for two tokens.
template <int NC>
void add_pair(const float* p0, const float* p1, const float* v, int64_t stride, int64_t n, float* o0, float* o1) {
  __m256 a0[NC], a1[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) a0[c] = _mm256_loadu_ps(o0 + 8 * c), a1[c] = _mm256_loadu_ps(o1 + 8 * c);
  for (int64_t i = 0; i < n; ++i) {
    const __m256 w0 = _mm256_set1_ps(p0[i]), w1 = _mm256_set1_ps(p1[i]);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      const __m256 x = in_register(_mm256_loadu_ps(v + i * stride + 8 * c));
      a0[c] = _mm256_fmadd_ps(w0, x, a0[c]);
      a1[c] = _mm256_fmadd_ps(w1, x, a1[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(o0 + 8 * c, a0[c]), _mm256_storeu_ps(o1 + 8 * c, a1[c]);
}

// The same for one token.
template <int NC>
void add_one(const float* p, const float* v, int64_t stride, int64_t n, float* o) {
  __m256 a[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) a[c] = _mm256_loadu_ps(o + 8 * c);
  for (int64_t i = 0; i < n; ++i) {
    const __m256 w = _mm256_set1_ps(p[i]);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) a[c] = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + i * stride + 8 * c), a[c]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(o + 8 * c, a[c]);
}

template <int NC>
void add_columns(const float* p0, const float* p1, int64_t n0, int64_t n1, const float* v, int64_t stride,
                 float* o0, float* o1) {
  const int64_t common = std::min(n0, n1);
  add_pair<NC>(p0, p1, v, stride, common, o0, o1);
  // Each token's own rest alone: its values keep ascending positions.
  if (n0 > common) add_one<NC>(p0 + common, v + common * stride, stride, n0 - common, o0);
  if (n1 > common) add_one<NC>(p1 + common, v + common * stride, stride, n1 - common, o1);
}

}  // namespace

void score_tokens_rows8(const float* q, int64_t q_stride, float* scores, int64_t score_stride, const int64_t* tokens,
                        const int64_t* n_valid, int64_t n_tokens, const float* k, int64_t width, int64_t head_dim,
                        float scale) {
  for (int64_t i = 0; i < n_tokens; i += 2) {
    const int64_t u = std::min(i + 1, n_tokens - 1);  // a lone last token pairs with itself
    const float* q0 = q + tokens[i] * q_stride;
    const float* q1 = q + tokens[u] * q_stride;
    float d0[8], d1[8];
    score_half(q0, q1, k, width, head_dim, d0, d1);
    score_half(q0, q1, k + 4 * width, width, head_dim, d0 + 4, d1 + 4);
    float* s0 = scores + tokens[i] * score_stride;
    for (int64_t j = 0; j < n_valid[i]; ++j) s0[j] = d0[j] * scale;
    if (u == i) continue;
    float* s1 = scores + tokens[u] * score_stride;
    for (int64_t j = 0; j < n_valid[u]; ++j) s1[j] = d1[j] * scale;
  }
}

void add_tokens_rows8(const float* p, int64_t p_stride, float* out, int64_t out_stride, const int64_t* tokens,
                      const int64_t* n, int64_t n_tokens, const float* v, int64_t width, int64_t head_dim) {
  for (int64_t i = 0; i < n_tokens; i += 2) {
    const int64_t u = i + 1 < n_tokens ? i + 1 : -1;
    const float* p0 = p + tokens[i] * p_stride;
    float* o0 = out + tokens[i] * out_stride;
    for (int64_t d = 0; d < head_dim;) {
      const int nc = static_cast<int>(std::min<int64_t>(4, (head_dim - d) / 8));
      if (u < 0) {
        switch (nc) {
          case 1: add_one<1>(p0, v + d, width, n[i], o0 + d); break;
          case 2: add_one<2>(p0, v + d, width, n[i], o0 + d); break;
          case 3: add_one<3>(p0, v + d, width, n[i], o0 + d); break;
          default: add_one<4>(p0, v + d, width, n[i], o0 + d); break;
        }
      } else {
        const float* p1 = p + tokens[u] * p_stride;
        float* o1 = out + tokens[u] * out_stride;
        switch (nc) {
          case 1: add_columns<1>(p0, p1, n[i], n[u], v + d, width, o0 + d, o1 + d); break;
          case 2: add_columns<2>(p0, p1, n[i], n[u], v + d, width, o0 + d, o1 + d); break;
          case 3: add_columns<3>(p0, p1, n[i], n[u], v + d, width, o0 + d, o1 + d); break;
          default: add_columns<4>(p0, p1, n[i], n[u], v + d, width, o0 + d, o1 + d); break;
        }
      }
      d += 8 * nc;
    }
  }
}

}  // namespace tc::kernels::detail

#else  // not x86-64 with these flags: never called

namespace tc::kernels::detail {
void score_tokens_rows8(const float*, int64_t, float*, int64_t, const int64_t*, const int64_t*, int64_t, const float*,
                        int64_t, int64_t, float) {}
void add_tokens_rows8(const float*, int64_t, float*, int64_t, const int64_t*, const int64_t*, int64_t, const float*,
                      int64_t, int64_t) {}
}  // namespace tc::kernels::detail

#endif
