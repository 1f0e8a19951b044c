// Reference quantizers for the low-bit k-quants Q2_K and Q3_K, following
// llama.cpp's quantize_row_q2_K_ref / quantize_row_q3_K_ref step for step
// (same searches, same float operations in the same order, no fused
// multiply-adds) so that the bytes written equal llama.cpp's; the oracle
// tests in tests/oracle hold them to that.
#include <cmath>
#include <cstring>

#include "kernels/cpu/quantize.h"
#include "kernels/cpu/quantize_kquants.h"

// Bit-exact agreement with llama.cpp needs every multiply and add rounded on
// its own: no fused multiply-add contraction. GCC does not contract in ISO
// C++ mode (the project's -std=c++20); clang does by default on FMA targets.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tc::kernels::detail {
namespace {

// Both formats: 16 sub-blocks of 16 elements.
constexpr int kSub = 16;
constexpr int kNumSub = static_cast<int>(kQK_K) / kSub;
// Q2_K: levels 0..3, 4-bit scales and mins against two f16 super-scales.
constexpr int kQ2KMaxLevel = 3;
constexpr float kQ2KScaleLevels = 15.0f;
// Q3_K: signed levels -4..3 (stored + 4), signed 6-bit scales -32..31.
constexpr int kQ3KHalfRange = 4;
constexpr float kQ3KScaleLevels = 32.0f;

// Both formats keep the low 2 bits of element 128h + 32k + l in bits 2k of
// qs[32h + l].
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < static_cast<int>(kQK_K) / 128; ++h) {
    const uint8_t* q = L + 128 * h;
    for (int l = 0; l < 32; ++l) {
      qs[32 * h + l] = static_cast<uint8_t>(q[l] | (q[l + 32] << 2) | (q[l + 64] << 4) | (q[l + 96] << 6));
    }
  }
}

