// Device-side dequantization of weight rows, exactly as kernels/cpu/quantize
// (dequantize_row) computes it: the same products in the same order, each
// rounded on its own (__fmul_rn/__fsub_rn keep nvcc from fusing them), so a
// dequantized value has the CPU's bits. Elements are read in groups:
// Dequant<T>::load(row, g, out) writes elements [g * kGroup, (g + 1) * kGroup)
// of the row starting at `row` (1 element for plain types, 8 for blocks).
// Rows must start at a 2-byte boundary (4 for F32; any for MXFP4, which has
// no f16 field): the f16 fields are read as aligned uint16.
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

// The 6-bit scale and min of Q4_K / Q5_K sub-block j from the 12 packed bytes.
__device__ __forceinline__ void k4_scale_min(const uint8_t* scales, int j, int& ls, int& lm) {
  if (j < 4) {
    ls = scales[j] & 63;
    lm = scales[j + 4] & 63;
  } else {
    ls = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
    lm = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// The IQ4_NL / IQ4_XS levels (kIQ4NLValues), one copy per translation unit.
static __constant__ int8_t kDeviceIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                   1,    13,   25,  38,  53,  69,  89,  113};

// Group `part` (0-3) of a 32-element block whose nibbles are packed as
// Q4_0's: elements 8 part .. 8 part + 7 as 0..15.
__device__ __forceinline__ void block32_nibbles(const uint8_t* qs, int part, int* q) {
  uint8_t bytes[8];
  load_8_bytes(qs + 8 * (part & 1), bytes);
  const int shift = part < 2 ? 0 : 4;
#pragma unroll
  for (int i = 0; i < 8; ++i) q[i] = (bytes[i] >> shift) & 0x0f;
}

// Q4_1: x = q * d + m (nibbles as Q4_0's; d, m, then qs).
template <>
struct Dequant<DType::Q4_1> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 2) * static_cast<int64_t>(sizeof(BlockQ4_1));
    const float d = f16_bits_to_f32(load_u16(blk));
    const float m = f16_bits_to_f32(load_u16(blk + 2));
    int q[8];
    block32_nibbles(blk + 4, static_cast<int>(g & 3), q);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fadd_rn(__fmul_rn(static_cast<float>(q[i]), d), m);
  }
};

// Q5_1: as Q4_1 plus a 5th bit per element from qh (d, m, qh, qs).
template <>
struct Dequant<DType::Q5_1> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 2) * static_cast<int64_t>(sizeof(BlockQ5_1));
    const float d = f16_bits_to_f32(load_u16(blk));
    const float m = f16_bits_to_f32(load_u16(blk + 2));
    const uint32_t qh = static_cast<uint32_t>(load_u16(blk + 4)) | (static_cast<uint32_t>(load_u16(blk + 6)) << 16);
    const int part = static_cast<int>(g & 3);
    int q[8];
    block32_nibbles(blk + 8, part, q);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int v = q[i] | static_cast<int>(((qh >> (8 * part + i)) & 1u) << 4);
      out[i] = __fadd_rn(__fmul_rn(static_cast<float>(v), d), m);
    }
  }
};

// IQ4_NL: x = d * level[nibble] (d, then qs as Q4_0's).
template <>
struct Dequant<DType::IQ4_NL> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 2) * static_cast<int64_t>(sizeof(BlockIQ4_NL));
    const float d = f16_bits_to_f32(load_u16(blk));
    int q[8];
    block32_nibbles(blk + 2, static_cast<int>(g & 3), q);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fmul_rn(d, static_cast<float>(kDeviceIQ4Values[q[i]]));
  }
};

// The MXFP4 levels (kMXFP4Values), one copy per translation unit.
static __constant__ int8_t kDeviceMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128), as e8m0_to_f32_half (kernels/cpu/quantize.h): the normal
// with biased exponent e - 1, or for e < 2 the subnormals 2^-128, 2^-127.
__device__ __forceinline__ float e8m0_half_bits_to_f32(uint8_t e) {
  return __uint_as_float(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// MXFP4: x = 2^(e - 128) * level[nibble] (e, then qs as Q4_0's). Blocks are
// 17 bytes, so a block and its qs sit at any alignment: bytes read one by one.
template <>
struct Dequant<DType::MXFP4> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 2) * static_cast<int64_t>(sizeof(BlockMXFP4));
    const float d = e8m0_half_bits_to_f32(blk[0]);
    const int part = static_cast<int>(g & 3);
    const uint8_t* qs = blk + 1 + 8 * (part & 1);
    const int shift = part < 2 ? 0 : 4;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fmul_rn(static_cast<float>(kDeviceMXFP4Values[(qs[i] >> shift) & 0x0f]), d);
  }
};

