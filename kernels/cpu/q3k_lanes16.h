// Q3_K weights repacked for the CPU matmul (WeightLayout::Q3_KLanes16): the
// rows in tiles of 16, each super-block of a tile stored so that one
// 64-byte load gives one 4-byte step of all 16 rows, row j in 32-bit lane j,
// and byte i of the 16 rows' packed scales in one 16-byte load. The lane
// kernel (matmul_x86_q3k_lanes_avx2.h) keeps each row's int16 pair sums of
// a sub-block in its own lane and scales them with vpmaddwd, where the
// file's rows need a horizontal sum per row and super-block. Same bytes as
// the file.
//
// A Q3_K super-block's element 128 n + 32 c + l (n < 2, c < 4, l < 32) is
// ((qs[32 n + l] >> 2 c) & 3) + 4 ((hmask[l] >> (4 n + c)) & 1) - 4, times
// scale (32 n + 32 c + l) / 16 - 32 (6 bits, packed in 12 bytes). A tile
// stores each super-block in the order the kernel reads it, so that the
// stream is sequential:
//
// A matrix of n_rows rows x ns = n_cols / 256 super-blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = ns * 1760; super-block s of the tile at s * 1760 (32-byte
//   aligned where the matrix is 64-byte aligned):
//     scales u8  [12][16]  at 0: packed scale byte i of each row
//     d      f16 [16]      at 192: each row's d
//   then per step k < 8 (each 4 bytes of each row j at 4 j of a 64-byte line):
//     qs     u8  [16][4]   at 224 + 128 k: bytes 4k..4k+3 of the row's qs
//                          (elements 32 c + 4 k .. of half 0, c = 0..3)
//     hmask  u8  [16][4]   at 224 + 128 k + 64: bytes 4k..4k+3 of hmask
//                          (bit 4 n + c: element 128 n + 32 c + 4 k ..)
//   then half 1's qs, step k at 1248 + 64 k: bytes 32 + 4k..32 + 4k + 3.
//   The last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
#pragma once

#include <cstdint>

namespace tc::kernels {

constexpr int64_t kQ3KLanes16Rows = 16;
// Offsets within one super-block of a tile (see above).
constexpr int64_t kQ3KLanesSbBytes = 1760;
constexpr int64_t kQ3KLanesScales = 0;
constexpr int64_t kQ3KLanesD = 192;
constexpr int64_t kQ3KLanesQs = 224;       // half 0's first qs line
constexpr int64_t kQ3KLanesHalf1 = 1248;  // half 1's first qs line

// Step k's qs line of half n, and its hmask line (both halves' high bits).
constexpr int64_t q3k_lanes_qs(int64_t n, int64_t k) {
  return n == 0 ? kQ3KLanesQs + 128 * k : kQ3KLanesHalf1 + 64 * k;
}
constexpr int64_t q3k_lanes_hmask(int64_t k) { return kQ3KLanesQs + 128 * k + 64; }

}  // namespace tc::kernels
