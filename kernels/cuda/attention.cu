// Causal GQA attention over the f16 KV cache, one block per (token, head).
// Each of the block's warps takes every kWarps-th cache position of the
// token's window [first, positions[t]] (first = 0, or the start of its
// sliding window) and keeps an online softmax (running max,
// running sum, output accumulator; lane l holds dims l, l + 32, ...); the
// warps' states are then merged in warp order. Scores and the softmax are f32
// (exp, not __expf); every reduction order is fixed by the shapes, so
// results are deterministic and a token's output does not depend on the
// other tokens of the call.
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kDimsPerLane = static_cast<int>(kMaxHeadDim) / kWarpSize;

// q: f32 [n_tokens, n_head, head_dim]; k, v: f16 [n_kv, n_head_kv, head_dim];
// out: f32 [n_tokens, n_head, head_dim]. grid.x = n_tokens * n_head.
__global__ void __launch_bounds__(kWarps * kWarpSize)
    attention_kernel(const float* __restrict__ q, const uint16_t* __restrict__ k, const uint16_t* __restrict__ v,
                     int64_t n_kv, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                     const int32_t* __restrict__ positions, float scale, float softcap, int64_t window,
                     float* __restrict__ out) {
  __shared__ float warp_max_score[kWarps];
  __shared__ float warp_sum_exp[kWarps];
  __shared__ float warp_out[kWarps][kMaxHeadDim];

  const int64_t t = blockIdx.x / n_head;
  const int64_t h = blockIdx.x % n_head;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  float* o = out + (t * n_head + h) * head_dim;
  const int64_t pos = positions[t];
  if (pos < 0 || pos >= n_kv) {  // the CPU op rejects this; here the row says so
    for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) o[d] = nanf("");
    return;
  }
  const int64_t n_ctx = pos + 1;
  const int64_t first = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
  const float inv_cap = softcap > 0.0f ? 1.0f / softcap : 0.0f;
  const int64_t kv_idx = h / (n_head / n_head_kv);
  const int64_t kv_stride = n_head_kv * head_dim;
  const uint16_t* kh = k + kv_idx * head_dim;
  const uint16_t* vh = v + kv_idx * head_dim;

  float qr[kDimsPerLane];
  float acc[kDimsPerLane];
  const float* qh = q + (t * n_head + h) * head_dim;
#pragma unroll
  for (int i = 0; i < kDimsPerLane; ++i) {
    const int64_t d = lane + i * kWarpSize;
    qr[i] = d < head_dim ? qh[d] : 0.0f;
    acc[i] = 0.0f;
  }
  float run_max = -INFINITY;
  float run_sum = 0.0f;
  for (int64_t j = first + warp; j < n_ctx; j += kWarps) {
    const uint16_t* kj = kh + j * kv_stride;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
      const int64_t d = lane + i * kWarpSize;
      if (d < head_dim) dot = fmaf(qr[i], f16_bits_to_f32(kj[d]), dot);
    }
    float score = warp_sum(dot) * scale;
    if (softcap > 0.0f) score = tanhf(score * inv_cap) * softcap;
    const float new_max = fmaxf(run_max, score);
    const float correction = expf(run_max - new_max);  // 0 for the first position
    const float p = expf(score - new_max);
    run_sum = run_sum * correction + p;
    const uint16_t* vj = vh + j * kv_stride;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
      const int64_t d = lane + i * kWarpSize;
      if (d < head_dim) acc[i] = fmaf(p, f16_bits_to_f32(vj[d]), acc[i] * correction);
    }
    run_max = new_max;
  }

  if (lane == 0) {
    warp_max_score[warp] = run_max;
    warp_sum_exp[warp] = run_sum;
  }
#pragma unroll
  for (int i = 0; i < kDimsPerLane; ++i) {
    const int64_t d = lane + i * kWarpSize;
    if (d < head_dim) warp_out[warp][d] = acc[i];
  }
  __syncthreads();

  // Merge: a warp that saw no position (fewer than kWarps in the window) has
  // max -inf and weight exp(-inf) = 0; warp 0 always saw position `first`,
  // so max is finite.
  float max_all = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) max_all = fmaxf(max_all, warp_max_score[w]);
  float weight[kWarps];
  float sum_all = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = expf(warp_max_score[w] - max_all);
    sum_all += warp_sum_exp[w] * weight[w];
  }
  const float inv_sum = 1.0f / sum_all;
  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += warp_out[w][d] * weight[w];
    o[d] = sum * inv_sum;
  }
}

}  // namespace

void attention(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_tokens, int64_t n_kv, int64_t n_head,
               int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
               const AttentionParams& params, cudaStream_t stream) {
  if (n_tokens <= 0) return;
  const float scale =
      params.scale > 0.0f ? params.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  attention_kernel<<<grid_x(n_tokens * n_head), kWarps * kWarpSize, 0, stream>>>(
      q, k, v, n_kv, n_head, n_head_kv, head_dim, positions, scale, params.softcap, params.window, out);
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
