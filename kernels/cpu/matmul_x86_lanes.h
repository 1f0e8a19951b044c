// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// vector types of the GEMMs with weight rows in the vector lanes
// (matmul_x86_q4_lanes.h, matmul_x86_q8_lanes.h), one row per 32-bit lane:
// LaneVec8 (ymm, AVX2 and up) and LaneVec16 (zmm, the avx512 variant). A
// kernel written once over these runs every row through the same
// operations whatever the width, so the width changes no bit.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_common.h"

namespace tc::kernels::detail {
namespace {

// The vector a tile's rows share, one row per 32-bit lane: 8 rows in a ymm.
struct LaneVec8 {
  static constexpr int kRows = 8;
  // Tokens per micro-kernel: 8 int16 sums, the step's weights and a
  // broadcast fit the 16 AVX2 registers.
  static constexpr int kTokens = 4;
  static constexpr int kTokensInPlace = 8;  // reading Q4_0Lanes16 tiles in place (4: as fast)
  using I = __m256i;
  using F = __m256;
  static I load_i(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }
  static I set1_i(int32_t v) { return _mm256_set1_epi32(v); }
  static I zero_i() { return _mm256_setzero_si256(); }
  static I sub_i(I a, I b) { return _mm256_sub_epi32(a, b); }
#if defined(TC_MATMUL_VNNI)
  static I dot_acc(I acc, I u, I s) { return _mm256_dpbusd_epi32(acc, u, s); }
#endif
  static F load_f(const float* p) { return _mm256_load_ps(p); }
  static F loadu_f(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu_f(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1_f(float v) { return _mm256_set1_ps(v); }
  static F zero_f() { return _mm256_setzero_ps(); }
  static F add_f(F a, F b) { return _mm256_add_ps(a, b); }
  static F mul_f(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fma_f(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F cvt_f(I v) { return _mm256_cvtepi32_ps(v); }
  static F cvt_ph(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  // The low / high nibble of every byte, as bytes 0..15.
  static I lo_nibbles(I v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0f)); }
  static I hi_nibbles(I v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f)); }
};

#if defined(__AVX512F__) && defined(TC_MATMUL_VNNI)
// 16 rows in a zmm (the avx512 variant): twice the rows per vpdpbusd and per
// float step, for the same activation broadcasts. (8 tokens per
// micro-kernel measured no faster than 4.)
struct LaneVec16 {
  static constexpr int kRows = 16;
  static constexpr int kTokens = 4;
  static constexpr int kTokensInPlace = 8;
  using I = __m512i;
  using F = __m512;
  static I load_i(const void* p) { return _mm512_load_si512(p); }
  static I set1_i(int32_t v) { return _mm512_set1_epi32(v); }
  static I zero_i() { return _mm512_setzero_si512(); }
  static I sub_i(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I dot_acc(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static F load_f(const float* p) { return _mm512_load_ps(p); }
  static F loadu_f(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu_f(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F set1_f(float v) { return _mm512_set1_ps(v); }
  static F zero_f() { return _mm512_setzero_ps(); }
  static F add_f(F a, F b) { return _mm512_add_ps(a, b); }
  static F mul_f(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fma_f(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  // The zero-masked form: GCC 12's _mm512_cvtepi32_ps reads an undefined
  // vector and warns (-Wmaybe-uninitialized); with every lane kept it is the
  // same conversion.
  static F cvt_f(I v) { return _mm512_maskz_cvtepi32_ps(0xffff, v); }
  static F cvt_ph(const uint16_t* p) {  // zero-masked for GCC 12, as cvt_f
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static I lo_nibbles(I v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0f)); }
  static I hi_nibbles(I v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f)); }
};
#endif

}  // namespace
}  // namespace tc::kernels::detail