// The 2 bits of element e (e < kQK_K) as pack_2bit stores them.
inline int low_2bit(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

void quantize_q2_K_block(const float* x, BlockQ2_K& y) {
  uint8_t L[kQK_K];
  float weights[kSub];
  float scales[kNumSub];
  float mins[kNumSub];

  // 1. Fit each sub-block (weights |x|, mean absolute error).
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < kNumSub; ++j) {
    for (int l = 0; l < kSub; ++l) weights[l] = std::fabs(x[kSub * j + l]);
    scales[j] = fit_scale_min(x + kSub * j, weights, kSub, kQ2KMaxLevel, -0.5f, 0.1f, 15, true, L + kSub * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // 2. 4-bit scales (low nibble) and mins (high nibble).
  if (max_scale > 0) {
    const float iscale = kQ2KScaleLevels / max_scale;
    for (int j = 0; j < kNumSub; ++j) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
    y.d = f32_to_f16(max_scale / kQ2KScaleLevels);
  } else {
    for (int j = 0; j < kNumSub; ++j) y.scales[j] = 0;
    y.d = f32_to_f16(0.0f);
  }
  if (max_min > 0) {
    const float iscale = kQ2KScaleLevels / max_min;
    for (int j = 0; j < kNumSub; ++j) {
      y.scales[j] = static_cast<uint8_t>(y.scales[j] | (nearest_int(iscale * mins[j]) << 4));
    }
    y.dmin = f32_to_f16(max_min / kQ2KScaleLevels);
  } else {
    y.dmin = f32_to_f16(0.0f);
  }

  // 3. Re-assign levels against the stored scales (a zero scale keeps the
  //    levels of step 1).
  const float d_all = f16_to_f32(y.d);
  const float dmin_all = f16_to_f32(y.dmin);
  for (int j = 0; j < kNumSub; ++j) {
    const float d = d_all * static_cast<float>(y.scales[j] & 0x0f);
    if (d == 0) continue;
    const float dm = dmin_all * static_cast<float>(y.scales[j] >> 4);
    for (int i = 0; i < kSub; ++i) {
      const int l = nearest_int((x[kSub * j + i] + dm) / d);
      L[kSub * j + i] = static_cast<uint8_t>(clamp_int(l, 0, kQ2KMaxLevel));
    }
  }
  pack_2bit(L, y.qs);
}

// Fits x[i] ~= scale * l[i] with signed levels l in [-n_max, n_max - 1]
// (llama.cpp's make_q3_quants with do_rmse): levels from the grid that maps
// the value of largest magnitude to -n_max, then up to 5 rounds of moving
// single levels to where the least-squares scale (weights x^2) fits better.
// Writes the levels offset by n_max to L and returns the scale.
float fit_q3_scale(const float* x, int n, int n_max, int8_t* L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = static_cast<float>(-n_max) / max;
  float sum_lx = 0;
  float sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -n_max, n_max - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * static_cast<float>(l);
    sum_l2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int round = 0; round < 5; ++round) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      // The sums without element i, and the level the others' scale asks for.
      float slx = sum_lx - w * x[i] * li;
      if (!(slx > 0)) continue;
      float sl2 = sum_l2 - w * li * li;
      const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -n_max, n_max - 1);
      if (new_l == L[i]) continue;
      const float nl = static_cast<float>(new_l);
      slx += w * x[i] * nl;
      sl2 += w * nl * nl;
      // Keep it when slx^2 / sl2 (the energy explained) grows.
      if (sl2 > 0 && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sum_lx = slx;
        sum_l2 = sl2;
        ++n_changed;
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + n_max);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

// The stored 6-bit scale of Q3_K sub-block j, 0..63 (the scale plus 32).
inline int q3_K_scale(const uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0x0f : scales[j - 8] >> 4;
  return low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

void quantize_q3_K_block(const float* x, BlockQ3_K& y) {
  int8_t L[kQK_K];
  float scales[kNumSub];

  // 1. Fit each sub-block; keep the signed scale of largest magnitude.
  float max_scale = 0;
  float amax = 0;
  for (int j = 0; j < kNumSub; ++j) {
    scales[j] = fit_q3_scale(x + kSub * j, kSub, kQ3KHalfRange, L + kSub * j);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }

  // 2. Signed 6-bit scales against one f16 super-scale, the largest on -32:
  //    low nibbles of sub-blocks 0-7 in scales[0..7], of 8-15 in their high
  //    nibbles; the top two bits of sub-block j in bits 2 (j / 4) of
  //    scales[8 + j % 4].
  std::memset(y.scales, 0, sizeof y.scales);
  if (max_scale != 0) {
    const float iscale = -kQ3KScaleLevels / max_scale;
    for (int j = 0; j < kNumSub; ++j) {
      const int l = clamp_int(nearest_int(iscale * scales[j]), -32, 31) + 32;
      if (j < 8) {
        y.scales[j] = static_cast<uint8_t>(l & 0x0f);
      } else {
        y.scales[j - 8] = static_cast<uint8_t>(y.scales[j - 8] | ((l & 0x0f) << 4));
      }
      y.scales[8 + j % 4] = static_cast<uint8_t>(y.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
    }
    y.d = f32_to_f16(1.0f / iscale);
  } else {
    y.d = f32_to_f16(0.0f);
  }

  // 3. Re-assign levels against the stored scales (a zero scale keeps the
  //    levels of step 1).
  const float d_all = f16_to_f32(y.d);
  for (int j = 0; j < kNumSub; ++j) {
    const float d = d_all * static_cast<float>(q3_K_scale(y.scales, j) - 32);
    if (d == 0) continue;
    for (int i = 0; i < kSub; ++i) {
      const int l = nearest_int(x[kSub * j + i] / d);
      L[kSub * j + i] = static_cast<int8_t>(clamp_int(l, -kQ3KHalfRange, kQ3KHalfRange - 1) + kQ3KHalfRange);
    }
  }

  // 4. The 3rd bit of element e to bit e / 32 of hmask[e % 32], the low two
  //    bits as Q2_K packs them.
  uint8_t low[kQK_K];
  std::memset(y.hmask, 0, sizeof y.hmask);
  for (int e = 0; e < static_cast<int>(kQK_K); ++e) {
    const int l = L[e];
    if (l > 3) y.hmask[e % 32] = static_cast<uint8_t>(y.hmask[e % 32] | (1 << (e / 32)));
    low[e] = static_cast<uint8_t>(l & 3);
  }
  pack_2bit(low, y.qs);
}

}  // namespace

void quantize_q2_K(const float* src, BlockQ2_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_q2_K_block(src + b * kQK_K, dst[b]);
}

void dequantize_q2_K(const BlockQ2_K* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ2_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < kNumSub; ++j) {
      const float dl = d * static_cast<float>(blk.scales[j] & 0x0f);
      const float ml = dmin * static_cast<float>(blk.scales[j] >> 4);
      for (int i = 0; i < kSub; ++i) {
        const int e = kSub * j + i;
        y[e] = dl * static_cast<float>(low_2bit(blk.qs, e)) - ml;
      }
    }
  }
}

void quantize_q3_K(const float* src, BlockQ3_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_q3_K_block(src + b * kQK_K, dst[b]);
}

void dequantize_q3_K(const BlockQ3_K* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ3_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < kNumSub; ++j) {
      const float dl = d * static_cast<float>(q3_K_scale(blk.scales, j) - 32);
      for (int i = 0; i < kSub; ++i) {
        const int e = kSub * j + i;
        const int high = (blk.hmask[e % 32] >> (e / 32)) & 1;
        y[e] = dl * static_cast<float>(low_2bit(blk.qs, e) + 4 * high - 4);
      }
    }
  }
}

}  // namespace tc::kernels::detail
