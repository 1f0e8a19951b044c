// Reference quantizers for the k-quant formats Q4_K, Q5_K and Q6_K (Q2_K
// and Q3_K: quantize_kquants_low.cpp). They follow llama.cpp's
// quantize_row_q{4,5,6}_K_ref step for step (same search grids, same float
// operations in the same order, no fused multiply-adds) so that the bytes
// written equal llama.cpp's; the oracle tests in tests/oracle hold them to
// that.
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

// Q4_K: 8 sub-blocks of 32 elements, 4-bit levels, 6-bit scale and min each.
constexpr int kQ4KSub = 32;
constexpr int kQ4KNumSub = static_cast<int>(kQK_K) / kQ4KSub;
constexpr int kQ4KMaxLevel = 15;
constexpr int kQ5KMaxLevel = 31;  // Q5_K: the same layout with 5-bit levels
// Q6_K: 16 sub-blocks of 16 elements, signed 6-bit levels, int8 scale each.
constexpr int kQ6KSub = 16;
constexpr int kQ6KNumSub = static_cast<int>(kQK_K) / kQ6KSub;
constexpr int kQ6KHalfRange = 32;   // levels -32..31, stored + 32
// The 6-bit sub-block scales and mins of Q4_K, and the int8 scales of Q6_K.
constexpr float kQ4KScaleLevels = 63.0f;
constexpr float kQ6KScaleLevels = 128.0f;

// Fits x[i] ~= scale * (L[i] - n_max) with signed levels in [-n_max,
// n_max - 1], weights x[i]^2 so that large values are fitted best
// (llama.cpp's make_qx_quants with rmse_type 1 and no importance weights).
// The first grid puts the value of largest magnitude on level -n_max; 18
// more grids with n_max +- 0.1 * k levels are tried and the one whose
// least-squares scale explains the most weighted energy wins. Writes the
// stored levels (offset by n_max) to L and returns the scale, which has the
// sign that maps the extreme value to -n_max.
float fit_symmetric_scale(const float* x, int n, int n_max, int8_t* L) {
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

  const float n_max_f = static_cast<float>(n_max);
  // Accumulates the weighted sums for one grid; the levels are recomputed
  // when a grid wins rather than kept, as in llama.cpp.
  auto sums_for = [&](float iscale, float& sum_lx, float& sum_l2) {
    sum_lx = 0;
    sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(clamp_int(nearest_int(iscale * x[i]), -n_max, n_max - 1));
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * l;
      sum_l2 += w * l * l;
    }
  };
  auto store_levels = [&](float iscale) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(n_max + clamp_int(nearest_int(iscale * x[i]), -n_max, n_max - 1));
    }
  };

  float iscale = -n_max_f / max;
  float sum_lx;
  float sum_l2;
  sums_for(iscale, sum_lx, sum_l2);
  store_levels(iscale);
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  // With the least-squares scale s, the error is sum w x^2 - s * sum_lx,
  // so the best grid is the one with the largest s * sum_lx.
  float best = scale * sum_lx;
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    iscale = -(n_max_f + 0.1f * static_cast<float>(k)) / max;
    sums_for(iscale, sum_lx, sum_l2);
    // sum_lx^2 / sum_l2 > best, without dividing.
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      store_levels(iscale);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

