// Matrix multiplication of a weight matrix (any weight dtype, as stored in
// the model file) with f32 activations: GEMV for decode (few tokens) and a
// blocked GEMM for prefill, chosen inside. Fast paths per instruction set
// (AVX2, AVX-512 incl. VNNI/BF16) are picked at run time by CPUID; a
// portable path runs everywhere. The activations are prepared once per call
// as llama.cpp prepares them: int8 blocks for int8 dot products against
// quantized weights, f16 for F16 weights (x rounded to nearest-even f16,
// clamped to +-65504), f32 as they came for F32 and BF16 weights.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor.h"

namespace tc::kernels {

// y[t * n_out + r] = sum_c W[r, c] * x[t * n_in + c]   for t < n_tokens, r < n_out
// w: weights, ne = {n_in, n_out} (row r = output r), any weight dtype
//    (is_weight_dtype: the float types and every block format), rows
//    `w.row_bytes` apart.
// x: f32 [n_tokens, n_in], contiguous.   y: f32 [n_tokens, n_out], contiguous.
// Deterministic: the same inputs give the same bits for any thread count.
// Uses the pool's threads; call from one thread at a time.
void matmul(const Tensor& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// One product of a matmul_many call: y = W x.
struct MatmulTarget {
  const Tensor* w;  // as matmul()'s w
  float* y;         // f32 [n_tokens, w->n_rows()]
};

// matmul() of several matrices with the same input x (attention's q, k and
// v; the FFN's gate and up): x is prepared once for neighbours that read it
// the same way (same dtype family and n_in, up to 4 of them) and their rows
// go to the pool as one job. Each output has the bits matmul() gives it.
void matmul_many(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens, ThreadPool& pool);

// The same product computed by the portable scalar path (the readable
// reference the fast paths are tested against).
void matmul_reference(const Tensor& w, const float* x, int64_t n_tokens, float* y);

// Which instruction-set variant matmul uses on this machine: "amx" (AMX
// int8 tiles), "avx512bf16", "avx512" (F/BW/VL/VNNI), "avx2" (with FMA and
// F16C) or "portable"; the best the CPU
// supports unless THERMOCLINE_ISA names a lower one (for bench output and logs).
std::string matmul_isa();

}  // namespace tc::kernels
