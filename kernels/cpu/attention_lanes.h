// Internal to ops_attention.cpp: the register-level pieces of CPU
// attention, written with GCC vector extensions and always inlined, so that
// each target_clones clone of attend_chunk vectorizes them for its own
// instruction set (8 wide with FMA in the x86-64-v3 clone, 4 wide without
// in the baseline one): dot products of 8 K rows at once (dot8) or one
// (dot), the weighted sum of V rows held in registers (add_rows64,
// add_rows8, add_rows1), and the chunk softmax's exp and sum (chunk_exp). Each fixes
// its order of operations by n alone, so any split of the work gives the
// same bits (kernels/cpu/attention_f16_avx2.cpp repeats dot8 and
// add_rows64 operation for operation).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/cpu/f8_lanes.h"

namespace tc::kernels {
namespace {

// Dot product with 8 independent partial sums combined in a fixed tree:
// the order does not depend on anything but n, and the lanes vectorize.
// Inlined into attend_chunk's clones, so it vectorizes for each of them.
inline __attribute__((always_inline)) float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// Lanes of two F8 by index (0-7 the first, 8-15 the second).
#if defined(__clang__)
#define TC_SHUFFLE8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef int I8 __attribute__((vector_size(32)));
#define TC_SHUFFLE8(a, b, ...) __builtin_shuffle(a, b, I8{__VA_ARGS__})
#endif

// o[0..64) += p[i] * v[i * v_stride + 0..64) for i < n, i ascending, with
// o in eight named vectors (registers) across the rows: the same operations
// per value as the scalar loop below, in the same order.
inline __attribute__((always_inline)) void add_rows64(const float* __restrict p, const float* __restrict v,
                                                      int64_t v_stride, int64_t n, float* __restrict o) {
  F8 a0 = TC_LOAD8(o), a1 = TC_LOAD8(o + 8), a2 = TC_LOAD8(o + 16), a3 = TC_LOAD8(o + 24);
  F8 a4 = TC_LOAD8(o + 32), a5 = TC_LOAD8(o + 40), a6 = TC_LOAD8(o + 48), a7 = TC_LOAD8(o + 56);
  for (int64_t i = 0; i < n; ++i) {
    const float pi = p[i];
    const F8 pv = {pi, pi, pi, pi, pi, pi, pi, pi};
    const float* vi = v + i * v_stride;
    a0 += pv * TC_LOAD8(vi);
    a1 += pv * TC_LOAD8(vi + 8);
    a2 += pv * TC_LOAD8(vi + 16);
    a3 += pv * TC_LOAD8(vi + 24);
    a4 += pv * TC_LOAD8(vi + 32);
    a5 += pv * TC_LOAD8(vi + 40);
    a6 += pv * TC_LOAD8(vi + 48);
    a7 += pv * TC_LOAD8(vi + 56);
  }
  TC_STORE8(o, a0), TC_STORE8(o + 8, a1), TC_STORE8(o + 16, a2), TC_STORE8(o + 24, a3);
  TC_STORE8(o + 32, a4), TC_STORE8(o + 40, a5), TC_STORE8(o + 48, a6), TC_STORE8(o + 56, a7);
}

// o[0..8) += p[i] * v[i * v_stride + 0..8), i ascending: add_rows64's
// operations for one vector (the tail of a head size that is a multiple of
// 8 but not of 64; add_rows1's loop would be vectorized over i by the
// compiler, products first and their sum in order, which are other bits).
inline __attribute__((always_inline)) void add_rows8(const float* __restrict p, const float* __restrict v,
                                                     int64_t v_stride, int64_t n, float* __restrict o) {
  F8 a = TC_LOAD8(o);
  for (int64_t i = 0; i < n; ++i) {
    const float pi = p[i];
    const F8 pv = {pi, pi, pi, pi, pi, pi, pi, pi};
    a += pv * TC_LOAD8(v + i * v_stride);
  }
  TC_STORE8(o, a);
}

// dot() of q with 8 rows k + i * k_stride (i < 8) at once, n a multiple of
// 8: each row's 8 partial sums (lane l over d = l mod 8, ascending d, as
// dot()'s loop) are reduced by dot()'s tree ((l0 + l4) + (l1 + l5)) + ((l2 +
// l6) + (l3 + l7)), the 8 rows' trees evaluated side by side in vectors
// instead of one row's lanes at a time. Same operations, so the same bits.
inline __attribute__((always_inline)) void dot8(const float* __restrict q, const float* __restrict k,
                                                int64_t k_stride, int64_t n, float* __restrict out) {
  F8 a[8] = {};
  for (int64_t d = 0; d < n; d += 8) {
    const F8 qv = TC_LOAD8(q + d);
    for (int i = 0; i < 8; ++i) a[i] += qv * TC_LOAD8(k + i * k_stride + d);
  }
  // b(i) = lanes 0-3 + lanes 4-7 of a[i]; two rows per vector.
  F8 b[4];
  for (int i = 0; i < 4; ++i) {
    b[i] = TC_SHUFFLE8(a[2 * i], a[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11) +
           TC_SHUFFLE8(a[2 * i], a[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15);
  }
  // Pairwise sums of neighbouring lanes, twice: (b0 + b1) + (b2 + b3) per row.
#define TC_EVEN 0, 2, 8, 10, 4, 6, 12, 14
#define TC_ODD 1, 3, 9, 11, 5, 7, 13, 15
  const F8 c0 = TC_SHUFFLE8(b[0], b[1], TC_EVEN) + TC_SHUFFLE8(b[0], b[1], TC_ODD);  // rows 0, 2 | 1, 3
  const F8 c1 = TC_SHUFFLE8(b[2], b[3], TC_EVEN) + TC_SHUFFLE8(b[2], b[3], TC_ODD);  // rows 4, 6 | 5, 7
  const F8 e = TC_SHUFFLE8(c0, c1, TC_EVEN) + TC_SHUFFLE8(c0, c1, TC_ODD);          // rows 0, 2, 4, 6, 1, 3, 5, 7
#undef TC_EVEN
#undef TC_ODD
  TC_STORE8(out, TC_SHUFFLE8(e, e, 0, 4, 1, 5, 2, 6, 3, 7));
}

// p[0, n) = exp(p - m) with m = max p[0, n), n >= 1: returns m and sets
// `sum` to the sum of the exps, taken in double (as ggml_vec_soft_max_f32,
// so long contexts lose nothing to the accumulation) in eight lanes combined
// in a fixed tree. Eight scores per step; the last partial step runs on a
// copy padded with -inf (exp 0, which adds nothing). Every operation depends
// only on n and the values.
inline __attribute__((always_inline)) float chunk_exp(float* p, int64_t n, double& sum) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  F8 vmax = F8{} + neg_inf;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const F8 v = TC_LOAD8(p + j);
    vmax = vmax > v ? vmax : v;
  }
  float max = neg_inf;
  for (int l = 0; l < 8; ++l) max = std::max(max, vmax[l]);
  for (; j < n; ++j) max = std::max(max, p[j]);
  typedef float F4 __attribute__((vector_size(16)));
  typedef double D4 __attribute__((vector_size(32)));
  D4 sum_lo{}, sum_hi{};
  auto exp_and_add = [&](float* q) {
    F8 e = TC_LOAD8(q) - max;
    exp8_nonpositive(e);
    TC_STORE8(q, e);
    const F4 e_lo{e[0], e[1], e[2], e[3]}, e_hi{e[4], e[5], e[6], e[7]};
    sum_lo += __builtin_convertvector(e_lo, D4);
    sum_hi += __builtin_convertvector(e_hi, D4);
  };
  for (j = 0; j + 8 <= n; j += 8) exp_and_add(p + j);
  if (j < n) {
    float tail[8];
    for (int l = 0; l < 8; ++l) tail[l] = j + l < n ? p[j + l] : neg_inf;
    exp_and_add(tail);
    for (int l = 0; j + l < n; ++l) p[j + l] = tail[l];
  }
  const D4 s = sum_lo + sum_hi;
  sum = (s[0] + s[2]) + (s[1] + s[3]);
  return max;
}

#undef TC_LOAD8
#undef TC_STORE8
#undef TC_SHUFFLE8

// The same for one output value (head sizes that are not a multiple of 8).
inline __attribute__((always_inline)) void add_rows1(const float* __restrict p, const float* __restrict v,
                                                     int64_t v_stride, int64_t n, float* __restrict o) {
  float acc = *o;
  for (int64_t i = 0; i < n; ++i) acc += p[i] * v[i * v_stride];
  *o = acc;
}

}  // namespace
}  // namespace tc::kernels