// Q4_K packs 8 scales and 8 mins of 6 bits into 12 bytes: sub-blocks 0-3
// use the low 6 bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 keep
// their low nibbles in bytes 8-11 (scale low, min high) and their top two
// bits in the spare top bits of bytes 0-3 (scale) and 4-7 (min).
void pack_q4_K_scale_min(uint8_t* packed, int j, uint8_t ls, uint8_t lm) {
  if (j < 4) {
    packed[j] = ls;
    packed[j + 4] = lm;
  } else {
    packed[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
    packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
    packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
  }
}

void unpack_q4_K_scale_min(const uint8_t* packed, int j, uint8_t& ls, uint8_t& lm) {
  if (j < 4) {
    ls = packed[j] & 63;
    lm = packed[j + 4] & 63;
  } else {
    ls = static_cast<uint8_t>((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4));
    lm = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

// The levels (0..n_max), packed 6-bit scales and mins and f16 super-scales
// of one Q4_K or Q5_K super-block (they differ in n_max and search grid).
struct ScaleMinFit {
  uint8_t L[kQK_K];
  uint8_t scales[12];
  uint16_t d, dmin;
};

void fit_q4_K_like(const float* x, int n_max, float rmin, float rdelta, int n_step, ScaleMinFit& y) {
  float weights[kQ4KSub];
  float scales[kQ4KNumSub];
  float mins[kQ4KNumSub];

  // 1. Fit each sub-block on its own, weighting every element by its
  //    magnitude plus the sub-block's rms.
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < kQ4KNumSub; ++j) {
    const float* xs = x + kQ4KSub * j;
    float sum_x2 = 0;
    for (int l = 0; l < kQ4KSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / static_cast<float>(kQ4KSub));
    for (int l = 0; l < kQ4KSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_min(xs, weights, kQ4KSub, n_max, rmin, rdelta, n_step, false, y.L + kQ4KSub * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // 2. Quantize the scales and mins to 6 bits against two f16 super-scales.
  //    The uint8_t conversion wraps like llama.cpp's before the cap at 63.
  const float inv_scale = max_scale > 0 ? kQ4KScaleLevels / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? kQ4KScaleLevels / max_min : 0.0f;
  std::memset(y.scales, 0, sizeof y.scales);
  for (int j = 0; j < kQ4KNumSub; ++j) {
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    if (ls > 63) ls = 63;
    if (lm > 63) lm = 63;
    pack_q4_K_scale_min(y.scales, j, ls, lm);
  }
  y.d = f32_to_f16(max_scale / kQ4KScaleLevels);
  y.dmin = f32_to_f16(max_min / kQ4KScaleLevels);

  // 3. Re-assign levels against the scales as stored, so dequantization
  //    sees the levels that suit the rounded scales. A sub-block whose scale
  //    rounded to 0 keeps the levels of step 1 (they decode to -min anyway).
  const float d_all = f16_to_f32(y.d);
  const float dmin_all = f16_to_f32(y.dmin);
  for (int j = 0; j < kQ4KNumSub; ++j) {
    uint8_t ls;
    uint8_t lm;
    unpack_q4_K_scale_min(y.scales, j, ls, lm);
    const float d = d_all * static_cast<float>(ls);
    if (d == 0) continue;
    const float dm = dmin_all * static_cast<float>(lm);
    for (int i = 0; i < kQ4KSub; ++i) {
      const int l = nearest_int((x[kQ4KSub * j + i] + dm) / d);
      y.L[kQ4KSub * j + i] = static_cast<uint8_t>(clamp_int(l, 0, n_max));
    }
  }
}

void quantize_q4_K_block(const float* x, BlockQ4_K& y) {
  ScaleMinFit fit;
  fit_q4_K_like(x, kQ4KMaxLevel, -1.0f, 0.1f, 20, fit);
  std::memcpy(y.scales, fit.scales, sizeof y.scales);
  y.d = fit.d;
  y.dmin = fit.dmin;
  // Each 32-byte chunk of qs holds two consecutive sub-blocks: the first in
  // the low nibbles, the second in the high nibbles.
  for (int chunk = 0; chunk < static_cast<int>(kQK_K) / 64; ++chunk) {
    const uint8_t* lo = fit.L + 64 * chunk;
    uint8_t* q = y.qs + 32 * chunk;
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(lo[l] | (lo[l + 32] << 4));
  }
}

void quantize_q5_K_block(const float* x, BlockQ5_K& y) {
  ScaleMinFit fit;
  fit_q4_K_like(x, kQ5KMaxLevel, -0.5f, 0.1f, 15, fit);
  std::memcpy(y.scales, fit.scales, sizeof y.scales);
  y.d = fit.d;
  y.dmin = fit.dmin;
  // The low 4 bits as Q4_K packs them; the 5th bit of chunk c's first
  // sub-block in bit 2c of qh[l], of its second in bit 2c + 1.
  std::memset(y.qh, 0, sizeof y.qh);
  for (int chunk = 0; chunk < static_cast<int>(kQK_K) / 64; ++chunk) {
    const uint8_t* lo = fit.L + 64 * chunk;
    uint8_t* q = y.qs + 32 * chunk;
    for (int l = 0; l < 32; ++l) {
      q[l] = static_cast<uint8_t>((lo[l] & 0x0f) | ((lo[l + 32] & 0x0f) << 4));
      y.qh[l] |= static_cast<uint8_t>(((lo[l] >> 4) << (2 * chunk)) | ((lo[l + 32] >> 4) << (2 * chunk + 1)));
    }
  }
}

void quantize_q6_K_block(const float* x, BlockQ6_K& y) {
  int8_t L[kQK_K];
  float scales[kQ6KNumSub];

  // 1. Fit each 16-element sub-block; keep the signed scale of largest
  //    magnitude.
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int j = 0; j < kQ6KNumSub; ++j) {
    scales[j] = fit_symmetric_scale(x + kQ6KSub * j, kQ6KSub, kQ6KHalfRange, L + kQ6KSub * j);
    const float abs_scale = std::fabs(scales[j]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(&y, 0, sizeof y);
    return;
  }

  // 2. int8 sub-block scales against one f16 super-scale; the largest maps
  //    to -128 (the sign trick again uses the full int8 range).
  const float iscale = -kQ6KScaleLevels / max_scale;
  y.d = f32_to_f16(1.0f / iscale);
  for (int j = 0; j < kQ6KNumSub; ++j) {
    const int s = nearest_int(iscale * scales[j]);
    y.scales[j] = static_cast<int8_t>(s < 127 ? s : 127);
  }

  // 3. Re-assign levels against the stored scales (a zero scale keeps the
  //    levels of step 1).
  const float d_all = f16_to_f32(y.d);
  for (int j = 0; j < kQ6KNumSub; ++j) {
    const float d = d_all * static_cast<float>(y.scales[j]);
    if (d == 0) continue;
    for (int i = 0; i < kQ6KSub; ++i) {
      const int l = nearest_int(x[kQ6KSub * j + i] / d);
      L[kQ6KSub * j + i] = static_cast<int8_t>(kQ6KHalfRange + clamp_int(l, -32, 31));
    }
  }

  // 4. Per 128 elements: ql[0..31] holds elements 0-31 (low nibble) and
  //    64-95 (high), ql[32..63] elements 32-63 and 96-127; qh[l] holds the
  //    top two bits of elements l, l+32, l+64, l+96 in bit pairs 0..3.
  for (int half = 0; half < static_cast<int>(kQK_K) / 128; ++half) {
    const int8_t* q = L + 128 * half;
    uint8_t* ql = y.ql + 64 * half;
    uint8_t* qh = y.qh + 32 * half;
    for (int l = 0; l < 32; ++l) {
      const auto v0 = static_cast<uint8_t>(q[l]);
      const auto v1 = static_cast<uint8_t>(q[l + 32]);
      const auto v2 = static_cast<uint8_t>(q[l + 64]);
      const auto v3 = static_cast<uint8_t>(q[l + 96]);
      ql[l] = static_cast<uint8_t>((v0 & 0x0f) | ((v2 & 0x0f) << 4));
      ql[l + 32] = static_cast<uint8_t>((v1 & 0x0f) | ((v3 & 0x0f) << 4));
      qh[l] = static_cast<uint8_t>((v0 >> 4) | ((v1 >> 4) << 2) | ((v2 >> 4) << 4) | ((v3 >> 4) << 6));
    }
  }
}

}  // namespace

// fit_scale_min (quantize_kquants.h). Starts from the grid that spans
// [min(x, 0), max(x)], then tries n_step + 1 denser or sparser grids
// (n_max + rmin + rdelta * k levels over the same span); for each it assigns
// levels and solves the 2x2 weighted least-squares problem for scale and min
// in closed form, keeping the fit with the lowest error. Returns the scale
// and writes the offset (positive, subtracted on dequantize) to *neg_min.
float fit_scale_min(const float* x, const float* w, int n, int n_max, float rmin, float rdelta, int n_step,
                    bool use_mad, uint8_t* L, float* neg_min) {
  float min = x[0];
  float max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  // The format stores a non-negative offset: the range always includes 0.
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.0f;
  }

  const float n_max_f = static_cast<float>(n_max);
  float iscale = n_max_f / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, n_max);
    L[i] = static_cast<uint8_t>(l);
    float diff = scale * static_cast<float>(l) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += w[i] * diff;
  }

  uint8_t trial[32];
  for (int step = 0; step <= n_step; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + n_max_f) / (max - min);
    float sum_l = 0;
    float sum_l2 = 0;
    float sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, n_max);
      trial[i] = static_cast<uint8_t>(l);
      const float lf = static_cast<float>(l);
      sum_l += w[i] * lf;
      sum_l2 += w[i] * lf * lf;
      sum_xl += w[i] * lf * x[i];
    }
    // Normal equations of min over (scale, offset) of sum w (scale*l + offset - x)^2.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      // A positive offset cannot be stored: refit the scale alone.
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) {
      float diff = this_scale * static_cast<float>(trial[i]) + this_min - x[i];
      diff = use_mad ? std::fabs(diff) : diff * diff;
      error += w[i] * diff;
    }
    if (error < best_error) {
      for (int i = 0; i < n; ++i) L[i] = trial[i];
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

void quantize_q4_K(const float* src, BlockQ4_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_q4_K_block(src + b * kQK_K, dst[b]);
}

void dequantize_q4_K(const BlockQ4_K* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ4_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    float* y = dst + b * kQK_K;
    for (int chunk = 0; chunk < static_cast<int>(kQK_K) / 64; ++chunk) {
      uint8_t ls;
      uint8_t lm;
      unpack_q4_K_scale_min(blk.scales, 2 * chunk, ls, lm);
      const float d_lo = d * static_cast<float>(ls);
      const float m_lo = dmin * static_cast<float>(lm);
      unpack_q4_K_scale_min(blk.scales, 2 * chunk + 1, ls, lm);
      const float d_hi = d * static_cast<float>(ls);
      const float m_hi = dmin * static_cast<float>(lm);
      const uint8_t* q = blk.qs + 32 * chunk;
      float* out = y + 64 * chunk;
      for (int l = 0; l < 32; ++l) out[l] = d_lo * static_cast<float>(q[l] & 0x0f) - m_lo;
      for (int l = 0; l < 32; ++l) out[l + 32] = d_hi * static_cast<float>(q[l] >> 4) - m_hi;
    }
  }
}

