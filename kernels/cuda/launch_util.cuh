// Helpers shared by the .cu files: grid sizing with limit checks and warp
// reductions. Device code only apart from the grid helpers.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "kernels/check.h"

namespace tc::kernels::cuda {

inline constexpr int kWarpSize = 32;

// Blocks of `block_threads` covering n items, for kernels that loop with a
// grid stride: capped (the loop does the rest), at least 1.
inline unsigned grid_stride_blocks(int64_t n, int block_threads, int64_t max_blocks = 1 << 16) {
  const int64_t blocks = (n + block_threads - 1) / block_threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, max_blocks));
}

// Blocks for a grid.x that must cover n_blocks exactly (one item per block).
inline unsigned grid_x(int64_t n_blocks) {
  TC_CHECK(n_blocks > 0 && n_blocks <= INT_MAX, "CUDA launch: grid.x out of range [1, 2^31)");
  return static_cast<unsigned>(n_blocks);
}

// For grid.y and grid.z.
inline unsigned grid_yz(int64_t n_blocks) {
  TC_CHECK(n_blocks > 0 && n_blocks <= 65535, "CUDA launch: grid.y/z out of range [1, 65535]");
  return static_cast<unsigned>(n_blocks);
}

// Butterfly sum over the warp: every lane ends with the same bits (IEEE
// addition is commutative, so lanes i and i ^ m hold equal values after
// each step), in an order fixed by the lane numbering only.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}

}  // namespace tc::kernels::cuda
