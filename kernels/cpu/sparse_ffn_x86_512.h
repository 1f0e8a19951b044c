// Internal to sparse_ffn_avx512.cpp: one-token axpy tiles of 128 columns in
// zmm registers for F16, Q8_0 and Q4_0 (sparse_ffn_x86.h's Wide hook). Each
// column gets the operations of the 64-column ymm tile in the same order
// (its exact f32 weight, then one FMA per nonzero activation), so the bits
// are the same; half the instructions per weight. Q4_0 finds a weight's
// value in a 16-entry table per block, (q - 8) * d for q = 0..15, by one
// vpermps (whose index is the low 4 bits of each lane: the low nibble needs
// no mask), instead of a conversion and a multiply per weight.
#pragma once

#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "sparse_ffn_x86_512.h needs -mavx512f -mavx512bw"
#endif

#include <type_traits>

#include "kernels/cpu/sparse_ffn_x86.h"

namespace tc::kernels::detail {
namespace {

constexpr int64_t kWideTile = 128;  // columns per zmm tile: 8 vectors of 16

// GCC 12's unmasked forms of these read an undefined vector and warn
// (-Wmaybe-uninitialized); the zero-masked forms keeping every lane are the
// same instructions.
constexpr __mmask16 kAll = 0xffff;
TC_AXPY_INLINE __m512 f16_to_f32(__m256i v) { return _mm512_maskz_cvtph_ps(kAll, v); }
TC_AXPY_INLINE __m512 i32_to_f32(__m512i v) { return _mm512_maskz_cvtepi32_ps(kAll, v); }
TC_AXPY_INLINE __m512i i8_to_i32(__m128i v) { return _mm512_maskz_cvtepi8_epi32(kAll, v); }
TC_AXPY_INLINE __m512i u8_to_i32(__m128i v) { return _mm512_maskz_cvtepu8_epi32(kAll, v); }
TC_AXPY_INLINE __m512 lookup(__m512i index, __m512 table) { return _mm512_maskz_permutexvar_ps(kAll, index, table); }
TC_AXPY_INLINE __m512i shift_right(__m512i v, unsigned n) { return _mm512_maskz_srli_epi32(kAll, v, n); }

// Columns [c + 32q, c + 32q + 32) of a row as two zmm: q-th 32-column
// quarter of the tile at c (c a multiple of 128).
struct Deq512F16 {
  static TC_AXPY_INLINE void quarter(const std::byte* row, int64_t c, int q, __m512* w) {
    const auto* p = reinterpret_cast<const uint16_t*>(row) + c + 32 * q;
    w[0] = f16_to_f32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    w[1] = f16_to_f32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)));
  }
};

struct Deq512Q8_0 {
  static TC_AXPY_INLINE void quarter(const std::byte* row, int64_t c, int q, __m512* w) {
    const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(row)[c / 32 + q];
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(blk.d));
    // q * d is exact (8 x 11 significant bits), as DeqQ8_0's.
    const auto* qs = reinterpret_cast<const __m128i*>(blk.qs);
    w[0] = _mm512_mul_ps(i32_to_f32(i8_to_i32(_mm_loadu_si128(qs))), d);
    w[1] = _mm512_mul_ps(i32_to_f32(i8_to_i32(_mm_loadu_si128(qs + 1))), d);
  }
};

struct Deq512Q4_0 {
  static TC_AXPY_INLINE void quarter(const std::byte* row, int64_t c, int q, __m512* w) {
    const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(row)[c / 32 + q];
    const __m512 minus_8_to_7 = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    // (q - 8) * d exactly (at most 15 significant bits): DeqQ4_0's value.
    const __m512 table = _mm512_mul_ps(minus_8_to_7, _mm512_set1_ps(_cvtsh_ss(blk.d)));
    // Byte i holds element i (low nibble) and element 16 + i (high).
    const __m512i b = u8_to_i32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs)));
    w[0] = lookup(b, table);
    w[1] = lookup(shift_right(b, 4), table);
  }
};

// The zmm tile of D (a sparse_ffn_x86.h dequantizer), where there is one.
template <class D>
struct Zmm {
  using Quarter = void;
};
template <>
struct Zmm<DeqF16> {
  using Quarter = Deq512F16;
};
template <>
struct Zmm<DeqQ8_0> {
  using Quarter = Deq512Q8_0;
};
template <>
struct Zmm<DeqQ4_0> {
  using Quarter = Deq512Q4_0;
};

// One token: y[c..c+128) (y points at column c) += the group's rows.
template <class D>
struct ZmmTiles {
  using Quarter = typename Zmm<D>::Quarter;
  static constexpr int64_t kColumns = std::is_void_v<Quarter> ? 0 : kWideTile;
  static TC_AXPY_INLINE void tile_one_token(const Group& g, const Group& next, int64_t c, float* y) {
    if constexpr (kColumns > 0) {
      __m512 acc[8];
      for (int v = 0; v < 8; ++v) acc[v] = _mm512_loadu_ps(y + 16 * v);
      for (int i = 0; i < g.n; ++i) {
        if (i < next.n) {
          prefetch_tile<D>(next.row[i], c);
          prefetch_tile<D>(next.row[i], c + kTile);
        }
        const __m512 ak = _mm512_set1_ps(g.a[0][i]);
        for (int q = 0; q < 4; ++q) {
          __m512 w[2];
          Quarter::quarter(g.row[i], c, q, w);
          acc[2 * q] = _mm512_fmadd_ps(ak, w[0], acc[2 * q]);
          acc[2 * q + 1] = _mm512_fmadd_ps(ak, w[1], acc[2 * q + 1]);
        }
      }
      for (int v = 0; v < 8; ++v) _mm512_storeu_ps(y + 16 * v, acc[v]);
    }
  }
};

}  // namespace
}  // namespace tc::kernels::detail
