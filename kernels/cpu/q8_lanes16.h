// Q8_0 weights repacked for the CPU matmul (WeightLayout::Q8_0Lanes16): the
// rows in tiles of 16, each tile's blocks stored so that one 64-byte load
// gives one 4-byte step of all 16 rows, row j in 32-bit lane j, the order
// the avx512 lane kernels compute in (matmul_x86_q8_lanes.h). Read in place
// they need no transpose per call; the file's 34-byte blocks cost the
// decode kernel more work per byte than the DRAM stream gives it time for.
// Same bytes per weight as the file.
//
// A matrix of n_rows rows x nb = n_cols / 32 blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = nb * 544 rounded up to 64:
//     qs  u8  [nb][8][16][4]  block b, step s, row j: bytes 4s..4s+3 of
//                             row 16t + j's block b qs, each as the
//                             unsigned byte w + 128 (w xor 0x80)
//     d   f16 [nb][16]        at nb * 512: block b's scale of each row
//   the last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
// The +128: vpdpbusd multiplies unsigned by signed bytes, so the weights
// take the unsigned side and the prepared activations keep their signs;
// sum (w + 128) x - 128 sum x = sum w x exactly, and sum x of each block is
// one number per token (XLayout's sum32), not per row.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/q4_lanes16.h"
#include "kernels/tensor.h"

namespace tc::kernels {

class ThreadPool;

constexpr int64_t kQ8Lanes16Rows = 16;

// Bytes of one tile of 16 rows of n_cols columns; a whole matrix's:
// lanes16.h's lanes16_bytes.
int64_t q8_lanes16_tile_bytes(int64_t n_cols);

// Whether matmul() here should get Q8_0 matrices in the layout under
// `mode`: where the chosen variant reads it in place (avx512 and amx, whose
// vpdpbusd takes the unsigned weights; avx2, which turns them back into
// signed ones, matmul_x86_q8_lanes_avx2.h).
bool q8_lanes16_wanted(CpuRepack mode);

// Repacks `rows` (a Q8_0 matrix in WeightLayout::Rows) into dst
// (lanes16_bytes, 64-byte aligned) and returns the view of dst. pool may
// be nullptr.
Tensor pack_q8_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool);

// The plain Q8_0 rows [r0, r0 + n) of a Q8_0Lanes16 matrix into out
// (n * row_bytes bytes).
void unpack_q8_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out);

}  // namespace tc::kernels
