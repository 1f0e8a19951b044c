// Q5_K weights repacked for the CPU matmul (WeightLayout::Q5_KLanes16): the
// rows in tiles of 16 as Q4_K's (q4k_lanes16.h), each super-block of a tile
// in the order the lane kernel (matmul_x86_q4k_lanes_avx2.h, which reads
// both) takes it: one 64-byte load gives one 4-byte step of all 16 rows'
// quants, row j in 32-bit lane j, and another the 4 matching bytes of their
// fifth bits. Same bytes as the file.
//
// A Q5_K super-block's element 64 p + 32 h + l (p < 4, h < 2, l < 32) is
// (qs[32 p + l] >> 4 h) & 15 | ((qh[l] >> (2 p + h)) & 1) << 4, in sub-block
// 2 p + h. In a tile:
//
// A matrix of n_rows rows x ns = n_cols / 256 super-blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = ns * 2816; super-block s of the tile at s * 2816:
//     scales u8  [12][16]  at 0: byte i of each row's 12 packed 6-bit
//                          scales and mins
//     d      f16 [16]      at 192: each row's d
//     dmin   f16 [16]      at 224: each row's dmin
//   then per step k < 8 (each 4 bytes of each row j at 4 j of a 64-byte
//   line):
//     qs     u8  [16][4]   at 256 + 128 k: bytes 4k..4k+3 of the row's
//                          qs[0..31] (pair 0)
//     qh     u8  [16][4]   at 256 + 128 k + 64: bytes 4k..4k+3 of its qh
//   and per pair p = 1..3 and step k:
//     qs     u8  [16][4]   at 1280 + 512 (p - 1) + 64 k: bytes 4k..4k+3 of
//                          qs[32 p ..]
//   the last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
#pragma once

#include <cstdint>

namespace tc::kernels {

constexpr int64_t kQ5KLanes16Rows = 16;
// Offsets within one super-block of a tile (see above); the scales, d and
// dmin lie where Q4_K's do.
constexpr int64_t kQ5KLanesSbBytes = 2816;
constexpr int64_t kQ5KLanesScales = 0;
constexpr int64_t kQ5KLanesD = 192;
constexpr int64_t kQ5KLanesDmin = 224;

// Step k's line of pair p's quants, and of the fifth bits.
constexpr int64_t q5k_lanes_qs(int64_t p, int64_t k) { return p == 0 ? 256 + 128 * k : 1280 + 512 * (p - 1) + 64 * k; }
constexpr int64_t q5k_lanes_qh(int64_t k) { return 256 + 128 * k + 64; }

}  // namespace tc::kernels
