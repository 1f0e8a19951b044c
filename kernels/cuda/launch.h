// Host-side launchers of the CUDA kernels, one family per .cu file. Every
// pointer is device memory (or pinned host memory mapped into the device's
// address space); every launch goes on `stream` and returns at once. Shapes
// are validated by CudaBackend before these are called; launchers check
// only what the launch itself needs (grid limits) and that the launch was
// accepted (TC_CUDA_CHECK_LAUNCH). Zero-sized work launches nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/ops.h"
#include "kernels/device_scratch.h"
#include "kernels/tensor.h"

namespace tc::kernels::cuda {

// Most tokens one GEMV launch reads each weight row for (gemv.cu); matmul
// takes cuBLAS above this.
using kernels::kGemvMaxTokens;

// gemv.cu. y[t * n_y + k] = dot(w.row(rows ? rows[k] : k), x[t * n_in : ...])
// for t < n_tokens, k < n_y. w: any weight dtype, ne = {n_in, n_w_rows};
// x: f32 [n_tokens, n_in]; rows: i32 [n_y] or nullptr (then n_y = n_w_rows);
// y: f32 [n_tokens, n_y]. A row index outside [0, n_w_rows) gives NaN.
// One warp per (output, group of kGemvMaxTokens tokens); a token's result
// does not depend on the other tokens.
void gemv(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_y, float* y,
          cudaStream_t stream);

// dequantize.cu. Rows [row_begin, row_begin + n_rows) of w, dequantized
// (exact, as dequantize_row) and stored packed: f16 (round to nearest even)
// into out16 [n_rows, n_in], or f32 into out32 [n_rows, n_in].
void dequantize_rows_f16(const Tensor& w, int64_t row_begin, int64_t n_rows, uint16_t* out16, cudaStream_t stream);
void dequantize_rows_f32(const Tensor& w, int64_t row_begin, int64_t n_rows, float* out32, cudaStream_t stream);
// out[i] = f16(clamp(x[i], -65504, 65504)): GEMM activations (as the CPU's F16 path).
void f32_to_f16_clamped(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);

// sparse_ffn.cu. axpy_rows in two deterministic passes: split s of n_split
// sums a[t, k] * w_t[rows[k], :] over its contiguous share of k (ascending,
// exact zeros of a skipped) into partial [n_split, n_tokens, n_out]; then
// y[t, j] = sum over s (ascending) of partial[s, t, j]. No atomics: the same
// bits on every run. A row index outside [0, n_neurons) gives NaN.
void axpy_rows_partial(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                       int64_t n_split, float* partial, cudaStream_t stream);
void sum_partials(const float* partial, int64_t n_split, int64_t n, float* y, cudaStream_t stream);

// get_rows.cu. out[t, :] = dequantized row ids[t] of table (ne = {n_embd,
// n_vocab}; weight dtypes and Q5_0), bit-identical to dequantize_row; an id
// outside [0, n_vocab) gives a NaN row.
void get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out, cudaStream_t stream);

// norm_rope.cu. As kernels/cpu/ops.h: rms_norm and layer_norm (y may alias
// x) and rope (in place; params.freq_factors in device memory).
void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y,
              cudaStream_t stream);
void layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n, float eps,
                float* y, cudaStream_t stream);
void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
          const RopeParams& params, cudaStream_t stream);

// attention.cu. As kernels/cpu/ops.h attention; head_dim <= kMaxHeadDim. A
// position outside [0, n_kv) gives a NaN output row.
inline constexpr int64_t kMaxHeadDim = 256;
void attention(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_tokens, int64_t n_kv, int64_t n_head,
               int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
               const AttentionParams& params, cudaStream_t stream);

// elementwise.cu. As kernels/cpu/ops.h (out may alias gate; up may be null
// for the ungated activations); add: y += x; add_bias: y[r, :] += bias;
// scale: x *= s; softcap: x = cap * tanh(x / cap).
void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream);
void add(float* y, const float* x, int64_t n, cudaStream_t stream);
void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n, cudaStream_t stream);
void scale(float* x, int64_t n, float s, cudaStream_t stream);
void softcap(float* x, int64_t n, float cap, cudaStream_t stream);
// relu: x = x < 0 ? 0 : x in place. threshold_bits: as Backend::threshold_bits
// (x: f32 [n_rows, n]; bits: u32 [n_rows, (n + 31) / 32]).
void relu(float* x, int64_t n, cudaStream_t stream);
void threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits, cudaStream_t stream);
void store_f16(const float* src, int64_t n, uint16_t* dst, cudaStream_t stream);

// argmax.cu. out[r] = the index of the largest x[r, :] (NaN counts as -inf;
// ties and an all -inf/NaN row go to the lowest index). x: f32 [n_rows, n];
// out: i32 [n_rows].
void argmax_rows(const float* x, int64_t n_rows, int64_t n, int32_t* out, cudaStream_t stream);

}  // namespace tc::kernels::cuda
