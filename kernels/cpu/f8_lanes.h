// Internal to kernels/cpu: eight floats as one GCC vector value (F8) and
// the vectorized exp built on it, always inlined, so that each
// target_clones clone of the function that uses them (attend_chunk in
// ops_attention.cpp, swiglu in ops.cpp) vectorizes them for its own
// instruction set: a ymm register with FMA in the x86-64-v3 clone, two xmm
// without FMA in the baseline one. Every result depends only on the values,
// never on where in an array they sit, so any split of the work gives the
// same bits.
#pragma once

#include <limits>

namespace tc::kernels {
namespace {

// Eight floats as one value; the unaligned, may-alias twin loads and
// stores them from float arrays.
typedef float F8 __attribute__((vector_size(32)));
typedef float F8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef int I8v __attribute__((vector_size(32)));
// (Macros, not functions: a function passing F8 by value would take an ABI
// that differs between the clones.)
#define TC_LOAD8(p) (*reinterpret_cast<const F8u*>(p))
#define TC_STORE8(p, v) (*reinterpret_cast<F8u*>(p) = (v))

// x = exp(x) for eight floats x <= 88.37 (attention passes scores minus
// their maximum, <= 0), with the range reduction and polynomial of Cephes'
// expf (about 1 ulp): x = n ln2 + r with |r| <= ln2 / 2, exp(r) by a
// degree-7 polynomial, times 2^n built in the exponent bits (n <= 127 up
// to 88.37). Below -87.3 (exp under f32's normal range, -inf included) the
// result is 0.
inline __attribute__((always_inline)) void exp8_nonpositive(F8& x) {
  const F8 lo = F8{} - 87.3f;
  const I8v underflow = x < lo;
  x = x < lo ? lo : x;
  const F8 magic = F8{} + 0x1.8p23f;                     // adding it rounds to an integer
  const F8 n = (x * 1.44269504088896341f + magic) - magic;  // round(x / ln2)
  F8 r = x - n * 0.693359375f;                          // ln2 in two pieces: the first exact in n * ln2
  r = r + n * 2.12194440e-4f;
  F8 y = F8{} + 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  const I8v scale = (__builtin_convertvector(n, I8v) + 127) << 23;  // 2^n, -126 <= n <= 127
  const F8 e = y * __builtin_bit_cast(F8, scale);
  x = underflow ? F8{} : e;
}

// x = exp(x) for any eight floats: exp8_nonpositive's arithmetic up to
// 88.376 (where exp(x) is the largest finite f32), +inf above; NaN stays NaN.
inline __attribute__((always_inline)) void exp8(F8& x) {
  const F8 hi = F8{} + 88.3762626647949f;
  const I8v overflow = x > hi;
  x = x > hi ? hi : x;
  exp8_nonpositive(x);
  x = overflow ? F8{} + std::numeric_limits<float>::infinity() : x;
}

}  // namespace
}  // namespace tc::kernels
