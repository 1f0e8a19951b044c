// The GPU workspace sizes of kernels/device_scratch.h against hand
// computations: the cuBLAS matmul's f16 activations and dequantized tiles
// per dtype, and axpy_rows' split partials, bounded per pass for long
// prompts (a 512-token prompt at n_embd 5120 once needed 320 MiB).
#include <catch2/catch.hpp>

#include <cstdint>

#include "kernels/device_scratch.h"

using tc::kernels::axpy_pass_tokens;
using tc::kernels::axpy_scratch_bytes;
using tc::kernels::axpy_split_count;
using tc::kernels::DType;
using tc::kernels::gemm_scratch;

TEST_CASE("device scratch: the GEMV needs none, cuBLAS per dtype", "[kernels][scratch]") {
  // Up to 8 tokens take the GEMV, whatever the dtype.
  for (const DType d : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
    CHECK(gemm_scratch(d, 4096, 4096, 8).total() == 0);
  }
  // F32: SGEMM on the weights, nothing else.
  CHECK(gemm_scratch(DType::F32, 4096, 4096, 512).total() == 0);
  // F16: x in f16, [512, 4096] * 2 bytes, no tile.
  const auto f16 = gemm_scratch(DType::F16, 4096, 11008, 512);
  CHECK(f16.x16_bytes == 512 * 4096 * 2);
  CHECK(f16.tile_rows == 0);
  CHECK(f16.total() == 512 * 4096 * 2);
  // BF16: f32 tiles of 64 MiB / (4096 * 4) = 4096 rows, x stays f32.
  const auto bf16 = gemm_scratch(DType::BF16, 4096, 11008, 512);
  CHECK(bf16.x16_bytes == 0);
  CHECK(bf16.tile_row_bytes == 4096 * 4);
  CHECK(bf16.tile_rows == 4096);
  CHECK(bf16.total() == size_t{64} << 20);
  // Quantized: x in f16 padded to 256 bytes (9 * 100 * 2 = 1800 -> 2048),
  // f16 tiles of the whole matrix when it is under 64 MiB.
  const auto q4 = gemm_scratch(DType::Q4_0, 100 * 32, 64, 9);
  CHECK(q4.x16_bytes == 57600);  // 9 * 3200 * 2 = 57600, already a multiple of 256
  CHECK(gemm_scratch(DType::Q8_0, 96, 64, 9).x16_bytes == 1792);  // 9 * 96 * 2 = 1728 -> 1792
  CHECK(q4.tile_rows == 64);
  CHECK(q4.total() == 57600 + 64 * 3200 * 2);
  // A row over 64 MiB still gets one row.
  const int64_t huge = int64_t{40} << 20;  // elements: 80 MiB as f16
  CHECK(gemm_scratch(DType::Q4_0, huge, 3, 16).tile_rows == 1);
}

TEST_CASE("device scratch: axpy_rows splits by rows only, passes bound the partials", "[kernels][scratch]") {
  CHECK(axpy_split_count(0) == 1);
  CHECK(axpy_split_count(64) == 1);
  CHECK(axpy_split_count(65) == 2);
  CHECK(axpy_split_count(1984) == 31);
  CHECK(axpy_split_count(1985) == 32);
  CHECK(axpy_split_count(13824) == 32);
  // One split writes y directly.
  CHECK(axpy_scratch_bytes(64, 512, 5120) == 0);
  // Decode: 32 splits x 1 token x 5120 floats.
  CHECK(axpy_scratch_bytes(13824, 1, 5120) == 32 * 5120 * 4);
  // A 512-token prompt at n_embd 5120: passes of 32 MiB / (32 * 5120 * 4) = 51 tokens.
  CHECK(axpy_pass_tokens(32, 5120) == 51);
  CHECK(axpy_scratch_bytes(13824, 512, 5120) == 32 * 51 * 5120 * 4);
  CHECK(axpy_scratch_bytes(13824, 512, 5120) <= tc::kernels::kAxpyMaxPartialBytes);
  // Fewer tokens than a pass: only what they need.
  CHECK(axpy_scratch_bytes(13824, 7, 5120) == 32 * 7 * 5120 * 4);
  // Outputs so wide that one token's partials pass the bound: still one token per pass.
  CHECK(axpy_pass_tokens(32, int64_t{1} << 20) == 1);
  CHECK(axpy_scratch_bytes(4096, 3, int64_t{1} << 20) == size_t{32} * (size_t{1} << 20) * 4);
  CHECK(axpy_scratch_bytes(4096, 0, 64) == 0);
}
