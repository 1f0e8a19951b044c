// The scratch memory a GPU backend's ops take from its one workspace (a
// buffer that grows to the largest request and is reused in stream order):
// the GEMM's f16 activations and dequantized weight tiles, and axpy_rows'
// per-split partial sums; and the size of cuBLAS's workspace. Plain arithmetic, no CUDA: the CUDA backend sizes
// its requests with these functions, and the placement's byte accounting
// (engine/sparse/placement_costs.h) counts the same numbers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace tc::kernels {

// Most tokens a GEMV launch serves (each weight row read once per group);
// matmul takes cuBLAS above this, matmul_rows never does.
inline constexpr int64_t kGemvMaxTokens = 8;
// A cuBLAS call over quantized or BF16 weights dequantizes them in tiles of
// whole rows, at most this many bytes each (one row when a row is larger).
inline constexpr size_t kGemmMaxTileBytes = size_t{64} << 20;
// axpy_rows splits its rows for parallelism: about kAxpyRowsPerSplit rows
// per split, at most kAxpyMaxSplits splits (from n_rows only, so the
// summation order does not depend on the tokens).
inline constexpr int64_t kAxpyRowsPerSplit = 64;
inline constexpr int64_t kAxpyMaxSplits = 32;
// The split partial sums of one pass take at most this many bytes; more
// tokens run in several passes (each token's sum is the same either way).
inline constexpr size_t kAxpyMaxPartialBytes = size_t{32} << 20;
// Start of the tile after the f16 activations (cuBLAS likes aligned tiles).
inline constexpr size_t kGemmScratchAlign = 256;
// cuBLAS's own workspace, a buffer of its own (not the ops' workspace
// above): the CUDA backend allocates it with its cuBLAS handle and hands it
// over with cublasSetWorkspace, so cuBLAS allocates nothing itself and the
// placement counts these bytes. 32 MiB is cuBLAS's recommended size on
// Hopper (4 MiB before it).
inline constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

inline int64_t axpy_split_count(int64_t n_rows) {
  return std::clamp<int64_t>((n_rows + kAxpyRowsPerSplit - 1) / kAxpyRowsPerSplit, 1, kAxpyMaxSplits);
}

// Tokens per pass of an axpy_rows with n_split > 1 splits over n_out
// outputs: as many as keep the partials within kAxpyMaxPartialBytes, at
// least 1.
inline int64_t axpy_pass_tokens(int64_t n_split, int64_t n_out) {
  const int64_t per_token = std::max<int64_t>(n_split * n_out * static_cast<int64_t>(sizeof(float)), 1);
  return std::max<int64_t>(static_cast<int64_t>(kAxpyMaxPartialBytes) / per_token, 1);
}

// Workspace bytes of axpy_rows over n_rows rows, n_tokens tokens and n_out
// outputs: f32 [n_split, tokens of one pass, n_out], or none with one split.
inline size_t axpy_scratch_bytes(int64_t n_rows, int64_t n_tokens, int64_t n_out) {
  const int64_t n_split = axpy_split_count(n_rows);
  if (n_split == 1 || n_tokens <= 0 || n_out <= 0) return 0;
  const int64_t tokens = std::min(n_tokens, axpy_pass_tokens(n_split, n_out));
  return static_cast<size_t>(n_split * tokens * n_out) * sizeof(float);
}

// The workspace layout of one cuBLAS matmul of w (dtype, ne = {n_in, n_out})
// over n_tokens tokens:
//   x16   f16 [n_tokens, n_in], the activations (not for F32 and BF16
//         weights), padded to kGemmScratchAlign
//   tile  [tile_rows, n_in] of f16 (f32 for BF16): dequantized weight rows
//         (not for F32 and F16 weights, which cuBLAS reads in place)
// All zero when n_tokens <= kGemvMaxTokens (the GEMV needs no workspace).
struct GemmScratch {
  size_t x16_bytes = 0;
  int64_t tile_rows = 0;
  size_t tile_row_bytes = 0;
  size_t total() const { return x16_bytes + static_cast<size_t>(tile_rows) * tile_row_bytes; }
};

inline GemmScratch gemm_scratch(DType dtype, int64_t n_in, int64_t n_out, int64_t n_tokens) {
  GemmScratch s;
  if (n_tokens <= kGemvMaxTokens || n_out <= 0 || dtype == DType::F32) return s;
  const bool f32_tile = dtype == DType::BF16;
  if (!f32_tile) {
    const size_t x16 = static_cast<size_t>(n_tokens * n_in) * 2;
    s.x16_bytes = (x16 + kGemmScratchAlign - 1) / kGemmScratchAlign * kGemmScratchAlign;
  }
  if (dtype == DType::F16) return s;
  s.tile_row_bytes = std::max<size_t>(static_cast<size_t>(n_in) * (f32_tile ? 4 : 2), 1);
  s.tile_rows = std::clamp<int64_t>(static_cast<int64_t>(kGemmMaxTileBytes / s.tile_row_bytes), 1, n_out);
  return s;
}

}  // namespace tc::kernels
