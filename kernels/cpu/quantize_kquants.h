// Internal to kernels/cpu: the k-quant (256-element super-block) reference
// quantizers behind quantize_row / dequantize_row. Callers use quantize.h.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace tc::kernels::detail {

// n_blocks super-blocks of kQK_K floats <-> n_blocks blocks.
void quantize_q4_K(const float* src, BlockQ4_K* dst, int64_t n_blocks);
void dequantize_q4_K(const BlockQ4_K* src, float* dst, int64_t n_blocks);
void quantize_q6_K(const float* src, BlockQ6_K* dst, int64_t n_blocks);
void dequantize_q6_K(const BlockQ6_K* src, float* dst, int64_t n_blocks);

}  // namespace tc::kernels::detail
