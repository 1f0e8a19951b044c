// matmul for batches (prefill): y = x w^T through cuBLAS with f32
// accumulation. F32 weights: SGEMM on the weights as they are (no TF32).
// F16 weights: GemmEx on the weights with x rounded to f16. BF16: tiles
// dequantized to f32 and SGEMM (bf16's range does not fit f16). Q8_0, Q4_0,
// Q4_K, Q6_K: tiles of rows dequantized to f16 (at most kGemmMaxTileBytes each,
// reusing the workspace) and GemmEx with x in f16.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_resources.h"
#include "kernels/tensor.h"

namespace tc::kernels::cuda {

// The workspace it takes: gemm_scratch() (kernels/device_scratch.h); called
// only above kGemvMaxTokens tokens.
// w: ne = {n_in, n_out}, any weight dtype, rows w.row_bytes apart (a
// multiple of 2, of 4 for F32); x: f32 [n_tokens, n_in]; y: f32 [n_tokens,
// n_out]. All on the device; issued on the handle's stream.
void matmul_cublas(const Tensor& w, const float* x, int64_t n_tokens, float* y, cublasHandle_t handle,
                   DeviceWorkspace& workspace, cudaStream_t stream);

}  // namespace tc::kernels::cuda
