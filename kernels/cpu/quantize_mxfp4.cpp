// Reference quantizer for MXFP4 (blocks of 32: an E8M0 power-of-two scale
// and 4-bit E2M1 codes, kMXFP4Values). It follows llama.cpp's
// quantize_row_mxfp4_ref step for step, so the bytes equal those of
// ggml_quantize_chunk (which has no other MXFP4 quantizer); tests/oracle
// holds them to that.
#include <cmath>
#include <cstring>

#include "kernels/cpu/quantize.h"
#include "kernels/cpu/quantize_kquants.h"

// Bit-exact agreement with llama.cpp needs every multiply and add rounded on
// its own (see quantize_kquants.cpp).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tc::kernels {

float e8m0_to_f32_half(uint8_t e) {
  // e >= 2: the normal 2^(e - 128), biased exponent e - 1. e < 2: the
  // subnormals 2^-128 and 2^-127, a single mantissa bit.
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

namespace detail {
namespace {

constexpr int kBlock = static_cast<int>(kQK_MXFP4);
// The E8M0 scale 2^(e - 127) = 2^(floor(log2 amax) - 2) puts the block's
// largest magnitude at [4, 8) times the scale, by E2M1's top levels 4 and 6
// (8 and 12 in kMXFP4Values, whose factor 1/2 d carries: d = scale / 2).
constexpr int kExponentBias = 127;
constexpr int kExponentShift = 2;

// The code whose level times d is nearest to x: the first of the 16 in
// code order on a tie (so +0, never -0, for x = 0, and the smaller
// magnitude between two levels). The errors are compared as ggml computes
// them, each |level * d - x| rounded to f32, so equal roundings tie too.
uint8_t nearest_code(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kMXFP4Values[0]) * d - x);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kMXFP4Values[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// The E8M0 exponent of a block whose largest magnitude is amax (0 for an
// all-zero block). Computed as llama.cpp does, floorf(log2f(amax)) in f32,
// so amax just below a power of two whose log2f rounds up to it gets the
// same exponent. Below 2^-125 the value is negative and llama.cpp's
// float-to-uint8 cast wraps it (as x86 truncates through int32); such a
// block decodes to zeros either way, and the wrap keeps the bytes equal.
uint8_t block_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  const float e = std::floor(std::log2(amax)) - static_cast<float>(kExponentShift) + static_cast<float>(kExponentBias);
  return static_cast<uint8_t>(static_cast<int>(e));
}

void quantize_block(const float* x, BlockMXFP4& y) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
  }
  y.e = block_exponent(amax);
  const float d = e8m0_to_f32_half(y.e);
  for (int j = 0; j < kBlock / 2; ++j) {
    y.qs[j] = static_cast<uint8_t>(nearest_code(x[j], d) | (nearest_code(x[j + kBlock / 2], d) << 4));
  }
}

}  // namespace

void quantize_mxfp4(const float* src, BlockMXFP4* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_block(src + b * kQK_MXFP4, dst[b]);
}

void dequantize_mxfp4(const BlockMXFP4* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = e8m0_to_f32_half(src[b].e);
    float* y = dst + b * kQK_MXFP4;
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = static_cast<float>(kMXFP4Values[src[b].qs[j] & 0x0f]) * d;
      y[j + kBlock / 2] = static_cast<float>(kMXFP4Values[src[b].qs[j] >> 4]) * d;
    }
  }
}

}  // namespace detail
}  // namespace tc::kernels
