// Internal to kernels/cpu: the k-quant (256-element super-block), IQ4 and
// MXFP4 reference quantizers behind quantize_row / dequantize_row, and the
// scale-fitting helpers the k-quant files share. Callers use quantize.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/dtype.h"

namespace tc::kernels::detail {

// n_blocks super-blocks of kQK_K floats <-> n_blocks blocks.
void quantize_q2_K(const float* src, BlockQ2_K* dst, int64_t n_blocks);
void dequantize_q2_K(const BlockQ2_K* src, float* dst, int64_t n_blocks);
void quantize_q3_K(const float* src, BlockQ3_K* dst, int64_t n_blocks);
void dequantize_q3_K(const BlockQ3_K* src, float* dst, int64_t n_blocks);
void quantize_q4_K(const float* src, BlockQ4_K* dst, int64_t n_blocks);
void dequantize_q4_K(const BlockQ4_K* src, float* dst, int64_t n_blocks);
void quantize_q5_K(const float* src, BlockQ5_K* dst, int64_t n_blocks);
void dequantize_q5_K(const BlockQ5_K* src, float* dst, int64_t n_blocks);
void quantize_q6_K(const float* src, BlockQ6_K* dst, int64_t n_blocks);
void dequantize_q6_K(const BlockQ6_K* src, float* dst, int64_t n_blocks);
void quantize_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n_blocks);
void dequantize_iq4_xs(const BlockIQ4_XS* src, float* dst, int64_t n_blocks);
// n_blocks blocks of kQK4_NL floats <-> n_blocks blocks.
void quantize_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n_blocks);
void dequantize_iq4_nl(const BlockIQ4_NL* src, float* dst, int64_t n_blocks);
// n_blocks blocks of kQK_MXFP4 floats <-> n_blocks blocks (quantize_mxfp4.cpp).
void quantize_mxfp4(const float* src, BlockMXFP4* dst, int64_t n_blocks);
void dequantize_mxfp4(const BlockMXFP4* src, float* dst, int64_t n_blocks);

// Fits x[i] ~= scale * L[i] - neg_min over n <= 32 values with L[i] in
// [0, n_max] and neg_min >= 0, minimising the weighted squared error (or the
// weighted absolute error with use_mad): llama.cpp's make_qkx2_quants.
// Returns the scale and writes the offset (subtracted on dequantize) to
// *neg_min. Defined in quantize_kquants.cpp.
float fit_scale_min(const float* x, const float* w, int n, int n_max, float rmin, float rdelta, int n_step,
                    bool use_mad, uint8_t* L, float* neg_min);

// A group whose largest magnitude is below this is all zeros (llama.cpp's
// GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

// Internal linkage: these files are compiled for the baseline ISA only, but
// keep inline helpers out of the linker's one-copy rule all the same.
namespace {

// Rounds to the nearest integer, ties to even, exactly as llama.cpp's
// nearest_int: adding 1.5 * 2^23 gives a float whose ulp is 1, so the FPU's
// own round-to-nearest-even does the rounding, and the integer sits in the
// low mantissa bits offset by 2^22. Exact for |x| < 2^22; beyond that it
// returns what llama.cpp's returns (the same bit operations).
inline int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace

}  // namespace tc::kernels::detail
