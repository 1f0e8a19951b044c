// IQ4_XS weights repacked for the CPU matmul (WeightLayout::IQ4_XSLanes16):
// the rows in tiles of 16, each super-block of a tile stored so that one
// 64-byte load gives one 4-byte step of all 16 rows, row j in 32-bit lane j,
// and each scale byte of all 16 rows in one 16-byte load. The lane kernel
// (matmul_x86_iq4xs_lanes_avx2.h) looks up a step's 16 rows' levels with
// two vpshufb and keeps each row's sums in its own lane, where the file's
// rows need a 16-byte nibble spread per 32 weights and a horizontal sum per
// row and super-block. Same bytes as the file.
//
// An IQ4_XS super-block's element 32 i + l (i < 8, l < 32) is
// kIQ4NLValues[nibble] times (sub-block i's 6-bit scale - 32) times d; the
// nibble is the low one of qs[16 i + l] for l < 16, the high one of
// qs[16 i + l - 16] after; the scale's low 4 bits are nibble i % 2 of
// scales_l[i / 2], its top 2 bits bits 2i..2i+1 of scales_h.
//
// A matrix of n_rows rows x ns = n_cols / 256 super-blocks:
//   tile t (rows 16t..16t+15, t < n_rows / 16) at t * tile_bytes, where
//   tile_bytes = ns * 2176; super-block s of the tile at s * 2176, in the
//   order the kernel reads it (the stream stays sequential):
//     scales_l u8  [4][16]      at 0: byte i of each row's scales_l
//     scales_h u16 [16]         at 64: each row's scales_h
//     d        f16 [16]         at 96: each row's d
//     qs       u8  [8][4][16][4] at 128: sub-block i, step k, row j: bytes
//                               16i + 4k..16i + 4k + 3 of the row's qs (low
//                               nibbles: elements 32i + 4k..; high nibbles:
//                               elements 32i + 16 + 4k..)
//   the last n_rows % 16 rows after the tiles, in the file's row layout
//   (row_bytes apart).
#pragma once

#include <cstdint>

namespace tc::kernels {

constexpr int64_t kIQ4XSLanes16Rows = 16;
// Offsets within one super-block of a tile (see above).
constexpr int64_t kIQ4XSLanesSbBytes = 2176;
constexpr int64_t kIQ4XSLanesScalesL = 0;
constexpr int64_t kIQ4XSLanesScalesH = 64;
constexpr int64_t kIQ4XSLanesD = 96;
constexpr int64_t kIQ4XSLanesQs = 128;

// Step k of sub-block i: its 64-byte line.
constexpr int64_t iq4xs_lanes_qs(int64_t i, int64_t k) { return kIQ4XSLanesQs + 64 * (4 * i + k); }

}  // namespace tc::kernels
