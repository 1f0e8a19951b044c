// Decode GEMV for every weight dtype: one warp per output row and group of
// up to kGemvMaxTokens tokens, so each weight row is read once per group.
// Lanes stride over the row's element groups (1 element for plain types, 8
// for block formats; see dequantize.cuh), each keeping one f32 FMA
// accumulator per token, then a warp butterfly sums the lanes. The order of
// every sum is fixed by the shapes: deterministic, and a token's result does
// not depend on the other tokens of the call.
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;  // output rows per block

// w: rows of n_in elements, row_bytes apart, n_w_rows of them.
// x: f32 [n_tokens, n_in]; rows: i32 [n_y] or nullptr; y: f32 [n_tokens, n_y].
// grid.x: ceil(n_y / kWarpsPerBlock); grid.y: token groups of kGemvMaxTokens.
template <DType T>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize)
    gemv_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_in, int64_t n_w_rows,
                const float* __restrict__ x, int64_t n_tokens, const int32_t* __restrict__ rows, int64_t n_y,
                float* __restrict__ y) {
  constexpr int G = Dequant<T>::kGroup;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (k >= n_y) return;  // uniform per warp: the shuffles below see full warps
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kGemvMaxTokens;
  const int n_tok = static_cast<int>(n_tokens - t0 < kGemvMaxTokens ? n_tokens - t0 : kGemvMaxTokens);
  const int64_t r = rows != nullptr ? static_cast<int64_t>(rows[k]) : k;
  if (r < 0 || r >= n_w_rows) {
    if (lane < n_tok) y[(t0 + lane) * n_y + k] = nanf("");
    return;
  }
  const uint8_t* row = w + r * row_bytes;
  const float* xg = x + t0 * n_in;

  float acc[kGemvMaxTokens];
#pragma unroll
  for (int t = 0; t < kGemvMaxTokens; ++t) acc[t] = 0.0f;
  const int64_t n_groups = n_in / G;
  for (int64_t g = lane; g < n_groups; g += kWarpSize) {
    float wv[G];
    Dequant<T>::load(row, g, wv);
#pragma unroll
    for (int t = 0; t < kGemvMaxTokens; ++t) {
      if (t < n_tok) {
        const float* xt = xg + t * n_in + g * G;
#pragma unroll
        for (int i = 0; i < G; ++i) acc[t] = fmaf(wv[i], xt[i], acc[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kGemvMaxTokens; ++t) {
    if (t < n_tok) {
      const float sum = warp_sum(acc[t]);
      if (lane == 0) y[(t0 + t) * n_y + k] = sum;
    }
  }
}

}  // namespace

void gemv(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_y, float* y,
          cudaStream_t stream) {
  if (n_tokens <= 0 || n_y <= 0) return;
  const dim3 grid(grid_x((n_y + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  grid_yz((n_tokens + kGemvMaxTokens - 1) / kGemvMaxTokens));
  visit_weight_dtype(w.dtype, [&](auto type) {
    gemv_kernel<decltype(type)::value><<<grid, kWarpsPerBlock * kWarpSize, 0, stream>>>(
        static_cast<const uint8_t*>(w.data), w.row_bytes, w.n_cols(), w.n_rows(), x, n_tokens, rows, n_y, y);
  });
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
