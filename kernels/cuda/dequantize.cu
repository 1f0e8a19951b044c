// Weight rows dequantized into packed f16 or f32 tiles for the cuBLAS GEMM
// of prefill (cublas_matmul.cpp), and the f32 -> f16 conversion of its
// activations. One thread per element group, grid-stride loops.
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void store(float v, uint16_t* out) { *out = __half_as_ushort(__float2half_rn(v)); }
__device__ __forceinline__ void store(float v, float* out) { *out = v; }

// w: rows row_bytes apart from `first_row`; out: [n_rows, n_in] packed.
template <DType T, typename Out>
__global__ void __launch_bounds__(kThreads)
    dequantize_rows_kernel(const uint8_t* __restrict__ first_row, int64_t row_bytes, int64_t n_in, int64_t n_rows,
                           Out* __restrict__ out) {
  constexpr int G = Dequant<T>::kGroup;
  const int64_t groups_per_row = n_in / G;
  const int64_t n_groups = groups_per_row * n_rows;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_groups;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / groups_per_row;
    const int64_t g = i % groups_per_row;
    float v[G];
    Dequant<T>::load(first_row + r * row_bytes, g, v);
    Out* o = out + r * n_in + g * G;
#pragma unroll
    for (int j = 0; j < G; ++j) store(v[j], o + j);
  }
}

template <typename Out>
void dequantize_rows(const Tensor& w, int64_t row_begin, int64_t n_rows, Out* out, cudaStream_t stream) {
  if (n_rows <= 0 || w.n_cols() <= 0) return;
  const auto* first = static_cast<const uint8_t*>(w.data) + row_begin * w.row_bytes;
  visit_weight_dtype(w.dtype, [&](auto type) {
    constexpr DType T = decltype(type)::value;
    const int64_t n_groups = w.n_cols() / Dequant<T>::kGroup * n_rows;
    dequantize_rows_kernel<T, Out><<<grid_stride_blocks(n_groups, kThreads), kThreads, 0, stream>>>(
        first, w.row_bytes, w.n_cols(), n_rows, out);
  });
  TC_CUDA_CHECK_LAUNCH();
}

__global__ void __launch_bounds__(kThreads)
    f32_to_f16_clamped_kernel(const float* __restrict__ x, int64_t n, uint16_t* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    // fminf/fmaxf would turn a NaN into the bound; keep it NaN.
    const float clamped = isnan(v) ? v : fminf(fmaxf(v, -65504.0f), 65504.0f);
    out[i] = __half_as_ushort(__float2half_rn(clamped));
  }
}

}  // namespace

void dequantize_rows_f16(const Tensor& w, int64_t row_begin, int64_t n_rows, uint16_t* out16, cudaStream_t stream) {
  dequantize_rows(w, row_begin, n_rows, out16, stream);
}

void dequantize_rows_f32(const Tensor& w, int64_t row_begin, int64_t n_rows, float* out32, cudaStream_t stream) {
  dequantize_rows(w, row_begin, n_rows, out32, stream);
}

void f32_to_f16_clamped(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  if (n <= 0) return;
  f32_to_f16_clamped_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, n, out);
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
