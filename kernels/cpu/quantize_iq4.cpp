// Reference quantizers for the non-linear 4-bit formats IQ4_NL (blocks of
// 32) and IQ4_XS (super-blocks of 256 with 6-bit sub-block scales): each
// element is the index of the nearest of 16 fixed levels (kIQ4NLValues)
// times a scale. They follow llama.cpp's quantize_iq4_nl / quantize_iq4_xs
// without an importance matrix step for step, so the bytes equal those of
// ggml_quantize_chunk; tests/oracle holds them to that.
#include <cmath>
#include <cstring>

#include "kernels/cpu/quantize.h"
#include "kernels/cpu/quantize_kquants.h"

// Bit-exact agreement with llama.cpp needs every multiply and add rounded on
// its own: no fused multiply-add contraction (see quantize_kquants.cpp).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tc::kernels::detail {
namespace {

constexpr int kSub = 32;        // elements per scale
constexpr int kNumValues = 16;  // levels of kIQ4NLValues
// The search tries scales mapping the extreme value to the lowest level
// +- kTries level steps (llama.cpp's ntry 7 of the chunk quantizers).
constexpr int kTries = 7;
constexpr float kXsScaleLevels = 32.0f;  // IQ4_XS: sub-block scales -32..31

// The index of the level nearest to x, the upper one on a tie. Level i wins
// once x reaches the midpoint of levels i - 1 and i; comparing 2x with the
// sum of the two integer levels keeps both sides exact. A binary search
// over the 16 sorted levels.
int nearest_level(float x) {
  const float x2 = x + x;
  int idx = 0;
  for (int step = kNumValues / 2; step > 0; step /= 2) {
    const int j = idx + step;
    const int mid2 = kIQ4NLValues[j - 1] + kIQ4NLValues[j];
    if (x2 >= static_cast<float>(mid2)) idx = j;
  }
  return idx;
}

// Fits one sub-block xb (f32 [kSub]) with weights x^2: the scale d that
// minimises sum w (x - d * level)^2 over the level choices of 2 * kTries + 2
// candidate scales. Writes the levels of the first candidate to L and
// returns d (0 for an all-zero block, L then 0).
float fit_sub_block(const float* xb, uint8_t* L) {
  float weight[kSub];
  for (int j = 0; j < kSub; ++j) weight[j] = xb[j] * xb[j];
  float amax = 0;
  float max = 0;
  for (int j = 0; j < kSub; ++j) {
    const float ax = std::fabs(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, kSub);
    return 0.0f;
  }
  const auto lowest = static_cast<float>(kIQ4NLValues[0]);
  float d = -max / lowest;
  float id = 1.0f / d;
  float sum_qx = 0;
  float sum_q2 = 0;
  for (int j = 0; j < kSub; ++j) {
    const int l = nearest_level(id * xb[j]);
    L[j] = static_cast<uint8_t>(l);
    const auto q = static_cast<float>(kIQ4NLValues[l]);
    sum_qx += weight[j] * q * xb[j];
    sum_q2 += weight[j] * q * q;
  }
  d = sum_q2 > 0 ? sum_qx / sum_q2 : 0.0f;
  float best = d * sum_qx;
  for (int t = -kTries; t <= kTries; ++t) {
    id = static_cast<float>(t + kIQ4NLValues[0]) / max;
    sum_qx = 0;
    sum_q2 = 0;
    for (int j = 0; j < kSub; ++j) {
      const auto q = static_cast<float>(kIQ4NLValues[nearest_level(id * xb[j])]);
      sum_qx += weight[j] * q * xb[j];
      sum_q2 += weight[j] * q * q;
    }
    // sum_qx^2 / sum_q2 > best, without dividing.
    if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) {
      d = sum_qx / sum_q2;
      best = d * sum_qx;
    }
  }
  return d;
}

// Sub-block i's indices L[32i..32i+31] into 16 bytes: element j in the low
// nibble of byte j, element 16 + j in its high nibble.
void pack_indices(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kSub / 2; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[j + kSub / 2] << 4));
}

void quantize_iq4_nl_block(const float* x, BlockIQ4_NL& y) {
  uint8_t L[kSub];
  const float d = fit_sub_block(x, L);
  y.d = f32_to_f16(d);
  // Re-assign the levels against the chosen scale (f32, not as stored).
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < kSub; ++j) L[j] = static_cast<uint8_t>(nearest_level(id * x[j]));
  pack_indices(L, y.qs);
}

void quantize_iq4_xs_block(const float* x, BlockIQ4_XS& y) {
  constexpr int kNumSub = static_cast<int>(kQK_K) / kSub;
  uint8_t L[kQK_K];
  float scales[kNumSub];
  float max_scale = 0;
  float amax_scale = 0;
  for (int ib = 0; ib < kNumSub; ++ib) {
    scales[ib] = fit_sub_block(x + kSub * ib, L + kSub * ib);
    const float abs_d = std::fabs(scales[ib]);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = scales[ib];
    }
  }
  // Signed 6-bit sub-block scales against one f16 super-scale (the largest
  // on -32); the levels re-assigned against each sub-block's scale d * l
  // (d in f32, not as stored).
  const float d = -max_scale / kXsScaleLevels;
  y.d = f32_to_f16(d);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.scales_h = 0;
  for (int ib = 0; ib < kNumSub; ++ib) {
    const int l = clamp_int(nearest_int(id * scales[ib]), -32, 31);
    const float dl = d * static_cast<float>(l);
    const float idl = dl != 0 ? 1.0f / dl : 0.0f;
    const float* xb = x + kSub * ib;
    uint8_t* Lb = L + kSub * ib;
    for (int j = 0; j < kSub; ++j) Lb[j] = static_cast<uint8_t>(nearest_level(idl * xb[j]));
    const int stored = l + 32;
    if (ib % 2 == 0) {
      y.scales_l[ib / 2] = static_cast<uint8_t>(stored & 0x0f);
    } else {
      y.scales_l[ib / 2] = static_cast<uint8_t>(y.scales_l[ib / 2] | ((stored & 0x0f) << 4));
    }
    y.scales_h = static_cast<uint16_t>(y.scales_h | ((stored >> 4) << (2 * ib)));
  }
  for (int ib = 0; ib < kNumSub; ++ib) pack_indices(L + kSub * ib, y.qs + kSub / 2 * ib);
}

}  // namespace

void quantize_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_iq4_nl_block(src + b * kQK4_NL, dst[b]);
}

void dequantize_iq4_nl(const BlockIQ4_NL* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(src[b].d);
    float* y = dst + b * kQK4_NL;
    for (int j = 0; j < kSub / 2; ++j) {
      y[j] = d * static_cast<float>(kIQ4NLValues[src[b].qs[j] & 0x0f]);
      y[j + kSub / 2] = d * static_cast<float>(kIQ4NLValues[src[b].qs[j] >> 4]);
    }
  }
}

void quantize_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_iq4_xs_block(src + b * kQK_K, dst[b]);
}

void dequantize_iq4_xs(const BlockIQ4_XS* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockIQ4_XS& blk = src[b];
    const float d = f16_to_f32(blk.d);
    for (int ib = 0; ib < static_cast<int>(kQK_K) / kSub; ++ib) {
      const int ls = ((blk.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((blk.scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* qs = blk.qs + kSub / 2 * ib;
      float* y = dst + b * kQK_K + kSub * ib;
      for (int j = 0; j < kSub / 2; ++j) {
        y[j] = dl * static_cast<float>(kIQ4NLValues[qs[j] & 0x0f]);
        y[j + kSub / 2] = dl * static_cast<float>(kIQ4NLValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace tc::kernels::detail
