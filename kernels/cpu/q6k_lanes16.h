// Q6_K weights repacked for the CPU matmul (WeightLayout::Q6_KLanes16): the
// rows in tiles of 16, each super-block of a tile stored so that one
// 64-byte load gives one 4-byte step of all 16 rows, row j in 32-bit lane j,
// and each of the 16 int8 sub-block scales of all 16 rows in one 16-byte
// load. The lane kernel (matmul_x86_q6k_lanes_avx2.h) keeps each row's int16
// pair sums of a sub-block in its own lane and scales them with vpmaddwd,
// where the file's rows need a horizontal sum per row and super-block. Same
// bytes as the file.
//
// A Q6_K super-block's element 128 n + 32 m + l (n < 2, m < 4, l < 32) is
// (ql[64 n + 32 (m % 2) + l] >> 4 (m / 2)) & 15 | ((qh[32 n + l] >> 2 m) & 3) << 4,
// times scales[8 n + 2 m + l / 16], less 32. A tile stores each super-block
// in the order the kernel reads it, so that the stream is sequential:
//
// A matrix of n_rows rows x ns = n_cols / 256 super-blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = ns * 3360; super-block s of the tile at s * 3360 (32-byte
//   aligned where the matrix is 64-byte aligned):
//     scales i8  [16][16]  at 0: scale i of each row
//     d      f16 [16]      at 256: each row's d
//   then per half n < 2 at 288 + 1536 n, per step k < 8 (each 4 bytes of
//   each row j at 4 j of a 64-byte line):
//     ql     u8  [16][4]   at 128 k: bytes 4k..4k+3 of the row's
//                          ql[64 n ..] (low nibbles: group m = 0, high: 2)
//     qh     u8  [16][4]   at 128 k + 64: bytes 4k..4k+3 of qh[32 n ..]
//     ql     u8  [16][4]   at 1024 + 64 k: bytes 4k..4k+3 of ql[64 n + 32 ..]
//                          (low nibbles: group 1, high: 3)
//   the last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
#pragma once

#include <cstdint>

namespace tc::kernels {

constexpr int64_t kQ6KLanes16Rows = 16;
// Offsets within one super-block of a tile (see above).
constexpr int64_t kQ6KLanesSbBytes = 3360;
constexpr int64_t kQ6KLanesScales = 0;
constexpr int64_t kQ6KLanesD = 256;
constexpr int64_t kQ6KLanesQs = 288;     // half 0's lines
constexpr int64_t kQ6KLanesHalf = 1536;  // one half n's ql and qh lines

// Step k's line of half n: ql of groups g and g + 2 (g < 2), or qh.
constexpr int64_t q6k_lanes_ql(int64_t n, int64_t g, int64_t k) {
  return kQ6KLanesQs + n * kQ6KLanesHalf + (g == 0 ? 128 * k : 1024 + 64 * k);
}
constexpr int64_t q6k_lanes_qh(int64_t n, int64_t k) { return kQ6KLanesQs + n * kQ6KLanesHalf + 128 * k + 64; }

}  // namespace tc::kernels
