// Q4_0 weights repacked for the CPU matmul (WeightLayout::Q4_0Lanes16): the
// rows in tiles of 16, each tile's blocks stored so that one 64-byte load
// gives one 4-byte step of all 16 rows, row j in 32-bit lane j. That is
// the order the row-lane Q4_0 kernel (matmul_x86_q4_lanes.h) computes in;
// from the file's row layout it had to transpose every tile again on every
// call (half of an 8-token decode step). Same bytes per weight as the file.
//
// A matrix of n_rows rows x nb = n_cols / 32 blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = nb * 288 rounded up to 64:
//     qs  u8  [nb][4][16][4]  block b, step s, row j: bytes 4s..4s+3 of
//                             row 16t + j's block b qs (low nibbles:
//                             elements 4s..4s+3, high: 16 + 4s..16 + 4s + 3)
//     d   f16 [nb][16]        at nb * 256: block b's scale of each row
//   the last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/tensor.h"

namespace tc::kernels {

class ThreadPool;

constexpr int64_t kQ4Lanes16Rows = 16;

// Bytes of one tile of 16 rows of n_cols columns.
int64_t q4_lanes16_tile_bytes(int64_t n_cols);

// Bytes a Q4_0 matrix of this shape takes in the layout.
int64_t q4_lanes16_bytes(int64_t n_cols, int64_t n_rows);

// Whether matmul() here is better off with the layout: the avx512 (VNNI)
// variants, faster from it than from the file's rows at every token count
// (2-core Zen 5: 1 token 1.1-1.3x, 8 tokens 1.7-1.9x). Every variant reads
// it (AVX2 natively, the portable one by unpacking tiles).
bool q4_lanes16_native();

// Repacks `rows` (a Q4_0 matrix in WeightLayout::Rows, n_cols a multiple of
// 32) into dst (q4_lanes16_bytes, 64-byte aligned) and returns the view of
// dst. pool may be nullptr.
Tensor pack_q4_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool);

// The plain Q4_0 rows [r0, r0 + n) of a Q4_0Lanes16 matrix into out
// (n * row_bytes bytes).
void unpack_q4_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out);

}  // namespace tc::kernels
