// Internal to sparse_ffn_avx512.cpp: one-token axpy tiles of 128 columns in
// zmm registers for F16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 (sparse_ffn_x86.h's
// Wide hook). Each column gets the operations of the 64-column ymm tile in
// the same order (its exact f32 weight, then one FMA per nonzero
// activation), so the bits are the same; half the instructions per weight.
// The 4- and 5-bit types find a weight's value in a table per block (Q4_0:
// (q - 8) * d for q = 0..15) by one vpermps (whose index is the low 4 bits
// of each lane: the low nibble needs no mask), instead of a conversion and
// a multiply per weight.
#pragma once

#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "sparse_ffn_x86_512.h needs -mavx512f -mavx512bw"
#endif

#include <algorithm>
#include <cstring>
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
TC_AXPY_INLINE __m512i shift_right(__m512i v, unsigned n) { return _mm512_maskz_srli_epi32(kAll, v, n); }

// Columns [32q, 32q + 32) of a 128-column tile of a row (`tile`: its
// first byte) as two zmm. The block types take their block's scale (d)
// and offset (m) as f32 in memory (from block_scales_f32), so that a
// broadcast load replaces an f16 insert, conversion and register broadcast
// on the vector ports per block and row.
struct Deq512F16 {
  static constexpr int64_t kBlockBytes = 0;  // no scales
  static constexpr bool kMins = false;
  static TC_AXPY_INLINE void quarter(const std::byte* tile, int q, const float*, const float*, __m512* w) {
    const auto* p = reinterpret_cast<const uint16_t*>(tile) + 32 * q;
    w[0] = f16_to_f32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    w[1] = f16_to_f32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)));
  }
};

struct Deq512Q8_0 {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);
  static constexpr bool kMins = false;
  static TC_AXPY_INLINE void quarter(const std::byte* tile, int q, const float* d, const float*, __m512* w) {
    const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(tile)[q];
    const __m512 vd = _mm512_set1_ps(*d);
    // q * d is exact (8 x 11 significant bits), as DeqQ8_0's.
    const auto* qs = reinterpret_cast<const __m128i*>(blk.qs);
    w[0] = _mm512_mul_ps(i32_to_f32(i8_to_i32(_mm_loadu_si128(qs))), vd);
    w[1] = _mm512_mul_ps(i32_to_f32(i8_to_i32(_mm_loadu_si128(qs + 1))), vd);
  }
};

// The values of q = first .. first + 15 times d: exact for the block
// types' codes (at most 5 x 11 significant bits).
// (first is a constant at every call: the vector of codes folds to one.)
TC_AXPY_INLINE __m512 levels(float first, float d) {
  const float f = first;
  const __m512 codes = _mm512_setr_ps(f, f + 1, f + 2, f + 3, f + 4, f + 5, f + 6, f + 7, f + 8, f + 9, f + 10,
                                      f + 11, f + 12, f + 13, f + 14, f + 15);
  return _mm512_mul_ps(codes, _mm512_set1_ps(d));
}

// Elements 0-15 and 16-31 of a block whose byte i of qs holds element i
// (low nibble) and element 16 + i (high), looked up in table.
TC_AXPY_INLINE void lookup_nibbles(const uint8_t* qs, __m512 table, __m512* w) {
  const __m512i b = u8_to_i32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  w[0] = _mm512_maskz_permutexvar_ps(kAll, b, table);
  w[1] = _mm512_maskz_permutexvar_ps(kAll, shift_right(b, 4), table);
}

// The same for five-bit codes, whose fifth bits are bits 0-15 (elements
// 0-15) and 16-31 of qh: set into the index under a lane mask, bit 4 of
// the index picks table hi over lo (vpermt2ps).
TC_AXPY_INLINE void lookup_five_bits(const uint8_t* qs, const uint8_t* qh_bytes, __m512 lo, __m512 hi, __m512* w) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof qh);
  const __m512i b = u8_to_i32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m512i sixteen = _mm512_set1_epi32(16);
  const __m512i low = _mm512_maskz_and_epi32(kAll, b, _mm512_set1_epi32(0x0f));
  const __m512i high = shift_right(b, 4);
  const __m512i i0 = _mm512_mask_or_epi32(low, static_cast<__mmask16>(qh & 0xffff), low, sixteen);
  const __m512i i1 = _mm512_mask_or_epi32(high, static_cast<__mmask16>(qh >> 16), high, sixteen);
  w[0] = _mm512_maskz_permutex2var_ps(kAll, lo, i0, hi);
  w[1] = _mm512_maskz_permutex2var_ps(kAll, lo, i1, hi);
}

