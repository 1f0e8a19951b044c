// Element-wise ops as kernels/cpu/ops.cpp computes them: the FFN
// activations (SwiGLU with IEEE division and expf, gelu with tanhf, not the
// fast intrinsics), y += x, the bias add, scale and soft-cap, and f32 -> f16
// stores for the KV cache (round to nearest even, NaN to the canonical quiet
// NaN with its sign, as f32_to_f16); the predictor's relu and its
// active-set bitmask (as CpuBackend's).
#include <cuda_fp16.h>

#include <cmath>

#include "kernels/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// gelu's tanh approximation, as the CPU's.
__device__ float gelu(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  const float inner = __fmul_rn(__fmul_rn(kSqrt2OverPi, x), __fadd_rn(1.0f, __fmul_rn(__fmul_rn(kCoefA, x), x)));
  return __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, tanhf(inner)));
}

// gate, up, out: f32 [n]; out may alias gate (each element is read before
// it is written, by the same thread), so no __restrict__ on those. up is
// not read by the ungated activations (and may be null then).
template <Activation A>
__global__ void __launch_bounds__(kThreads)
    ffn_activation_kernel(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    float r;
    if constexpr (A == Activation::SwiGLU) {
      r = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
    } else if constexpr (A == Activation::ReGLU) {
      r = __fmul_rn(g > 0.0f ? g : 0.0f, up[i]);
    } else if constexpr (A == Activation::DReLU) {
      const float u = up[i];
      r = __fmul_rn(g > 0.0f ? g : 0.0f, u > 0.0f ? u : 0.0f);
    } else if constexpr (A == Activation::GeGLU) {
      r = __fmul_rn(gelu(g), up[i]);
    } else if constexpr (A == Activation::Gelu) {
      r = gelu(g);
    } else if constexpr (A == Activation::ReluSquared) {
      r = g > 0.0f ? __fmul_rn(g, g) : 0.0f;
    } else if constexpr (A == Activation::SwiGluOai) {
      const float gc = fminf(g, 7.0f);
      const float uc = fminf(fmaxf(up[i], -7.0f), 7.0f);
      r = __fmul_rn(__fdiv_rn(gc, __fadd_rn(1.0f, expf(__fmul_rn(1.702f, -gc)))), __fadd_rn(uc, 1.0f));
    } else {
      r = g > 0.0f ? g : 0.0f;
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

// y: f32 [n_rows, n]; bias: f32 [n].
__global__ void __launch_bounds__(kThreads) add_bias_kernel(float* y, const float* __restrict__ bias, int64_t n_rows,
                                                            int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_rows * n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = __fadd_rn(y[i], bias[i % n]);
  }
}

__global__ void __launch_bounds__(kThreads) scale_kernel(float* x, int64_t n, float s) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = __fmul_rn(x[i], s);
  }
}

__global__ void __launch_bounds__(kThreads) softcap_kernel(float* x, int64_t n, float inv_cap, float cap) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = __fmul_rn(tanhf(__fmul_rn(x[i], inv_cap)), cap);
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
    case Activation::GeGLU:
      ffn_activation_kernel<Activation::GeGLU><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
      break;
    case Activation::Gelu:
      ffn_activation_kernel<Activation::Gelu><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
      break;
    case Activation::Relu:
      ffn_activation_kernel<Activation::Relu><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
      break;
    case Activation::ReluSquared:
      ffn_activation_kernel<Activation::ReluSquared><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
      break;
    case Activation::SwiGluOai:
      ffn_activation_kernel<Activation::SwiGluOai><<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
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

void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n, cudaStream_t stream) {
  if (n_rows <= 0 || n <= 0) return;
  add_bias_kernel<<<grid_stride_blocks(n_rows * n, kThreads), kThreads, 0, stream>>>(y, bias, n_rows, n);
  TC_CUDA_CHECK_LAUNCH();
}

void scale(float* x, int64_t n, float s, cudaStream_t stream) {
  if (n <= 0) return;
  scale_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, n, s);
  TC_CUDA_CHECK_LAUNCH();
}

void softcap(float* x, int64_t n, float cap, cudaStream_t stream) {
  if (n <= 0) return;
  softcap_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, n, 1.0f / cap, cap);
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
