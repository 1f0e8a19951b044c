// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// vector types of the GEMMs with weight rows in the vector lanes
// (matmul_x86_q4_lanes.h, matmul_x86_q8_lanes.h), one row per 32-bit lane:
// LaneVec8 (ymm, AVX2 and up) and LaneVec16 (zmm, the avx512 variant). A
// kernel written once over these runs every row through the same
// operations whatever the width, so the width changes no bit.
#pragma once

#include <immintrin.h>

#include <cstddef>
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
  static I add_i(I a, I b) { return _mm256_add_epi32(a, b); }
#if defined(TC_MATMUL_VNNI)
  static I dot_acc(I acc, I u, I s) { return _mm256_dpbusd_epi32(acc, u, s); }
#endif
  // acc + each lane's 4 products w * x, w signed with magnitudes m (|w| <=
  // 127): m times x with w's sign (AVX2: the int16 pair sums widened).
  static I signed_dot_acc(I acc, I m, I w, I x) {
#if defined(TC_MATMUL_VNNI)
    return _mm256_dpbusd_epi32(acc, m, _mm256_sign_epi8(x, w));
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(m, _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1)));
#endif
  }
  // Bytes stored as w + 128 (Q8_0Lanes16) back to the signed w, and |w|
  // (|-128| reads as the unsigned 128).
  static I unbias_bytes(I v) { return _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))); }
  static I abs_bytes(I v) { return _mm256_abs_epi8(v); }
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
#if !defined(TC_MATMUL_VNNI)
  // Without VNNI (matmul_x86_q4_lanes.h): a step's unsigned x signed byte
  // products as int16 pair sums added to `pairs`, then each lane's int32.
  static I add_pairs(I pairs, I u, I s) { return _mm256_add_epi16(pairs, _mm256_maddubs_epi16(u, s)); }
  static I pairs_to_sums(I pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }
  // Pins the value in a register at this point (see lane_block_sums).
  static void keep(I& v) { asm("" : "+x"(v)); }
#endif
};

#if !defined(TC_MATMUL_VNNI)
// A whole 16-row tile of Q4_0Lanes16 or Q8_0Lanes16 in two ymm (AVX2 without VNNI): rows
// 0-7 in `lo`, 8-15 in `hi`, each with LaneVec8's operations, so a row sees
// the same bits as in an 8-row half. One or two tokens then read each
// 64-byte line of the tile once and broadcast each activation step once for
// both halves, where two LaneVec8 passes did both twice.
struct LaneVec8x2 {
  static constexpr int kRows = 16;
  // Tokens per in-place pass: pair sums of 4 tokens (8 ymm), the weights (2)
  // and a broadcast take 11 of the 16 ymm. From L2 on a Zen 3 core, 4 tokens
  // took 58 us per 512 x 2048 matrix here against 70 in two LaneVec8 halves,
  // and 8 tokens as two such passes 116 against 158 in one 8-token pass.
  static constexpr int kTokensInPlace = 4;
  // Tokens per pass of the GEMM over a tile repacked into L1
  // (matmul_x86_q4_lanes_gemm_avx2.h: with both halves' sums and chains,
  // 2 fill the 16 ymm as LaneVec8's 4 do).
  static constexpr int kTokens = 2;
  struct I {
    __m256i lo, hi;
  };
  struct F {
    __m256 lo, hi;
  };
  using H = LaneVec8;
  static I load_i(const void* p) {
    const auto* b = static_cast<const std::byte*>(p);
    return {H::load_i(b), H::load_i(b + 32)};
  }
  static I set1_i(int32_t v) {
    const __m256i x = H::set1_i(v);
    return {x, x};
  }
  static I zero_i() { return {H::zero_i(), H::zero_i()}; }
  static I sub_i(I a, I b) { return {H::sub_i(a.lo, b.lo), H::sub_i(a.hi, b.hi)}; }
  static I add_i(I a, I b) { return {H::add_i(a.lo, b.lo), H::add_i(a.hi, b.hi)}; }
  static F load_f(const float* p) { return {H::load_f(p), H::load_f(p + 8)}; }
  static F loadu_f(const float* p) { return {H::loadu_f(p), H::loadu_f(p + 8)}; }
  static void storeu_f(float* p, F v) {
    H::storeu_f(p, v.lo);
    H::storeu_f(p + 8, v.hi);
  }
  static F set1_f(float v) {
    const __m256 x = H::set1_f(v);
    return {x, x};
  }
  static F zero_f() { return {H::zero_f(), H::zero_f()}; }
  static F add_f(F a, F b) { return {H::add_f(a.lo, b.lo), H::add_f(a.hi, b.hi)}; }
  static F mul_f(F a, F b) { return {H::mul_f(a.lo, b.lo), H::mul_f(a.hi, b.hi)}; }
  static F fma_f(F a, F b, F c) { return {H::fma_f(a.lo, b.lo, c.lo), H::fma_f(a.hi, b.hi, c.hi)}; }
  static F cvt_f(I v) { return {H::cvt_f(v.lo), H::cvt_f(v.hi)}; }
  static F cvt_ph(const uint16_t* p) { return {H::cvt_ph(p), H::cvt_ph(p + 8)}; }
  static I lo_nibbles(I v) { return {H::lo_nibbles(v.lo), H::lo_nibbles(v.hi)}; }
  static I hi_nibbles(I v) { return {H::hi_nibbles(v.lo), H::hi_nibbles(v.hi)}; }
  static I add_pairs(I pairs, I u, I s) {
    return {H::add_pairs(pairs.lo, u.lo, s.lo), H::add_pairs(pairs.hi, u.hi, s.hi)};
  }
  static I pairs_to_sums(I pairs) { return {H::pairs_to_sums(pairs.lo), H::pairs_to_sums(pairs.hi)}; }
  static I signed_dot_acc(I acc, I m, I w, I x) {
    return {H::signed_dot_acc(acc.lo, m.lo, w.lo, x.lo), H::signed_dot_acc(acc.hi, m.hi, w.hi, x.hi)};
  }
  static I unbias_bytes(I v) { return {H::unbias_bytes(v.lo), H::unbias_bytes(v.hi)}; }
  static I abs_bytes(I v) { return {H::abs_bytes(v.lo), H::abs_bytes(v.hi)}; }
  static void keep(I& v) {
    H::keep(v.lo);
    H::keep(v.hi);
  }
};
#endif

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
