// The sparse FFN's down projection on the GPU: axpy_rows as a sum of scaled
// rows of ffn_down_t, in two passes without atomics (see launch.h). Pass 1:
// thread (split, token, column group) walks its split's share of the active
// rows in ascending order; consecutive threads take consecutive column
// groups, so each weight row is read coalesced, and the activation a[t, k]
// is the same for the whole warp (a zero skips the row's read for that
// token). Pass 2 adds the splits in order. matmul_rows is gemv.cu with a row
// list.
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// w_t: rows of n_out elements, row_bytes apart, n_neurons of them.
// a: f32 [n_tokens, n_rows]; rows: i32 [n_rows];
// partial: f32 [n_split, n_tokens, n_out].
template <DType T>
__global__ void __launch_bounds__(kThreads)
    axpy_rows_partial_kernel(const uint8_t* __restrict__ w_t, int64_t row_bytes, int64_t n_out, int64_t n_neurons,
                             const float* __restrict__ a, int64_t n_tokens, const int32_t* __restrict__ rows,
                             int64_t n_rows, int64_t n_split, float* __restrict__ partial) {
  constexpr int G = Dequant<T>::kGroup;
  const int64_t n_col_groups = n_out / G;
  const int64_t n_items = n_split * n_tokens * n_col_groups;
  const int64_t rows_per_split = (n_rows + n_split - 1) / n_split;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_items;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t cg = i % n_col_groups;
    const int64_t t = (i / n_col_groups) % n_tokens;
    const int64_t s = i / (n_col_groups * n_tokens);
    const int64_t k_begin = s * rows_per_split;
    const int64_t k_end = k_begin + rows_per_split < n_rows ? k_begin + rows_per_split : n_rows;
    float acc[G];
#pragma unroll
    for (int j = 0; j < G; ++j) acc[j] = 0.0f;
    const float* at = a + t * n_rows;
    for (int64_t k = k_begin; k < k_end; ++k) {
      const float ak = at[k];
      if (ak == 0.0f) continue;
      const int64_t r = rows[k];
      if (r < 0 || r >= n_neurons) {
#pragma unroll
        for (int j = 0; j < G; ++j) acc[j] = nanf("");
        continue;
      }
      float wv[G];
      Dequant<T>::load(w_t + r * row_bytes, cg, wv);
#pragma unroll
      for (int j = 0; j < G; ++j) acc[j] = fmaf(ak, wv[j], acc[j]);
    }
    float* out = partial + (s * n_tokens + t) * n_out + cg * G;
#pragma unroll
    for (int j = 0; j < G; ++j) out[j] = acc[j];
  }
}

// y[i] = sum over s < n_split (ascending) of partial[s * n + i].
__global__ void __launch_bounds__(kThreads)
    sum_partials_kernel(const float* __restrict__ partial, int64_t n_split, int64_t n, float* __restrict__ y) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t s = 0; s < n_split; ++s) sum += partial[s * n + i];
    y[i] = sum;
  }
}

}  // namespace

void axpy_rows_partial(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                       int64_t n_split, float* partial, cudaStream_t stream) {
  if (n_tokens <= 0 || w_t.n_cols() <= 0) return;
  TC_CHECK(n_split >= 1, "axpy_rows_partial: n_split must be at least 1");
  visit_weight_dtype(w_t.dtype, [&](auto type) {
    constexpr DType T = decltype(type)::value;
    const int64_t n_items = n_split * n_tokens * (w_t.n_cols() / Dequant<T>::kGroup);
    axpy_rows_partial_kernel<T><<<grid_stride_blocks(n_items, kThreads), kThreads, 0, stream>>>(
        static_cast<const uint8_t*>(w_t.data), w_t.row_bytes, w_t.n_cols(), w_t.n_rows(), a, n_tokens, rows, n_rows,
        n_split, partial);
  });
  TC_CUDA_CHECK_LAUNCH();
}

void sum_partials(const float* partial, int64_t n_split, int64_t n, float* y, cudaStream_t stream) {
  if (n <= 0) return;
  sum_partials_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(partial, n_split, n, y);
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
