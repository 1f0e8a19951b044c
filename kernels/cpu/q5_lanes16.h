// Q5_0 and Q5_1 weights repacked for the CPU matmul (WeightLayout::Q5_0Lanes16,
// Q5_1Lanes16): the rows in tiles of 16, each tile's blocks stored so that
// one 64-byte load gives one 4-byte step of all 16 rows' nibbles, row j in
// 32-bit lane j (Q4_0's tiles, q4_lanes16.h), and one more load all 16
// rows' fifth bits, arranged so that a step's come to bit 4 of its bytes by
// one shift. Read in place by the avx2 variant only
// (matmul_x86_q5_lanes_avx2.h; MatmulIsa::q5_lanes16). Same bytes per
// weight as the file.
//
// A matrix of n_rows rows x nb = n_cols / 32 blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = nb * 352 (Q5_1: 384) rounded up to 64:
//     block b at 320 b:
//       qs  u8 [4][16][4]   step s, row j: bytes 4s..4s+3 of row 16t + j's
//                           block b qs (low nibbles: elements 4s..4s+3,
//                           high: 16 + 4s..16 + 4s + 3), as Q4_0's tiles
//       qh  u8 [16][4]      at +256: row j's 32 fifth bits, byte k bit s =
//                           bit 4s + k of the block's qh (the fifth bit of
//                           element 4s + k: step s's byte k for s < 4 and,
//                           elements 16 on, for s >= 4)
//     d   f16 [nb][16]      at nb * 320: block b's scale of each row
//     m   f16 [nb][16]      Q5_1 only, at nb * 352: block b's minimum
//   the last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/tensor.h"

namespace tc::kernels {

class ThreadPool;

constexpr int64_t kQ5Lanes16Rows = 16;

// Whether dtype is Q5_0 or Q5_1.
bool is_q5_lanes16(DType dtype);

// Bytes of one tile of 16 rows of n_cols columns of `dtype` (Q5_0 or Q5_1).
int64_t q5_lanes16_tile_bytes(int64_t n_cols, DType dtype);

// Row j's 4 qh bytes as a tile stores them (byte k bit s = qh bit 4s + k),
// and back.
uint32_t q5_lanes16_spread_qh(uint32_t qh);
uint32_t q5_lanes16_gather_qh(uint32_t spread);

// Repacks `rows` (a Q5_0 or Q5_1 matrix in WeightLayout::Rows, n_cols a
// multiple of 32) into dst (lanes16_bytes, 64-byte aligned) and returns the
// view of dst. pool may be nullptr.
Tensor pack_q5_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool);

// The plain rows [r0, r0 + n) of a Q5_0Lanes16 or Q5_1Lanes16 matrix into
// out (n * row_bytes bytes).
void unpack_q5_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out);

}  // namespace tc::kernels
