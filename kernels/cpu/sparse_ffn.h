// The neuron-aware (PowerInfer-style) FFN of ReLU models on the CPU, for
// decode: gate/up as a GEMV over a gathered set of rows (the active neurons),
// down as a sum of scaled rows of the neuron-major ffn_down_t ("axpy").
// Both run on the pool's threads with matmul's run-time ISA choice.
#pragma once

#include <cstdint>

#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor.h"

namespace tc::kernels {

// Row-gathered GEMV (gate/up over the active neurons):
//   y[t * n_rows + k] = sum_c W[rows[k], c] * x[t * n_in + c]   for t < n_tokens, k < n_rows
// w:    weights, ne = {n_in, n_neurons} (row i = neuron i, e.g. ffn_gate f16
//       [n_ff, n_embd]), any weight dtype (is_weight_dtype), rows
//       `w.row_bytes` apart.
// x:    f32 [n_tokens, n_in], contiguous.
// rows: i32 [n_rows], each in [0, n_neurons); any order (ascending reads
//       memory fastest), duplicates allowed. Shared by all tokens (e.g. the
//       union of their predicted sets).
// y:    f32 [n_tokens, n_rows], contiguous, overwritten.
// Each output has exactly the bits matmul() gives for that weight row and
// token (the same activation quantization and summation order), for any
// thread count. Uses the pool's threads; call from one thread at a time.
void matmul_rows(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows, float* y,
                 ThreadPool& pool);

// Down projection as a sum of scaled rows:
//   y[t * n_out + j] = sum_k a[t * n_rows + k] * Wt[rows[k], j]   for t < n_tokens, j < n_out
// w_t:  weights, ne = {n_out, n_neurons} (row i = neuron i's output column,
//       contiguous: PowerInfer's ffn_down_t, f16 [n_ff, n_embd]), the dtypes
//       of matmul_rows; n_out a multiple of the dtype's block size.
// a:    f32 [n_tokens, n_rows], contiguous: the activations of the gathered
//       neurons (matmul_rows' layout, after the FFN activation).
// rows: i32 [n_rows] as in matmul_rows.
// y:    f32 [n_tokens, n_out], contiguous, overwritten.
// Exact zeros in `a` contribute nothing and are skipped; a row whose
// activation is 0 for every token is not read at all.
// Deterministic: y[t, j] is summed over the nonzero a[t, k] in ascending k,
// each term added to an f32 accumulator that starts at +0 (by FMA in the
// SIMD variants), whatever the thread count or column split; a token's
// outputs do not depend on the other tokens in the call. Uses the pool's
// threads; call from one thread at a time.
void axpy_rows(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows, float* y,
               ThreadPool& pool);

// The same computations by the portable scalar path, single-threaded (the
// readable references the fast paths are tested against).
void matmul_rows_reference(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                           float* y);
void axpy_rows_reference(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                         float* y);

}  // namespace tc::kernels
