// The per-pair angle scale and the cos/sin magnitude of RoPE with optional
// YaRN (RopeParams in kernels/cpu/ops.h), shared by the CPU and CUDA kernels
// so both compute the same doubles.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TC_ROPE_HD __host__ __device__
#else
#define TC_ROPE_HD
#endif

namespace tc::kernels {

// What pair i's unscaled angle is multiplied by: freq_scale, or with YaRN
// (ext_factor != 0) freq_scale * (1 - mix) + mix, mix = ramp(i) * ext_factor.
TC_ROPE_HD inline double rope_pair_scale(double freq_scale, double ext_factor, double corr_low, double corr_high,
                                         int64_t i) {
  if (ext_factor == 0.0) return freq_scale;
  const double span = corr_high - corr_low > 0.001 ? corr_high - corr_low : 0.001;
  const double y = (static_cast<double>(i) - corr_low) / span;
  const double ramp = 1.0 - (y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y));
  const double mix = ramp * ext_factor;
  return freq_scale * (1.0 - mix) + mix;
}

// cos and sin are multiplied by attn_factor, and with YaRN by
// 1 + 0.1 ln(1 / freq_scale) as well.
TC_ROPE_HD inline double rope_magnitude(double freq_scale, double ext_factor, double attn_factor) {
  return ext_factor == 0.0 ? attn_factor : attn_factor * (1.0 + 0.1 * log(1.0 / freq_scale));
}

}  // namespace tc::kernels