void quantize_q5_K(const float* src, BlockQ5_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_q5_K_block(src + b * kQK_K, dst[b]);
}

void dequantize_q5_K(const BlockQ5_K* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ5_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    float* y = dst + b * kQK_K;
    for (int chunk = 0; chunk < static_cast<int>(kQK_K) / 64; ++chunk) {
      uint8_t ls;
      uint8_t lm;
      unpack_q4_K_scale_min(blk.scales, 2 * chunk, ls, lm);
      const float d_lo = d * static_cast<float>(ls);
      const float m_lo = dmin * static_cast<float>(lm);
      unpack_q4_K_scale_min(blk.scales, 2 * chunk + 1, ls, lm);
      const float d_hi = d * static_cast<float>(ls);
      const float m_hi = dmin * static_cast<float>(lm);
      const uint8_t* q = blk.qs + 32 * chunk;
      float* out = y + 64 * chunk;
      for (int l = 0; l < 32; ++l) {
        const int lo = (q[l] & 0x0f) | (((blk.qh[l] >> (2 * chunk)) & 1) << 4);
        const int hi = (q[l] >> 4) | (((blk.qh[l] >> (2 * chunk + 1)) & 1) << 4);
        out[l] = d_lo * static_cast<float>(lo) - m_lo;
        out[l + 32] = d_hi * static_cast<float>(hi) - m_hi;
      }
    }
  }
}

void quantize_q6_K(const float* src, BlockQ6_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_q6_K_block(src + b * kQK_K, dst[b]);
}

void dequantize_q6_K(const BlockQ6_K* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ6_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    for (int half = 0; half < static_cast<int>(kQK_K) / 128; ++half) {
      const uint8_t* ql = blk.ql + 64 * half;
      const uint8_t* qh = blk.qh + 32 * half;
      const int8_t* sc = blk.scales + 8 * half;
      float* y = dst + b * kQK_K + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int sub = l / 16;
        const int q0 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        // (d * scale) * q, in that order, as llama.cpp evaluates it.
        y[l] = d * static_cast<float>(sc[sub]) * static_cast<float>(q0);
        y[l + 32] = d * static_cast<float>(sc[sub + 2]) * static_cast<float>(q1);
        y[l + 64] = d * static_cast<float>(sc[sub + 4]) * static_cast<float>(q2);
        y[l + 96] = d * static_cast<float>(sc[sub + 6]) * static_cast<float>(q3);
      }
    }
  }
}

}  // namespace tc::kernels::detail
