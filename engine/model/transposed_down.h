// The neuron-major down projection (PowerInfer's ffn_down_t) outside the
// sparse path: building it from a GGUF file's ffn_down for the sparse FFN,
// and the dense down projection of a PWRI file, which has only ffn_down_t.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::model {

// ffn_down {n_ff, n_embd} (row j = output j) written to `out` as ffn_down_t
// {n_embd, n_ff} (row i = neuron i), in the same dtype, packed rows
// (out.size() = n_ff * row_bytes(dtype, n_embd)): f32/f16/bf16 move bits
// exactly; quantized dtypes go through f32 a tile of neurons at a time and
// are re-quantized along the new rows (one more rounding). Needs n_embd to
// be a multiple of the dtype's block size. Runs on `pool`.
void transpose_down_into(const kernels::Tensor& ffn_down, std::span<std::byte> out, kernels::ThreadPool& pool);

// The same into owned host memory; returns the ffn_down_t view of `storage`.
kernels::Tensor transpose_down(const kernels::Tensor& ffn_down, kernels::Buffer& storage, kernels::ThreadPool& pool);

// y = a · down_t, the dense down projection from the neuron-major matrix:
//   down_t: weight dtype {n_out, n_ff}; a: f32 [n_tokens, n_ff];
//   y: f32 [n_tokens, n_out], overwritten.
// Small steps run as a sum of scaled rows over all neurons (zeros skipped);
// larger ones transpose column tiles of down_t into f32 and use matmul.
class TransposedDown {
 public:
  explicit TransposedDown(kernels::Backend& backend) : backend_(backend) {}
  void run(const kernels::Tensor& down_t, const float* a, int64_t n_tokens, float* y);

 private:
  kernels::Backend& backend_;
  std::vector<int32_t> all_rows_;   // i32 [n_ff]: 0, 1, ..., n_ff - 1
  std::vector<float> row_;          // f32 [tile] one dequantized piece of a row
  std::vector<float> tile_;         // f32 [tile, n_ff]: output rows j0.. of down_t^T
  std::vector<float> tile_out_;     // f32 [n_tokens, tile]
};

}  // namespace tc::model
