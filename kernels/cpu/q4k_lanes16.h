// Q4_K weights repacked for the CPU matmul (WeightLayout::Q4_KLanes16): the
// rows in tiles of 16, each super-block of a tile stored so that one
// 64-byte load gives one 4-byte step of all 16 rows, row j in 32-bit lane j,
// and each of the 12 packed scale bytes of all 16 rows in one 16-byte load.
// The lane kernel (matmul_x86_q4k_lanes_avx2.h) then keeps each row's
// int16 pair sums of a sub-block in its own lane for 8 steps and scales
// them with one vpmaddwd, where the file's rows need a scale per 32
// weights and a horizontal sum per row and super-block. Same bytes as the
// file.
//
// A matrix of n_rows rows x ns = n_cols / 256 super-blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = ns * 2304; super-block s of the tile at s * 2304, in the
//   order the kernel reads it (the stream stays sequential):
//     scales u8  [12][16]       at 0: byte i of each row's 12 packed 6-bit
//                               scales and mins
//     d      f16 [16]           at 192: each row's d
//     dmin   f16 [16]           at 224: each row's dmin
//     qs     u8  [4][8][16][4]  at 256: pair p, step k, row j: bytes
//                               4k..4k+3 of the row's qs[32p..32p+31] (low
//                               nibbles: sub-block 2p, elements 4k..4k+3;
//                               high: sub-block 2p+1, the same elements)
//   the last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
#pragma once

#include <cstdint>

namespace tc::kernels {

constexpr int64_t kQ4KLanes16Rows = 16;
// Offsets within one super-block of a tile (see above).
constexpr int64_t kQ4KLanesSbBytes = 2304;
constexpr int64_t kQ4KLanesScales = 0;
constexpr int64_t kQ4KLanesD = 192;
constexpr int64_t kQ4KLanesDmin = 224;
constexpr int64_t kQ4KLanesQs = 256;

}  // namespace tc::kernels
