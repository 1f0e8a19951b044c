// Reference (scalar, portable) conversions between f32 and every weight
// dtype: f16/bf16 scalar conversion, and row quantize/dequantize for every
// block format (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K..Q6_K, IQ4_XS,
// MXFP4)
// with llama.cpp's block layouts and rounding rules.
// Thread-safe (pure functions). The fast SIMD kernels sit beside these.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace tc::kernels {

// Exact; a NaN keeps sign and payload and comes out quiet (as F16C and ggml).
float f16_to_f32(uint16_t h);
// Round to nearest even, subnormals kept, overflow to inf; NaN becomes the
// canonical quiet NaN 0x7e00 with its sign (as ggml).
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);    // exact (the top half of the f32)
uint16_t f32_to_bf16(float f);    // round to nearest even, nan kept quiet
// The f32 factor of an MXFP4 block with E8M0 exponent e: 2^(e - 128), half
// the E8M0 value, as kMXFP4Values are doubled (ggml's
// GGML_E8M0_TO_FP32_HALF). Exact for every e; e = 0 and 1 are subnormal.
float e8m0_to_f32_half(uint8_t e);

// Writes row_bytes(type, n) bytes to dst from n f32 values; n must be a
// multiple of the block size. Plain types are converted (F32, F16, BF16;
// I*/F64 are not weight types and are rejected by CHECK). The block formats
// write exactly the bytes of llama.cpp's ggml_quantize_chunk without an
// importance matrix (quantize_row_*_ref, except IQ4_NL whose chunk
// quantizer searches 15 scales where its _ref takes one); their input must
// be finite.
void quantize_row(DType type, const float* src, void* dst, int64_t n);
// Reads row_bytes(type, n) bytes from src and writes n f32 values to dst.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace tc::kernels
