// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): the
// kernels for the 32-element block formats Q4_1, Q5_0, Q5_1 and IQ4_NL
// against Q8_32 activations (matmul_kernels.h; MXFP4: matmul_x86_mxfp4.h),
// in the framework of
// matmul_x86_quant.h (Ops: prepare / unit / finish per chunk of blocks).
//
// Per block, the weights' quants meet x's int8 in exact int32 lane sums
// (dot_u8s8: 8 lanes of 4 products), converted and added by one FMA with
// the block's dw * dx. The offset formats (x = d q + m; Q5_0 is one with
// m = -16 d) add their m dx sum(xq) per 8 blocks in `finish`, to the odd
// chain. Every path (decode, gathered rows, small batches, GEMM tiles) runs
// these through quant_chunk in the same order, so an output's bits depend
// on dtype and n_in only.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

// The f16 field `Field` of up to 8 consecutive blocks as f32, zeros after
// nb: block_scales for any f16 member, assembled in general-purpose
// registers the same way (narrow stores read back as one vector would stall
// store-to-load forwarding).
template <class Block, uint16_t Block::*Field>
TC_SIMD_INLINE __m256 block_f16s(const Block* blk, int64_t nb) {
  uint64_t half[2] = {0, 0};
  auto put = [&](int64_t i) __attribute__((always_inline)) { half[i / 4] |= uint64_t{blk[i].*Field} << (16 * (i % 4)); };
  if (nb == 8) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; ++i) put(i);
  } else {
    for (int64_t i = 0; i < nb; ++i) put(i);
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(half[1]), static_cast<long long>(half[0])));
}

// The 32 nibbles of a block packed as Q4_0's (qs[j]: element j low,
// element j + 16 high) as unsigned bytes in element order.
TC_SIMD_INLINE __m256i nibbles32(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// 0x10 in byte i where bit i of the little-endian uint32 at qh is set, else 0.
TC_SIMD_INLINE __m256i fifth_bits32(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  // Byte i takes byte i / 8 of the bits, then keeps bit i % 8 of it.
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                                                0x0303030303030303));
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// The IQ4 levels (kIQ4NLValues) in both 128-bit halves, for vpshufb.
TC_SIMD_INLINE __m256i iq4_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
}

// Per-lane int32 sums of w * x over 32 signed weights w (|w| <= 127) and
// int8 x: |w| times x with w's sign, pairs within 2 * 127 * 127.
TC_SIMD_INLINE __m256i dot_s8s8(__m256i w, __m256i x) {
  return dot_u8s8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

// The dtypes differ in how a block's quants become bytes, what their scale
// is and whether they carry an offset:
//   Q4_1   d, m  nibbles             unsigned, offset m
//   Q5_0   d     nibbles + 5th bit   unsigned, offset -16 d
//   Q5_1   d, m  nibbles + 5th bit   unsigned, offset m
//   IQ4_NL d     table of nibbles    signed, no offset
template <DType kType>
struct Quant32Traits;

template <>
struct Quant32Traits<DType::Q4_1> {
  using Block = BlockQ4_1;
  static constexpr bool kOffset = true;
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d>(blk, nb); }
  static TC_SIMD_INLINE __m256i dot(const Block& b, __m256i x) { return dot_u8s8(nibbles32(b.qs), x); }
  static TC_SIMD_INLINE __m256 offsets(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::m>(blk, nb); }
};

template <>
struct Quant32Traits<DType::Q5_0> {
  using Block = BlockQ5_0;
  static constexpr bool kOffset = true;
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d>(blk, nb); }
  static TC_SIMD_INLINE __m256i dot(const Block& b, __m256i x) {
    return dot_u8s8(_mm256_or_si256(nibbles32(b.qs), fifth_bits32(b.qh)), x);
  }
  // -16 d: exact in f32.
  static TC_SIMD_INLINE __m256 offsets(const Block* blk, int64_t nb) {
    return _mm256_mul_ps(block_f16s<Block, &Block::d>(blk, nb), _mm256_set1_ps(-16.0f));
  }
};

template <>
struct Quant32Traits<DType::Q5_1> {
  using Block = BlockQ5_1;
  static constexpr bool kOffset = true;
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d>(blk, nb); }
  static TC_SIMD_INLINE __m256i dot(const Block& b, __m256i x) {
    return dot_u8s8(_mm256_or_si256(nibbles32(b.qs), fifth_bits32(b.qh)), x);
  }
  static TC_SIMD_INLINE __m256 offsets(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::m>(blk, nb); }
};

