// Device-side dequantization of weight rows, exactly as kernels/cpu/quantize
// (dequantize_row) computes it: the same products in the same order, each
// rounded on its own (__fmul_rn/__fsub_rn keep nvcc from fusing them), so a
// dequantized value has the CPU's bits. Elements are read in groups:
// Dequant<T>::load(row, g, out) writes elements [g * kGroup, (g + 1) * kGroup)
// of the row starting at `row` (1 element for plain types, 8 for blocks).
// Rows must start at a 2-byte boundary (4 for F32): the f16 fields are read
// as aligned uint16.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/dtype.h"

namespace tc::kernels::cuda {

__device__ __forceinline__ float f16_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }

__device__ __forceinline__ float bf16_bits_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }

// 8 bytes from a 2-byte boundary as four u16 loads (half the load
// instructions of byte loads; quant blocks keep their qs 2-byte aligned).
__device__ __forceinline__ void load_8_bytes(const uint8_t* p, uint8_t* out) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint16_t v = load_u16(p + 2 * j);
    out[2 * j] = static_cast<uint8_t>(v & 0xff);
    out[2 * j + 1] = static_cast<uint8_t>(v >> 8);
  }
}

template <DType T>
struct Dequant;

template <>
struct Dequant<DType::F32> {
  static constexpr int kGroup = 1;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    out[0] = reinterpret_cast<const float*>(row)[g];
  }
};

template <>
struct Dequant<DType::F16> {
  static constexpr int kGroup = 1;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    out[0] = f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[g]);
  }
};

template <>
struct Dequant<DType::BF16> {
  static constexpr int kGroup = 1;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    out[0] = bf16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[g]);
  }
};

// Q8_0: 4 groups per 32-element block; x = q * d.
template <>
struct Dequant<DType::Q8_0> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 2) * static_cast<int64_t>(sizeof(BlockQ8_0));
    const float d = f16_bits_to_f32(load_u16(blk));
    uint8_t qs[8];
    load_8_bytes(blk + 2 + 8 * (g & 3), qs);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fmul_rn(static_cast<float>(static_cast<int8_t>(qs[i])), d);
  }
};

// Q4_0: elements 0-15 are the low nibbles of qs[0..15], 16-31 the high ones.
template <>
struct Dequant<DType::Q4_0> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 2) * static_cast<int64_t>(sizeof(BlockQ4_0));
    const float d = f16_bits_to_f32(load_u16(blk));
    const int part = static_cast<int>(g & 3);
    uint8_t qs[8];
    load_8_bytes(blk + 2 + 8 * (part & 1), qs);
    const int shift = part < 2 ? 0 : 4;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fmul_rn(static_cast<float>(((qs[i] >> shift) & 0x0f) - 8), d);
  }
};

// Q5_0: as Q4_0 plus a 5th bit per element from qh (little-endian uint32).
template <>
struct Dequant<DType::Q5_0> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 2) * static_cast<int64_t>(sizeof(BlockQ5_0));
    const float d = f16_bits_to_f32(load_u16(blk));
    const uint32_t qh = static_cast<uint32_t>(blk[2]) | (static_cast<uint32_t>(blk[3]) << 8) |
                        (static_cast<uint32_t>(blk[4]) << 16) | (static_cast<uint32_t>(blk[5]) << 24);
    const int part = static_cast<int>(g & 3);
    const int j0 = 8 * (part & 1);        // byte of qs
    const int e0 = 8 * part;              // element index in the block
    const int shift = part < 2 ? 0 : 4;
    const uint8_t* qs = blk + 6;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int q = static_cast<int>(((qs[j0 + i] >> shift) & 0x0f) | (((qh >> (e0 + i)) & 1u) << 4)) - 16;
      out[i] = __fmul_rn(static_cast<float>(q), d);
    }
  }
};

// Q4_K: 32 groups per 256-element super-block; chunk c (64 elements) uses
// sub-blocks 2c (low nibbles of qs[32c..32c+31]) and 2c+1 (high nibbles).
template <>
struct Dequant<DType::Q4_K> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 5) * static_cast<int64_t>(sizeof(BlockQ4_K));
    const float d = f16_bits_to_f32(load_u16(blk));
    const float dmin = f16_bits_to_f32(load_u16(blk + 2));
    const uint8_t* scales = blk + 4;
    const uint8_t* qs = blk + 16;
    const int e0 = 8 * static_cast<int>(g & 31);  // element in the super-block
    const int chunk = e0 / 64;
    const bool high = (e0 % 64) >= 32;
    const int l0 = e0 % 32;
    const int j = 2 * chunk + (high ? 1 : 0);  // sub-block
    int ls, lm;
    if (j < 4) {
      ls = scales[j] & 63;
      lm = scales[j + 4] & 63;
    } else {
      ls = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
      lm = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
    const float dl = __fmul_rn(d, static_cast<float>(ls));
    const float ml = __fmul_rn(dmin, static_cast<float>(lm));
    const uint8_t* q = qs + 32 * chunk + l0;
    const int shift = high ? 4 : 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fsub_rn(__fmul_rn(dl, static_cast<float>((q[i] >> shift) & 0x0f)), ml);
  }
};

// Q6_K: 32 groups per 256-element super-block; each half (128 elements)
// holds four quarters of 32: quarter k's low 4 bits are in ql[l + 32 (k & 1)]
// (low nibble for k < 2, high otherwise), its top 2 bits in qh[l] >> 2k.
template <>
struct Dequant<DType::Q6_K> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 5) * static_cast<int64_t>(sizeof(BlockQ6_K));
    const int e0 = 8 * static_cast<int>(g & 31);
    const int half = e0 / 128;
    const int quarter = (e0 % 128) / 32;
    const int l0 = e0 % 32;
    const uint8_t* ql = blk + 64 * half + 32 * (quarter & 1) + l0;
    const uint8_t* qh = blk + kQK_K / 2 + 32 * half + l0;
    const auto* sc = reinterpret_cast<const int8_t*>(blk + kQK_K / 2 + kQK_K / 4) + 8 * half;
    const float d = f16_bits_to_f32(load_u16(blk + kQK_K / 2 + kQK_K / 4 + kQK_K / 16));
    const float ds = __fmul_rn(d, static_cast<float>(sc[l0 / 16 + 2 * quarter]));
    const int shift_lo = quarter < 2 ? 0 : 4;
    const int shift_hi = 2 * quarter;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int q = static_cast<int>(((ql[i] >> shift_lo) & 0x0f) | (((qh[i] >> shift_hi) & 3) << 4)) - 32;
      out[i] = __fmul_rn(ds, static_cast<float>(q));
    }
  }
};

}  // namespace tc::kernels::cuda
