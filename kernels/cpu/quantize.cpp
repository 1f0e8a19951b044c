// Reference conversions between f32 and the weight dtypes: scalar f16/bf16,
// plain rows (F32, F16, BF16) and the 32-element block formats Q8_0, Q4_0,
// Q4_1, Q5_0 and Q5_1.
// The k-quants live in quantize_kquants*.cpp, IQ4_NL and IQ4_XS in
// quantize_iq4.cpp, MXFP4 in quantize_mxfp4.cpp. Results match llama.cpp's
// reference quantizers bit for bit; tests/oracle checks that.
#include "kernels/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/check.h"
#include "kernels/cpu/quantize_kquants.h"

// Bit-exact agreement with llama.cpp needs every multiply and add rounded on
// its own: no fused multiply-add contraction. GCC does not contract in ISO
// C++ mode (the project's -std=c++20); clang does by default on FMA targets.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tc::kernels {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// f16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
// f32: 1 sign, 8 exponent (bias 127), 23 mantissa bits.
constexpr uint32_t kF32AbsMask = 0x7fffffffu;
constexpr uint32_t kF32Inf = 0x7f800000u;
constexpr uint32_t kF32QuietBit = 0x00400000u;
// The exponent re-bias between the two formats, (127 - 15) << 23.
constexpr uint32_t kF16ToF32Rebias = 112u << 23;
// |f| at or above 65520 (half way between f16 max 65504 and 2^16) rounds to inf.
constexpr uint32_t kF16OverflowAbs = 0x477ff000u;
// |f| at or above 2^-14 is a normal f16.
constexpr uint32_t kF16MinNormalAbs = 0x38800000u;
// |f| at or below 2^-25 (half the smallest subnormal, a tie that goes to
// the even 0) rounds to zero.
constexpr uint32_t kF16ZeroAbs = 0x33000000u;

// ---- Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 ----

void quantize_q8_0(const float* src, BlockQ8_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQK8_0;
    float amax = 0.0f;
    for (int64_t j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));

    // Symmetric: the largest magnitude maps to +-127.
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = f32_to_f16(d);
    // llama.cpp rounds half away from zero here (roundf), unlike the
    // ties-to-even nearest_int of the k-quants.
    for (int64_t j = 0; j < kQK8_0; ++j) {
      dst[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    }
  }
}

void dequantize_q8_0(const BlockQ8_0* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(src[b].d);
    float* y = dst + b * kQK8_0;
    for (int64_t j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(src[b].qs[j]) * d;
  }
}

// Rounds x / d + offset to a quant in [0, q_max] the way llama.cpp does:
// add `half_up` (offset + 0.5, one float add as llama.cpp writes it) and
// truncate, then cap at q_max. The value of largest magnitude maps to
// exactly -offset (quant 0), so the opposite extreme may want q_max + 1 and
// is capped. The clamp before the int conversion changes nothing for finite
// inputs in range; it only keeps a degenerate scale (1/d overflowing) free
// of UB.
inline uint8_t offset_quant(float scaled, float half_up, int q_max) {
  const float shifted = std::clamp(scaled + half_up, 0.0f, static_cast<float>(q_max + 1));
  return static_cast<uint8_t>(std::min(q_max, static_cast<int>(shifted)));
}

inline uint8_t q4_0_nibble(float scaled) { return offset_quant(scaled, 8.5f, 15); }

// The signed value of largest magnitude in x[0..n), the first one on ties
// (Q4_0 and Q5_0 scale their blocks by it).
float signed_absmax(const float* x, int64_t n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void quantize_q4_0(const float* src, BlockQ4_0* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK4_0 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQK4_0;
    // Dividing by -8 (not 8) uses the asymmetric range [-8, 7] fully: the
    // extreme value lands on -8 whatever its sign.
    const float d = signed_absmax(x, kQK4_0) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = f32_to_f16(d);
    for (int64_t j = 0; j < kHalf; ++j) {
      const uint8_t lo = q4_0_nibble(x[j] * id);
      const uint8_t hi = q4_0_nibble(x[j + kHalf] * id);
      dst[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q4_0(const BlockQ4_0* src, float* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK4_0 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(src[b].d);
    float* y = dst + b * kQK4_0;
    for (int64_t j = 0; j < kHalf; ++j) {
      const int lo = (src[b].qs[j] & 0x0f) - 8;
      const int hi = (src[b].qs[j] >> 4) - 8;
      y[j] = static_cast<float>(lo) * d;
      y[j + kHalf] = static_cast<float>(hi) * d;
    }
  }
}

// As Q4_0 with 5-bit quants in [-16, 15]; the 5th bits gather in qh.
void quantize_q5_0(const float* src, BlockQ5_0* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK5_0 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQK5_0;
    const float d = signed_absmax(x, kQK5_0) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int64_t j = 0; j < kHalf; ++j) {
      const uint8_t lo = offset_quant(x[j] * id, 16.5f, 31);
      const uint8_t hi = offset_quant(x[j + kHalf] * id, 16.5f, 31);
      dst[b].qs[j] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j;
      qh |= static_cast<uint32_t>(hi >> 4) << (j + kHalf);
    }
    std::memcpy(dst[b].qh, &qh, sizeof qh);
  }
}

void dequantize_q5_0(const BlockQ5_0* src, float* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK5_0 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(src[b].d);
    uint32_t qh;
    std::memcpy(&qh, src[b].qh, sizeof qh);
    float* y = dst + b * kQK5_0;
    for (int64_t j = 0; j < kHalf; ++j) {
      const int lo = static_cast<int>((src[b].qs[j] & 0x0f) | (((qh >> j) & 1u) << 4)) - 16;
      const int hi = static_cast<int>((src[b].qs[j] >> 4) | (((qh >> (j + kHalf)) & 1u) << 4)) - 16;
      y[j] = static_cast<float>(lo) * d;
      y[j + kHalf] = static_cast<float>(hi) * d;
    }
  }
}