template <>
struct Quant32Traits<DType::IQ4_NL> {
  using Block = BlockIQ4_NL;
  static constexpr bool kOffset = false;
  static TC_SIMD_INLINE __m256 scales(const Block* blk, int64_t nb) { return block_f16s<Block, &Block::d>(blk, nb); }
  static TC_SIMD_INLINE __m256i dot(const Block& b, __m256i x) {
    return dot_s8s8(_mm256_shuffle_epi8(iq4_table(), nibbles32(b.qs)), x);
  }
  static TC_SIMD_INLINE __m256 offsets(const Block*, int64_t) { return _mm256_setzero_ps(); }
};

template <DType kType>
struct OpsQuant32 {
  using Traits = Quant32Traits<kType>;
  using Block = typename Traits::Block;
  static constexpr int64_t kBlock = 32;
  static constexpr int64_t kChunkBlocks = kChunkBlocks32;
  static constexpr int64_t kUnit = 1;
  // GEMM order takes the tile of small batches (1 row x kGemvTokens): one
  // set of tile instantiations per dtype keeps these files' compile time down.
  static constexpr int kGemvRows = 1;
  static constexpr int kGemmRows = 1;
  static constexpr int kGemmTokens = kGemvTokens;
  struct Prep {
    alignas(32) float d[kChunkBlocks32];  // dw * dx per block
    alignas(32) float m[kChunkBlocks32];  // offset * dx per block (kOffset)
  };
  template <int R, int T>
  TC_SIMD_INLINE static void prepare(Prep (&p)[R][T], const std::byte* const* w, const XRow* x, int64_t b0,
                                     int64_t nb) {
    for (int r = 0; r < R; ++r) {
      const Block* blk = reinterpret_cast<const Block*>(w[r]) + b0;
      for (int64_t g = 0; g < nb; g += kGroup) {
        const int64_t count = min64(kGroup, nb - g);
        const __m256 dw = Traits::scales(blk + g, count);
        const __m256 mw = Traits::offsets(blk + g, count);
        for (int t = 0; t < T; ++t) {
          const __m256 dx = _mm256_loadu_ps(x[t].d + b0 + g);
          _mm256_store_ps(p[r][t].d + g, _mm256_mul_ps(dw, dx));
          if constexpr (Traits::kOffset) _mm256_store_ps(p[r][t].m + g, _mm256_mul_ps(mw, dx));
        }
      }
    }
  }
  template <int R, int T>
  TC_SIMD_INLINE static void unit(__m256 (&acc)[R][T], const std::byte* const* w, const XRow* x, const Prep (&p)[R][T],
                                  int64_t b0, int64_t i, int64_t) {
    const int64_t b = b0 + i;
    for (int r = 0; r < R; ++r) {
      const Block& blk = reinterpret_cast<const Block*>(w[r])[b];
      for (int t = 0; t < T; ++t) {
        const __m256 s = _mm256_cvtepi32_ps(Traits::dot(blk, load32(x[t].qs + 32 * b)));
        acc[r][t] = _mm256_fmadd_ps(s, _mm256_broadcast_ss(&p[r][t].d[i]), acc[r][t]);
      }
    }
  }
  // The offsets: sum over the chunk's blocks of (m dx) * sum32, 8 blocks per
  // FMA (x's sum32 is zero-filled past the row's last block).
  template <int R, int T>
  TC_SIMD_INLINE static void finish(__m256 (&acc)[R][T], const Prep (&p)[R][T], const XRow* x, int64_t b0,
                                    int64_t nb) {
    if constexpr (Traits::kOffset) {
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) {
          for (int64_t g = 0; g < nb; g += kGroup) {
            const __m256 sums = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].sum32 + b0 + g)));
            acc[r][t] = _mm256_fmadd_ps(sums, _mm256_load_ps(p[r][t].m + g), acc[r][t]);
          }
        }
      }
    }
  }
};

using OpsQ4_1 = OpsQuant32<DType::Q4_1>;
using OpsQ5_0 = OpsQuant32<DType::Q5_0>;
using OpsQ5_1 = OpsQuant32<DType::Q5_1>;
using OpsIQ4_NL = OpsQuant32<DType::IQ4_NL>;

}  // namespace
}  // namespace tc::kernels::detail
