// Reference (scalar, portable) conversions between f32 and every weight
// dtype: f16/bf16 scalar conversion, and row quantize/dequantize for Q8_0,
// Q4_0, Q4_K and Q6_K with llama.cpp's block layouts and rounding rules.
// Thread-safe (pure functions). The fast SIMD kernels sit beside these.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace tc::kernels {

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);     // round to nearest even, inf/nan kept
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);    // round to nearest even, nan kept quiet

// Writes row_bytes(type, n) bytes to dst from n f32 values; n must be a
// multiple of the block size. Plain types are converted (F32, F16, BF16;
// I*/F64 are not weight types and are rejected by CHECK).
void quantize_row(DType type, const float* src, void* dst, int64_t n);
// Reads row_bytes(type, n) bytes from src and writes n f32 values to dst.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace tc::kernels
