// Element-wise ops as kernels/cpu/ops.cpp computes them: the FFN
// activations (SwiGLU with IEEE division and expf, not the fast
// intrinsics), y += x, and f32 -> f16 stores for the KV cache (round to
// nearest even, NaN to the canonical quiet NaN with its sign, as f32_to_f16).
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

void store_f16(const float* src, int64_t n, uint16_t* dst, cudaStream_t stream) {
  if (n <= 0) return;
  store_f16_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(src, n, dst);
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
