// Greedy sampling on the device: the argmax of each logit row, so decode
// reads back one i32 per sequence instead of the whole vocabulary. NaN
// counts as -inf and ties go to the lowest index, as the CPU sampler's greedy
// path does.
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_util.cuh"

namespace tc::kernels::cuda {
namespace {

constexpr int kThreads = 512;

// Whether (v, i) beats (best_v, best_i): larger value, or equal and lower index.
__device__ __forceinline__ bool better(float v, int64_t i, float best_v, int64_t best_i) {
  return v > best_v || (v == best_v && i < best_i);
}

// x: f32 [n_rows, n]; out: i32 [n_rows]. grid.x = n_rows.
__global__ void __launch_bounds__(kThreads)
    argmax_kernel(const float* __restrict__ x, int64_t n, int32_t* __restrict__ out) {
  __shared__ float best_value[kThreads];
  __shared__ int64_t best_index[kThreads];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  float bv = -INFINITY;
  int64_t bi = 0;
  bool found = false;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float v = isnan(xr[i]) ? -INFINITY : xr[i];
    if (!found || better(v, i, bv, bi)) {
      bv = v;
      bi = i;
      found = true;
    }
  }
  // A thread that saw nothing (n < kThreads) carries index n: it loses every tie.
  best_value[threadIdx.x] = bv;
  best_index[threadIdx.x] = found ? bi : n;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      const float v = best_value[threadIdx.x + stride];
      const int64_t i = best_index[threadIdx.x + stride];
      if (better(v, i, best_value[threadIdx.x], best_index[threadIdx.x])) {
        best_value[threadIdx.x] = v;
        best_index[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int32_t>(best_index[0] < n ? best_index[0] : 0);
}

}  // namespace

void argmax_rows(const float* x, int64_t n_rows, int64_t n, int32_t* out, cudaStream_t stream) {
  if (n_rows <= 0 || n <= 0) return;
  argmax_kernel<<<grid_x(n_rows), kThreads, 0, stream>>>(x, n, out);
  TC_CUDA_CHECK_LAUNCH();
}

}  // namespace tc::kernels::cuda
