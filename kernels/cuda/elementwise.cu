// Element-wise ops as kernels/cpu/ops.cpp computes them: the FFN
// activations (SwiGLU with IEEE division and expf, not the fast
// intrinsics), y += x, and f32 -> f16 stores for the KV cache (round to
// nearest even, NaN to the canonical quiet NaN with its sign, as f32_to_f16);
// the predictor's relu and its active-set bitmask (as CpuBackend's).
#include <cuda_fp16.h>

#include <cmath>

#include "kernels/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// gate, up, out: f32 [n]; out may alias gate (each element is read before
// it is written, by the same thread), so no __restrict__ on those.
template <Activation A>
__global__ void __launch_bounds__(kThreads)
    ffn_activation_kernel(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    const float u = up[i];
    float r;
    if constexpr (A == Activation::SwiGLU) {
      r = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
    } else if constexpr (A == Activation::ReGLU) {
      r = __fmul_rn(g > 0.0f ? g : 0.0f, u);
    } else {
      r = __fmul_rn(g > 0.0f ? g : 0.0f, u > 0.0f ? u : 0.0f);
    }
    out[i] = r;
  }
}

__global__ void __launch_bounds__(kThreads) add_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = __fadd_rn(y[i], x[i]);
  }
}

__global__ void __launch_bounds__(kThreads) relu_kernel(float* x, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    x[i] = v < 0.0f ? 0.0f : v;
  }
}

// One thread per output word: 32 consecutive scores of one row.
__global__ void __launch_bounds__(kThreads) threshold_bits_kernel(const float* __restrict__ x, int64_t n_rows,
                                                                  int64_t n, float threshold,
                                                                  uint32_t* __restrict__ bits) {
  const int64_t n_words = (n + 31) / 32;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_rows * n_words;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n_words;
    const int64_t w = i % n_words;
    const float* row = x + r * n + 32 * w;
    const int64_t end = n - 32 * w < 32 ? n - 32 * w : 32;
    uint32_t word = 0;
    for (int64_t b = 0; b < end; ++b) word |= static_cast<uint32_t>(row[b] > threshold) << b;
    bits[i] = word;
  }
}

__global__ void __launch_bounds__(kThreads)
    store_f16_kernel(const float* __restrict__ src, int64_t n, uint16_t* __restrict__ dst) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = src[i];
    if (isnan(v)) {
      dst[i] = static_cast<uint16_t>((__float_as_uint(v) >> 16) & 0x8000u) | 0x7e00u;
    } else {
      dst[i] = __half_as_ushort(__float2half_rn(v));
    }
  }
}

}  // namespace

void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  const unsigned blocks = grid_stride_blocks(n, kThreads);
  switch (act) {
    case Activation::SwiGLU:
      ffn_activation_kernel<Activation::SwiGLU><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
      break;
    case Activation::ReGLU:
      ffn_activation_kernel<Activation::ReGLU><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
      break;
    case Activation::DReLU:
      ffn_activation_kernel<Activation::DReLU><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
      break;
    default:
      TC_CHECK(false, "ffn_activation: unknown Activation");
  }
  TC_CUDA_CHECK_LAUNCH();
}

void add(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  add_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(y, x, n);
  TC_CUDA_CHECK_LAUNCH();
}

void relu(float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  relu_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, n);
  TC_CUDA_CHECK_LAUNCH();
}

void threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits, cudaStream_t stream) {
  const int64_t n_words = (n + 31) / 32;
  if (n_rows <= 0 || n_words <= 0) return;
  threshold_bits_kernel<<<grid_stride_blocks(n_rows * n_words, kThreads), kThreads, 0, stream>>>(x, n_rows, n,
                                                                                                  threshold, bits);
  TC_CUDA_CHECK_LAUNCH();
}

void store_f16(const float* src, int64_t n, uint16_t* dst, cudaStream_t stream) {
  if (n <= 0) return;
  store_f16_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(src, n, dst);
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