// The smallest and largest value of x[0..n).
void min_max(const float* x, int64_t n, float& min, float& max) {
  min = std::numeric_limits<float>::max();
  max = -std::numeric_limits<float>::max();
  for (int64_t j = 0; j < n; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

// Q4_1: the block's range [min, max] in 15 steps; the quant of x is
// (x - min) / d rounded half up.
void quantize_q4_1(const float* src, BlockQ4_1* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK4_1 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQK4_1;
    float min, max;
    min_max(x, kQK4_1, min, max);
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = f32_to_f16(d);
    dst[b].m = f32_to_f16(min);
    for (int64_t j = 0; j < kHalf; ++j) {
      const uint8_t lo = offset_quant((x[j] - min) * id, 0.5f, 15);
      const uint8_t hi = offset_quant((x[j + kHalf] - min) * id, 0.5f, 15);
      dst[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q4_1(const BlockQ4_1* src, float* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK4_1 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(src[b].d);
    const float m = f16_to_f32(src[b].m);
    float* y = dst + b * kQK4_1;
    for (int64_t j = 0; j < kHalf; ++j) {
      y[j] = static_cast<float>(src[b].qs[j] & 0x0f) * d + m;
      y[j + kHalf] = static_cast<float>(src[b].qs[j] >> 4) * d + m;
    }
  }
}

// Q5_1: as Q4_1 with 31 steps; the 5th bits gather in qh as in Q5_0.
void quantize_q5_1(const float* src, BlockQ5_1* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK5_1 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQK5_1;
    float min, max;
    min_max(x, kQK5_1, min, max);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = f32_to_f16(d);
    dst[b].m = f32_to_f16(min);
    uint32_t qh = 0;
    for (int64_t j = 0; j < kHalf; ++j) {
      const uint8_t lo = offset_quant((x[j] - min) * id, 0.5f, 31);
      const uint8_t hi = offset_quant((x[j + kHalf] - min) * id, 0.5f, 31);
      dst[b].qs[j] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j;
      qh |= static_cast<uint32_t>(hi >> 4) << (j + kHalf);
    }
    std::memcpy(dst[b].qh, &qh, sizeof qh);
  }
}

void dequantize_q5_1(const BlockQ5_1* src, float* dst, int64_t n_blocks) {
  constexpr int64_t kHalf = kQK5_1 / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(src[b].d);
    const float m = f16_to_f32(src[b].m);
    uint32_t qh;
    std::memcpy(&qh, src[b].qh, sizeof qh);
    float* y = dst + b * kQK5_1;
    for (int64_t j = 0; j < kHalf; ++j) {
      const uint32_t lo = (src[b].qs[j] & 0x0fu) | (((qh >> j) & 1u) << 4);
      const uint32_t hi = (src[b].qs[j] >> 4) | (((qh >> (j + kHalf)) & 1u) << 4);
      y[j] = static_cast<float>(lo) * d + m;
      y[j + kHalf] = static_cast<float>(hi) * d + m;
    }
  }
}

}  // namespace

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) {
    // Inf keeps its sign; NaN keeps sign and payload and comes out quiet,
    // as x86 F16C and ggml's converter both do.
    const uint32_t quiet = mantissa != 0 ? kF32QuietBit : 0;
    return bits_float(sign | kF32Inf | quiet | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return bits_float(sign | float_bits(magnitude));
  }
  return bits_float(sign | (((exponent << 23) + kF16ToF32Rebias) | (mantissa << 13)));
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & kF32AbsMask;
  // NaN becomes the canonical quiet NaN (sign kept), as in ggml: a payload
  // would not survive the 13 dropped mantissa bits anyway.
  if (abs > kF32Inf) return sign | 0x7e00u;
  if (abs >= kF16OverflowAbs) return sign | 0x7c00u;
  if (abs >= kF16MinNormalAbs) {
    // Re-bias the exponent, then drop 13 mantissa bits rounding to nearest
    // even; a carry out of the mantissa correctly bumps the exponent.
    const uint32_t rebased = abs - kF16ToF32Rebias;
    const uint32_t rounded = rebased + 0x0fffu + ((rebased >> 13) & 1u);
    return sign | static_cast<uint16_t>(rounded >> 13);
  }
  if (abs <= kF16ZeroAbs) return sign;
  // Subnormal f16: result = round(|f| / 2^-24). With the implicit bit,
  // |f| = m * 2^(e - 150), so the result is m >> (126 - e), rounded to
  // nearest even; the shift is 14..24 here. A round-up to 0x400 yields the
  // smallest normal, which is the right encoding.
  const uint32_t e = abs >> 23;
  const uint32_t m = (abs & 0x007fffffu) | 0x00800000u;
  const uint32_t shift = 126u - e;
  uint32_t q = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return sign | static_cast<uint16_t>(q);
}

