// Embedding lookup: one block per token dequantizes the table row of its id
// with dequantize.cuh, which reproduces dequantize_row bit for bit.
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// table: n_vocab rows of n_embd elements, row_bytes apart; ids: i32
// [n_tokens]; out: f32 [n_tokens, n_embd]. grid.x = n_tokens.
template <DType T>
__global__ void __launch_bounds__(kThreads)
    get_rows_kernel(const uint8_t* __restrict__ table, int64_t row_bytes, int64_t n_embd, int64_t n_vocab,
                    const int32_t* __restrict__ ids, float* __restrict__ out) {
  constexpr int G = Dequant<T>::kGroup;
  const int64_t t = blockIdx.x;
  const int64_t id = ids[t];
  float* o = out + t * n_embd;
  if (id < 0 || id >= n_vocab) {
    for (int64_t i = threadIdx.x; i < n_embd; i += blockDim.x) o[i] = nanf("");
    return;
  }
  const uint8_t* row = table + id * row_bytes;
  for (int64_t g = threadIdx.x; g < n_embd / G; g += blockDim.x) {
    float v[G];
    Dequant<T>::load(row, g, v);
#pragma unroll
    for (int j = 0; j < G; ++j) o[g * G + j] = v[j];
  }
}

}  // namespace

void get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out, cudaStream_t stream) {
  if (n_tokens <= 0 || table.n_cols() <= 0) return;
  visit_table_dtype(table.dtype, [&](auto type) {
    get_rows_kernel<decltype(type)::value><<<grid_x(n_tokens), kThreads, 0, stream>>>(
        static_cast<const uint8_t*>(table.data), table.row_bytes, table.n_cols(), table.n_rows(), ids, out);
  });
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