// Q2_K: 32 groups per super-block; element e's 2 bits are bits
// 2 ((e % 128) / 32) of qs[32 (e / 128) + e % 32]; x = (d sc) q - dmin m per
// 16-element sub-block (scales, qs, d, dmin).
template <>
struct Dequant<DType::Q2_K> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 5) * static_cast<int64_t>(sizeof(BlockQ2_K));
    const int e0 = 8 * static_cast<int>(g & 31);
    const uint8_t sc = blk[e0 / 16];
    const float dl = __fmul_rn(f16_bits_to_f32(load_u16(blk + 80)), static_cast<float>(sc & 0x0f));
    const float ml = __fmul_rn(f16_bits_to_f32(load_u16(blk + 82)), static_cast<float>(sc >> 4));
    uint8_t bytes[8];
    load_8_bytes(blk + 16 + 32 * (e0 / 128) + e0 % 32, bytes);
    const int shift = 2 * ((e0 % 128) / 32);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fsub_rn(__fmul_rn(dl, static_cast<float>((bytes[i] >> shift) & 3)), ml);
  }
};

// Q3_K: the low 2 bits as Q2_K's, the 3rd bit of element e in bit e / 32 of
// hmask[e % 32]; x = (d (sc - 32)) (q - 4) (hmask, qs, scales, d).
template <>
struct Dequant<DType::Q3_K> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 5) * static_cast<int64_t>(sizeof(BlockQ3_K));
    const int e0 = 8 * static_cast<int>(g & 31);
    const uint8_t* scales = blk + 96;
    const int j = e0 / 16;
    const int low = j < 8 ? scales[j] & 0x0f : scales[j - 8] >> 4;
    const int sc = (low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
    const float dl = __fmul_rn(f16_bits_to_f32(load_u16(blk + 108)), static_cast<float>(sc));
    uint8_t bytes[8], high[8];
    load_8_bytes(blk + 32 + 32 * (e0 / 128) + e0 % 32, bytes);
    load_8_bytes(blk + e0 % 32, high);
    const int shift = 2 * ((e0 % 128) / 32);
    const int bit = e0 / 32;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int q = ((bytes[i] >> shift) & 3) + 4 * ((high[i] >> bit) & 1) - 4;
      out[i] = __fmul_rn(dl, static_cast<float>(q));
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
    k4_scale_min(scales, j, ls, lm);
    const float dl = __fmul_rn(d, static_cast<float>(ls));
    const float ml = __fmul_rn(dmin, static_cast<float>(lm));
    const uint8_t* q = qs + 32 * chunk + l0;
    const int shift = high ? 4 : 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fsub_rn(__fmul_rn(dl, static_cast<float>((q[i] >> shift) & 0x0f)), ml);
  }
};

// Q5_K: as Q4_K plus the 5th bit of sub-block j's element l in bit j of
// qh[l] (d, dmin, scales, qh, qs).
template <>
struct Dequant<DType::Q5_K> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 5) * static_cast<int64_t>(sizeof(BlockQ5_K));
    const float d = f16_bits_to_f32(load_u16(blk));
    const float dmin = f16_bits_to_f32(load_u16(blk + 2));
    const int e0 = 8 * static_cast<int>(g & 31);
    const int chunk = e0 / 64;
    const int high = (e0 % 64) >= 32 ? 1 : 0;
    const int l0 = e0 % 32;
    const int j = 2 * chunk + high;
    int ls, lm;
    k4_scale_min(blk + 4, j, ls, lm);
    const float dl = __fmul_rn(d, static_cast<float>(ls));
    const float ml = __fmul_rn(dmin, static_cast<float>(lm));
    uint8_t bytes[8], qh[8];
    load_8_bytes(blk + 48 + 32 * chunk + l0, bytes);
    load_8_bytes(blk + 16 + l0, qh);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int q = ((bytes[i] >> (4 * high)) & 0x0f) | (((qh[i] >> j) & 1) << 4);
      out[i] = __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
    }
  }
};

// IQ4_XS: 32 groups per super-block; sub-block j's nibbles (in qs[16j..])
// packed as IQ4_NL's; x = (d (sc - 32)) level (d, scales_h, scales_l, qs).
template <>
struct Dequant<DType::IQ4_XS> {
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint8_t* blk = row + (g >> 5) * static_cast<int64_t>(sizeof(BlockIQ4_XS));
    const int e0 = 8 * static_cast<int>(g & 31);
    const int j = e0 / 32;
    const int scales_h = load_u16(blk + 2);
    const int ls = ((blk[4 + j / 2] >> (4 * (j % 2))) & 0x0f) | (((scales_h >> (2 * j)) & 3) << 4);
    const float dl = __fmul_rn(f16_bits_to_f32(load_u16(blk)), static_cast<float>(ls - 32));
    int q[8];
    block32_nibbles(blk + 8 + 16 * j, (e0 % 32) / 8, q);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fmul_rn(dl, static_cast<float>(kDeviceIQ4Values[q[i]]));
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