float bf16_to_f32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  // NaN: truncate but force the quiet bit, so a payload living only in the
  // dropped bits cannot turn the NaN into inf.
  if ((x & kF32AbsMask) > kF32Inf) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  // Round to nearest even on the 16 dropped bits (overflow goes to inf).
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  const auto& traits = dtype_traits(type);
  TC_CHECK(n >= 0 && n % traits.block_size == 0,
           "quantize_row: row length must be a multiple of the block size");
  const int64_t n_blocks = n / traits.block_size;
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::F16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::BF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::Q8_0:
      quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), n_blocks);
      return;
    case DType::Q4_0:
      quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), n_blocks);
      return;
    case DType::Q4_1:
      quantize_q4_1(src, static_cast<BlockQ4_1*>(dst), n_blocks);
      return;
    case DType::Q5_0:
      quantize_q5_0(src, static_cast<BlockQ5_0*>(dst), n_blocks);
      return;
    case DType::Q5_1:
      quantize_q5_1(src, static_cast<BlockQ5_1*>(dst), n_blocks);
      return;
    case DType::Q2_K:
      detail::quantize_q2_K(src, static_cast<BlockQ2_K*>(dst), n_blocks);
      return;
    case DType::Q3_K:
      detail::quantize_q3_K(src, static_cast<BlockQ3_K*>(dst), n_blocks);
      return;
    case DType::Q4_K:
      detail::quantize_q4_K(src, static_cast<BlockQ4_K*>(dst), n_blocks);
      return;
    case DType::Q5_K:
      detail::quantize_q5_K(src, static_cast<BlockQ5_K*>(dst), n_blocks);
      return;
    case DType::Q6_K:
      detail::quantize_q6_K(src, static_cast<BlockQ6_K*>(dst), n_blocks);
      return;
    case DType::IQ4_NL:
      detail::quantize_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n_blocks);
      return;
    case DType::IQ4_XS:
      detail::quantize_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n_blocks);
      return;
    case DType::MXFP4:
      detail::quantize_mxfp4(src, static_cast<BlockMXFP4*>(dst), n_blocks);
      return;
    default:
      break;
  }
  TC_CHECK(false, "quantize_row: not a weight dtype (F32, F16, BF16 or a block format)");
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const auto& traits = dtype_traits(type);
  TC_CHECK(n >= 0 && n % traits.block_size == 0,
           "dequantize_row: row length must be a multiple of the block size");
  const int64_t n_blocks = n / traits.block_size;
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::F16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(in[i]);
      return;
    }
    case DType::BF16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(in[i]);
      return;
    }
    case DType::Q8_0:
      dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, n_blocks);
      return;
    case DType::Q4_0:
      dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, n_blocks);
      return;
    case DType::Q4_1:
      dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, n_blocks);
      return;
    case DType::Q5_0:
      dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, n_blocks);
      return;
    case DType::Q5_1:
      dequantize_q5_1(static_cast<const BlockQ5_1*>(src), dst, n_blocks);
      return;
    case DType::Q2_K:
      detail::dequantize_q2_K(static_cast<const BlockQ2_K*>(src), dst, n_blocks);
      return;
    case DType::Q3_K:
      detail::dequantize_q3_K(static_cast<const BlockQ3_K*>(src), dst, n_blocks);
      return;
    case DType::Q4_K:
      detail::dequantize_q4_K(static_cast<const BlockQ4_K*>(src), dst, n_blocks);
      return;
    case DType::Q5_K:
      detail::dequantize_q5_K(static_cast<const BlockQ5_K*>(src), dst, n_blocks);
      return;
    case DType::Q6_K:
      detail::dequantize_q6_K(static_cast<const BlockQ6_K*>(src), dst, n_blocks);
      return;
    case DType::IQ4_NL:
      detail::dequantize_iq4_nl(static_cast<const BlockIQ4_NL*>(src), dst, n_blocks);
      return;
    case DType::IQ4_XS:
      detail::dequantize_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n_blocks);
      return;
    case DType::MXFP4:
      detail::dequantize_mxfp4(static_cast<const BlockMXFP4*>(src), dst, n_blocks);
      return;
    default:
      break;
  }
  TC_CHECK(false, "dequantize_row: not a weight dtype (F32, F16, BF16 or a block format)");
}

}  // namespace tc::kernels