// Q4_0: (q - 8) * d; Q5_0: (q - 16) * d, as DeqQ4_0's and DeqQ5_0's.
struct Deq512Q4_0 {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_0);
  static constexpr bool kMins = false;
  static TC_AXPY_INLINE void quarter(const std::byte* tile, int q, const float* d, const float*, __m512* w) {
    lookup_nibbles(reinterpret_cast<const BlockQ4_0*>(tile)[q].qs, levels(-8.0f, *d), w);
  }
};

struct Deq512Q5_0 {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);
  static constexpr bool kMins = false;
  static TC_AXPY_INLINE void quarter(const std::byte* tile, int q, const float* d, const float*, __m512* w) {
    const BlockQ5_0& blk = reinterpret_cast<const BlockQ5_0*>(tile)[q];
    lookup_five_bits(blk.qs, blk.qh, levels(-16.0f, *d), levels(0.0f, *d), w);
  }
};

// Q4_1 and Q5_1: q * d + m (the product exact, one rounding in the add),
// as DeqOffset32's.
template <class Block, bool kFive>
struct Deq512Offset {
  static constexpr int64_t kBlockBytes = sizeof(Block);
  static constexpr bool kMins = true;
  static TC_AXPY_INLINE void quarter(const std::byte* tile, int q, const float* d, const float* m, __m512* w) {
    const Block& blk = reinterpret_cast<const Block*>(tile)[q];
    const __m512 vm = _mm512_set1_ps(*m);
    const __m512 lo = _mm512_add_ps(levels(0.0f, *d), vm);
    if constexpr (kFive) {
      lookup_five_bits(blk.qs, blk.qh, lo, _mm512_add_ps(levels(16.0f, *d), vm), w);
    } else {
      lookup_nibbles(blk.qs, lo, w);
    }
  }
};

// Blocks per column chunk whose scales are converted at once: 8192 columns.
constexpr int64_t kScaleBlocks = 256;

// The f16 scales (each block's first two bytes) of blocks [b0, b0 + nb) of
// a row of kBlockBytes-byte blocks, as f32 into out (nb <= kScaleBlocks;
// out holds nb rounded up to 16, the rest zero). Four scales are assembled
// in a general-purpose register and 16 converted by one instruction (as
// matmul's block_scales): per block, one scalar load and shift on the
// integer ports instead of an insert and a conversion on the vector ones.
template <int64_t kBlockBytes, int64_t kOffset = 0>
TC_AXPY_INLINE void block_scales_f32(const std::byte* row, int64_t b0, int64_t nb, float* out) {
  const std::byte* p = row + b0 * kBlockBytes + kOffset;
  const auto scale = [p](int64_t b) __attribute__((always_inline)) {
    uint16_t h;
    std::memcpy(&h, p + b * kBlockBytes, sizeof h);
    return uint64_t{h};
  };
  for (int64_t k = 0; k < nb; k += 16) {
    uint64_t q[4] = {0, 0, 0, 0};
    if (k + 16 <= nb) {
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) q[j / 4] |= scale(k + j) << (16 * (j % 4));
    } else {
      for (int j = 0; k + j < nb; ++j) q[j / 4] |= scale(k + j) << (16 * (j % 4));
    }
    const __m256i h = _mm256_setr_epi64x(static_cast<long long>(q[0]), static_cast<long long>(q[1]),
                                         static_cast<long long>(q[2]), static_cast<long long>(q[3]));
    _mm512_store_ps(out + k, f16_to_f32(h));
  }
}

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
template <>
struct Zmm<DeqQ4_1> {
  using Quarter = Deq512Offset<BlockQ4_1, false>;
};
template <>
struct Zmm<DeqQ5_1> {
  using Quarter = Deq512Offset<BlockQ5_1, true>;
};
template <>
struct Zmm<DeqQ5_0> {
  using Quarter = Deq512Q5_0;
};

