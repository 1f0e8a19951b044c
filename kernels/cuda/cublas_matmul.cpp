// cuBLAS GEMM for prefill (see cublas_matmul.h). cuBLAS is column-major: the
// row-major y [n_tokens, n_out] is the column-major n_out x n_tokens matrix
// (ld n_out), w's rows [n_out, n_in] are the column-major n_in x n_out matrix
// (ld = row stride in elements), used transposed; x [n_tokens, n_in] is
// n_in x n_tokens. So y = op_T(w) * x with m = n_out, n = n_tokens, k = n_in.
#include "kernels/cuda/cublas_matmul.h"

#include <algorithm>
#include <climits>

#include "kernels/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/device_scratch.h"

namespace tc::kernels::cuda {
namespace {

int as_int(int64_t v, const char* what) {
  TC_CHECK(v >= 0 && v <= INT_MAX, what);
  return static_cast<int>(v);
}

}  // namespace

void matmul_cublas(const Tensor& w, const float* x, int64_t n_tokens, float* y, cublasHandle_t handle,
                   DeviceWorkspace& workspace, cudaStream_t stream) {
  const int64_t n_in = w.n_cols();
  const int64_t n_out = w.n_rows();
  if (n_tokens <= 0 || n_out <= 0) return;
  TC_CHECK(n_tokens > kGemvMaxTokens, "matmul (cuBLAS): up to kGemvMaxTokens tokens take the GEMV");
  const int k = as_int(n_in, "matmul (cuBLAS): n_in must fit an int");
  const int m = as_int(n_out, "matmul (cuBLAS): n_out must fit an int");
  const int n = as_int(n_tokens, "matmul (cuBLAS): n_tokens must fit an int");
  const float one = 1.0f;
  const float zero = 0.0f;

  if (w.dtype == DType::F32) {
    TC_CHECK(w.row_bytes % 4 == 0, "matmul (cuBLAS): F32 rows must be 4-byte multiples");
    const int lda = as_int(w.row_bytes / 4, "matmul (cuBLAS): row stride must fit an int");
    TC_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, static_cast<const float*>(w.data),
                                lda, x, k, &zero, y, m));
    return;
  }

  const bool f32_tiles = w.dtype == DType::BF16;
  // The layout kernels/device_scratch.h gives (and the placement counts).
  const GemmScratch scratch = gemm_scratch(w.dtype, n_in, n_out, n_tokens);
  const int64_t tile_rows = scratch.tile_rows;
  auto* base = static_cast<uint8_t*>(workspace.get(scratch.total(), stream));
  const size_t x16_bytes = scratch.x16_bytes;
  auto* x16 = reinterpret_cast<uint16_t*>(base);
  void* tile = base + x16_bytes;
  if (!f32_tiles) f32_to_f16_clamped(x, n_tokens * n_in, x16, stream);

  if (w.dtype == DType::F16) {
    TC_CHECK(w.row_bytes % 2 == 0, "matmul (cuBLAS): F16 rows must be 2-byte multiples");
    const int lda = as_int(w.row_bytes / 2, "matmul (cuBLAS): row stride must fit an int");
    TC_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w.data, CUDA_R_16F, lda, x16,
                                 CUDA_R_16F, k, &zero, y, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }

  // Stream order makes reusing the tile safe: the next dequantization runs
  // after the previous GEMM has read it.
  for (int64_t r0 = 0; r0 < n_out; r0 += tile_rows) {
    const int rows = static_cast<int>(std::min(tile_rows, n_out - r0));
    if (f32_tiles) {
      dequantize_rows_f32(w, r0, rows, static_cast<float*>(tile), stream);
      TC_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, k, &one, static_cast<const float*>(tile),
                                  k, x, k, &zero, y + r0, m));
    } else {
      dequantize_rows_f16(w, r0, rows, static_cast<uint16_t*>(tile), stream);
      TC_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, k, &one, tile, CUDA_R_16F, k, x16,
                                   CUDA_R_16F, k, &zero, y + r0, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
    }
  }
}

}  // namespace tc::kernels::cuda
