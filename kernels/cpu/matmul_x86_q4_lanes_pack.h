// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): a
// tile of Q4_0 rows (or blocks with the same 16 bytes of nibble pairs)
// repacked into L1 with the rows in the vector lanes, as the lane GEMMs
// (matmul_x86_q4_lanes.h) read it.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/matmul_x86_lanes.h"
#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/quantize.h"

namespace tc::kernels::detail {
namespace {

// What levels stored plus kOffset add to a block's sum, kOffset * sum(x),
// from the activations' gs8 = 8 * sum(x) (kOffset 8, 12 or 16: exact).
template <int kOffset>
TC_SIMD_INLINE int32_t offset_sum(int32_t gs8) {
  static_assert(kOffset == 8 || kOffset == 12 || kOffset == 16, "offset_sum: 8, 12 or 16 times sum(x)");
  if constexpr (kOffset == 8) return gs8;
  if constexpr (kOffset == 12) return gs8 + gs8 / 2;
  return 2 * gs8;
}

// A tile of V::kRows rows x one chunk (up to 32 blocks), repacked once.
template <class V>
struct PackQ4Lanes {
  // Block i, step s: the rows' elements 4s..4s+3 (s < 4: low nibbles, else
  // high ones) as unsigned bytes 0..15, row j in 32-bit lane j.
  alignas(64) uint8_t q[kChunkBlocks32][8][4 * V::kRows];
  alignas(64) float dw[kChunkBlocks32][V::kRows];  // block i: the rows' scales
  alignas(64) float mw[kChunkBlocks32][V::kRows];  // block i: the rows' minimums (Q4_1 only)
};

// Repacks blocks [b0, b0 + nb) of V::kRows rows, 8 rows (one ymm) at a time.
// Each row's blocks are first copied whole into L1 (`stage`): read one
// block of every row after another, rows from memory kept only about 8
// cache lines in flight and ran at a quarter of the bandwidth a row read in
// one stream gets. The copy is a ymm loop: memcpy's `rep movsq` from the
// blocks' 2-byte-aligned rows was 3-5% slower at 8 tokens on the Xeon
// (on Zen 5 it measured no faster).
// Block: BlockQ4_0, or a block with the same 16 bytes of nibble pairs
// (qs) and a scale block_scale() turns into f32 (IQ4_NL's f16, MXFP4's
// E8M0), the f32 values the row kernels use.
template <class Block>
inline float block_scale(const Block& b) {
  if constexpr (requires { b.e; }) {
    return e8m0_to_f32_half(b.e);
  } else {
    return _cvtsh_ss(b.d);
  }
}

template <class V, class Block = BlockQ4_0>
inline void pack_q4_lanes(PackQ4Lanes<V>& p, const std::byte* const* w, int64_t b0, int64_t nb) {
  constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(Block));
  alignas(64) std::byte stage[V::kRows][kChunkBlocks32 * kBlockBytes];
  const int64_t n_bytes = nb * kBlockBytes;
  for (int r = 0; r < V::kRows; ++r) {
    const std::byte* src = w[r] + b0 * kBlockBytes;
    int64_t i = 0;
    for (; i + 32 <= n_bytes; i += 32) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(stage[r] + i),
                         _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    }
    if (i < n_bytes) std::memcpy(stage[r] + i, src + i, static_cast<size_t>(n_bytes - i));
  }
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int h = 0; h < V::kRows / 8; ++h) {
    const Block* blk[8];
    for (int r = 0; r < 8; ++r) blk[r] = reinterpret_cast<const Block*>(stage[8 * h + r]);
    auto row16 = [&](int r, int64_t i) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[r][i].qs)); };
    for (int64_t i = 0; i < nb; ++i) {
      // Rows 0-3 in the low 128 bits, 4-7 in the high; a 4 x 4 transpose of
      // their dwords per half leaves dword s of row j in lane j of d[s].
      const __m256i v0 = _mm256_set_m128i(row16(4, i), row16(0, i));
      const __m256i v1 = _mm256_set_m128i(row16(5, i), row16(1, i));
      const __m256i v2 = _mm256_set_m128i(row16(6, i), row16(2, i));
      const __m256i v3 = _mm256_set_m128i(row16(7, i), row16(3, i));
      const __m256i t0 = _mm256_unpacklo_epi32(v0, v1), t1 = _mm256_unpackhi_epi32(v0, v1);
      const __m256i t2 = _mm256_unpacklo_epi32(v2, v3), t3 = _mm256_unpackhi_epi32(v2, v3);
      const __m256i d[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                            _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
      for (int s = 0; s < 4; ++s) {
        // Byte j holds element j (low nibble) and j + 16 (high nibble).
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.q[i][s] + 32 * h), _mm256_and_si256(d[s], m4));
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.q[i][s + 4] + 32 * h),
                           _mm256_and_si256(_mm256_srli_epi16(d[s], 4), m4));
      }
      if constexpr (std::is_same_v<Block, BlockQ4_0>) {
        uint16_t dh[8];
        for (int r = 0; r < 8; ++r) dh[r] = blk[r][i].d;
        _mm256_store_ps(p.dw[i] + 8 * h, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dh))));
      } else {
        for (int r = 0; r < 8; ++r) p.dw[i][8 * h + r] = block_scale(blk[r][i]);
      }
    }
  }
}

}  // namespace
}  // namespace tc::kernels::detail