// One-token groups in tiles of 128 columns (sparse_ffn_x86.h's Wide hook).
template <class D>
struct ZmmTiles {
  using Quarter = typename Zmm<D>::Quarter;

  // f32 scales (d) and offsets (m: Q4_1, Q5_1) of the group's rows over a
  // column chunk: [row][block - the chunk's first].
  struct Scales {
    float d[kGroupRowsOne][kScaleBlocks];
    float m[kGroupRowsOne][kScaleBlocks];
  };

  // Columns [c, c_end) of y (y at column 0; whole tiles) += the group's
  // rows, each row's scales from s[i][0] on (s starts at column c). The rows
  // are walked by pointer: with offsets recomputed per row and tile, the
  // compiler ran out of general-purpose registers. kRows > 0: g.n ==
  // kRows, known when compiling (a full group, unrolled as
  // tile_one_token's); 0: g.n at run time.
  template <int kRows>
  static TC_AXPY_INLINE void tiles(const Group& g, const Group& next, int64_t c, int64_t c_end, const Scales& s,
                                   float* y) {
    constexpr int64_t kTileBytes = D::byte_of(kWideTile);
    const int n = kRows > 0 ? kRows : g.n;
    const std::byte* row[kGroupRowsOne];
    const char* ahead[kGroupRowsOne];  // the next group's row i (this group's where it has fewer)
    for (int i = 0; i < n; ++i) {
      row[i] = g.row[i] + D::byte_of(c);
      ahead[i] = reinterpret_cast<const char*>((i < next.n ? next.row[i] : g.row[i]) + D::byte_of(c));
    }
    for (int64_t sb = 0; c < c_end; c += kWideTile, sb += 4) {
      __m512 acc[8];
      for (int v = 0; v < 8; ++v) acc[v] = _mm512_loadu_ps(y + c + 16 * v);
#pragma GCC unroll 4
      for (int i = 0; i < n; ++i) {
        for (int64_t b = 0; b < kTileBytes; b += 64) _mm_prefetch(ahead[i] + b, _MM_HINT_T1);
        const __m512 ak = _mm512_set1_ps(g.a[0][i]);
        for (int q = 0; q < 4; ++q) {
          __m512 w[2];
          Quarter::quarter(row[i], q, &s.d[i][sb + q], &s.m[i][sb + q], w);
          acc[2 * q] = _mm512_fmadd_ps(ak, w[0], acc[2 * q]);
          acc[2 * q + 1] = _mm512_fmadd_ps(ak, w[1], acc[2 * q + 1]);
        }
        row[i] += kTileBytes;
        ahead[i] += kTileBytes;
      }
      for (int v = 0; v < 8; ++v) _mm512_storeu_ps(y + c + 16 * v, acc[v]);
    }
  }

  static int64_t run(const Group& g, const Group& next, int64_t c, int64_t j1, float* y) {
    if constexpr (std::is_void_v<Quarter>) {
      return c;
    } else {
      alignas(64) Scales s;
      while (c + kWideTile <= j1) {
        const int64_t n_tiles = std::min((j1 - c) / kWideTile, kScaleBlocks * 32 / kWideTile);
        const int64_t c_end = c + n_tiles * kWideTile;
        if constexpr (Quarter::kBlockBytes > 0) {
          for (int i = 0; i < g.n; ++i) {
            block_scales_f32<Quarter::kBlockBytes>(g.row[i], c / 32, n_tiles * 4, s.d[i]);
            if constexpr (Quarter::kMins) {
              block_scales_f32<Quarter::kBlockBytes, 2>(g.row[i], c / 32, n_tiles * 4, s.m[i]);
            }
          }
        }
        if (g.n == kGroupRowsOne) {
          tiles<kGroupRowsOne>(g, next, c, c_end, s, y);
        } else {
          tiles<0>(g, next, c, c_end, s, y);
        }
        c = c_end;
      }
      return c;
    }
  }
};

}  // namespace
}  // namespace tc::kernels::detail
