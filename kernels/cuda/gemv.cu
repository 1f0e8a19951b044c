// Decode GEMV for every weight dtype: one warp per output row and group of
// up to kGemvMaxTokens tokens, so each weight row is read once per group.
// Lanes stride over the row's element groups (8 elements for block formats,
// see dequantize.cuh; for F16 and BF16 8 elements as one 16-byte load where
// the weight's rows are 16-byte aligned, else 1), each keeping one f32 FMA
// accumulator per token, then a warp butterfly sums the lanes. A lane's 8
// activations of a group are two float4 loads where x is 16-byte aligned,
// else eight scalar ones (the same values in the same order). The order of
// every sum is fixed by the weight and the shapes: deterministic, and a
// token's result does not depend on the other tokens of the call.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;  // output rows per block

// 8 consecutive F16 or BF16 elements as one 16-byte load (rows 16-byte aligned).
template <DType T>
struct Wide16 {
  static_assert(T == DType::F16 || T == DType::BF16);
  static constexpr int kGroup = 8;
  __device__ static void load(const uint8_t* row, int64_t g, float* out) {
    const uint4 v = reinterpret_cast<const uint4*>(row)[g];
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const auto lo = static_cast<uint16_t>(words[i] & 0xffffu);
      const auto hi = static_cast<uint16_t>(words[i] >> 16);
      if constexpr (T == DType::F16) {
        out[2 * i] = f16_bits_to_f32(lo);
        out[2 * i + 1] = f16_bits_to_f32(hi);
      } else {
        out[2 * i] = bf16_bits_to_f32(lo);
        out[2 * i + 1] = bf16_bits_to_f32(hi);
      }
    }
  }
};

// w: rows of n_in elements, row_bytes apart, n_w_rows of them.
// x: f32 [n_tokens, n_in]; rows: i32 [n_y] or nullptr; y: f32 [n_tokens, n_y].
// grid.x: ceil(n_y / kWarpsPerBlock); grid.y: token groups of kGemvMaxTokens.
// Load: Dequant<T> or Wide16<T> (kGroup elements per group). kVecX (groups
// of 8 only): x and n_in keep every group's 8 activations 16-byte aligned.
template <typename Load, bool kVecX>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize)
    gemv_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_in, int64_t n_w_rows,
                const float* __restrict__ x, int64_t n_tokens, const int32_t* __restrict__ rows, int64_t n_y,
                float* __restrict__ y) {
  constexpr int G = Load::kGroup;
  static_assert(!kVecX || G == 8);
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
    Load::load(row, g, wv);
#pragma unroll
    for (int t = 0; t < kGemvMaxTokens; ++t) {
      if (t < n_tok) {
        const float* xt = xg + t * n_in + g * G;
        if constexpr (kVecX) {
          const float4 a = reinterpret_cast<const float4*>(xt)[0];
          const float4 b = reinterpret_cast<const float4*>(xt)[1];
          const float xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[t] = fmaf(wv[i], xv[i], acc[t]);
        } else {
#pragma unroll
          for (int i = 0; i < G; ++i) acc[t] = fmaf(wv[i], xt[i], acc[t]);
        }
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
  const bool x_aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && w.n_cols() % 4 == 0;
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const auto launch = [&]<typename Load>() {
    if constexpr (Load::kGroup == 8) {
      if (x_aligned) {
        gemv_kernel<Load, true><<<grid, kWarpsPerBlock * kWarpSize, 0, stream>>>(wd, w.row_bytes, w.n_cols(),
                                                                                w.n_rows(), x, n_tokens, rows, n_y, y);
        return;
      }
    }
    gemv_kernel<Load, false><<<grid, kWarpsPerBlock * kWarpSize, 0, stream>>>(wd, w.row_bytes, w.n_cols(), w.n_rows(),
                                                                             x, n_tokens, rows, n_y, y);
  };
  // The weight alone picks the grouping (and so the order of the sums).
  const bool wide_rows =
      reinterpret_cast<uintptr_t>(wd) % 16 == 0 && w.row_bytes % 16 == 0 && w.n_cols() % 8 == 0;
  visit_weight_dtype(w.dtype, [&](auto type) {
    constexpr DType T = decltype(type)::value;
    if constexpr (T == DType::F16 || T == DType::BF16) {
      if (wide_rows) {
        launch.template operator()<Wide16<T>>();
        return;
      }
    }
    launch.template operator()<Dequant<T>>();
  });
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
