// RMSNorm, LayerNorm and RoPE as kernels/cpu/ops.cpp computes them:
// rms_norm sums the f32-rounded squares in double (one block per row, a
// fixed reduction tree) and scales in f32; layer_norm sums the values, then
// the f32 squares of the centred values, in double the same way; rope takes
// each angle from its own pow() in double and rotates in double, rounding
// once to f32.
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/rope_yarn.h"

namespace tc::kernels::cuda {
namespace {

constexpr int kNormThreads = 256;
constexpr int kRopeThreads = 256;

// x, y: f32 [n_rows, n] (y may alias x: every element is read before the
// barrier and written after it, by the same thread); weight: f32 [n].
// grid.x = n_rows.
__global__ void __launch_bounds__(kNormThreads)
    rms_norm_kernel(const float* x, const float* __restrict__ weight, int64_t n, float eps, float* y) {
  __shared__ double partial[kNormThreads];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * n;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
    const float v = xr[i];
    sum += static_cast<double>(__fmul_rn(v, v));
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kNormThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float mean = static_cast<float>(partial[0] / static_cast<double>(n));
  const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) yr[i] = __fmul_rn(__fmul_rn(xr[i], scale), weight[i]);
}

// The block's sum of `v` (each thread's value) in double, by the fixed tree
// of rms_norm_kernel; every thread gets it.
__device__ double block_sum(double v, double* partial) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kNormThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const double sum = partial[0];
  __syncthreads();  // partial is reused by the next call
  return sum;
}

// As rms_norm_kernel, with the mean taken out first and a bias (where not null) added last.
__global__ void __launch_bounds__(kNormThreads)
    layer_norm_kernel(const float* x, const float* __restrict__ weight, const float* __restrict__ bias, int64_t n,
                      float eps, float* y) {
  __shared__ double partial[kNormThreads];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * n;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) sum += static_cast<double>(xr[i]);
  const float mean = static_cast<float>(block_sum(sum, partial) / static_cast<double>(n));
  double sum2 = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
    const float d = __fsub_rn(xr[i], mean);
    sum2 += static_cast<double>(__fmul_rn(d, d));
  }
  const float variance = static_cast<float>(block_sum(sum2, partial) / static_cast<double>(n));
  const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(variance, eps)));
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
    const float normed = __fmul_rn(__fmul_rn(__fsub_rn(xr[i], mean), scale), weight[i]);
    yr[i] = bias == nullptr ? normed : __fadd_rn(normed, bias[i]);
  }
}

// x: f32 [n_tokens, n_head, head_dim], in place; one thread per (token,
// head, pair), pairs fastest. neox: pairs (i, i + n_rot/2), else (2i, 2i+1);
// freq_factors: f32 [n_rot/2] or null.
__global__ void __launch_bounds__(kRopeThreads)
    rope_kernel(float* __restrict__ x, int64_t n_tokens, int64_t n_head, int64_t head_dim,
                const int32_t* __restrict__ positions, int64_t n_rot, double freq_base, double freq_scale, bool neox,
                const float* __restrict__ freq_factors, double attn_factor, double ext_factor, double corr_low,
                double corr_high) {
  const double magnitude = rope_magnitude(freq_scale, ext_factor, attn_factor);
  const int64_t n_pairs = n_rot / 2;
  const int64_t n_items = n_tokens * n_head * n_pairs;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < n_items;
       item += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = item % n_pairs;
    const int64_t th = item / n_pairs;  // token * n_head + head
    const int64_t t = th / n_head;
    const double pos = static_cast<double>(positions[t]) * rope_pair_scale(freq_scale, ext_factor, corr_low, corr_high, i);
    double theta = pos * pow(freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
    if (freq_factors != nullptr) theta = __ddiv_rn(theta, static_cast<double>(freq_factors[i]));
    double s, c;
    sincos(theta, &s, &c);
    c = __dmul_rn(c, magnitude);
    s = __dmul_rn(s, magnitude);
    float* p0 = x + th * head_dim + (neox ? i : 2 * i);
    float* p1 = p0 + (neox ? n_pairs : 1);
    const double x0 = *p0;
    const double x1 = *p1;
    *p0 = static_cast<float>(__dsub_rn(__dmul_rn(x0, c), __dmul_rn(x1, s)));
    *p1 = static_cast<float>(__dadd_rn(__dmul_rn(x0, s), __dmul_rn(x1, c)));
  }
}

}  // namespace

void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y,
              cudaStream_t stream) {
  if (n_rows <= 0) return;
  rms_norm_kernel<<<grid_x(n_rows), kNormThreads, 0, stream>>>(x, weight, n, eps, y);
  TC_CUDA_CHECK_LAUNCH();
}

void layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n, float eps,
                float* y, cudaStream_t stream) {
  if (n_rows <= 0) return;
  layer_norm_kernel<<<grid_x(n_rows), kNormThreads, 0, stream>>>(x, weight, bias, n, eps, y);
  TC_CUDA_CHECK_LAUNCH();
}

void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
          const RopeParams& params, cudaStream_t stream) {
  const int64_t n_items = n_tokens * n_head * (params.n_rot / 2);
  if (n_items <= 0) return;
  rope_kernel<<<grid_stride_blocks(n_items, kRopeThreads), kRopeThreads, 0, stream>>>(
      x, n_tokens, n_head, head_dim, positions, params.n_rot, params.freq_base, params.freq_scale,
      params.mode == RopeMode::Neox, params.freq_factors, params.attn_factor, params.ext_factor, params.corr_low,
      params.corr_high);
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
