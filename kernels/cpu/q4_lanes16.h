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
// Q4_1 (WeightLayout::Q4_1Lanes16) the same, its levels q in qs, with
// tile_bytes = nb * 320 rounded up to 64 for its minimums after the scales:
//     m   f16 [nb][16]        at nb * 288: block b's minimum of each row
// IQ4_NL (WeightLayout::IQ4_NLLanes16) exactly as Q4_0, its nibbles the
// indices of its levels; read in place by the avx2 variant only
// (matmul_x86_iq4nl_lanes_avx2.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/tensor.h"

namespace tc::kernels {

class ThreadPool;

constexpr int64_t kQ4Lanes16Rows = 16;

// Bytes of one tile of 16 rows of n_cols columns of `dtype` (Q4_0, Q4_1 or IQ4_NL);
// a whole matrix's: lanes16.h's lanes16_bytes.
int64_t q4_lanes16_tile_bytes(int64_t n_cols, DType dtype = DType::Q4_0);

// Whether Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q3_K-Q6_K, IQ4_XS and IQ4_NL matrices are repacked into
// their lane layouts at load (this one, q8_lanes16.h, kquant_lanes16.h; the
// serve key and bench/generate/perplexity option `repack`).
enum class CpuRepack {
  Off,   // never: the file's row layout (for comparisons)
  Auto,  // wherever matmul reads the layout natively
};

// Whether matmul() here should get Q4_0 matrices in the layout under `mode`.
// The x86 variants read it natively and are faster from it: avx512 (VNNI)
// at every token count (2-core Zen 5: 1 token 1.1-1.3x, 8 tokens
// 1.7-1.9x); AVX2 (2-core Zen 3) 2.2-2.7x at 2 tokens, 1.3-1.8x at 8, and
// about even at one (-12% to +7% per matrix). The portable variant reads it
// only by unpacking tiles: never.
bool q4_lanes16_wanted(CpuRepack mode);

// "off", "auto" -> the mode; anything else: nullopt.
std::optional<CpuRepack> cpu_repack_from_name(std::string_view name);

// Repacks `rows` (a Q4_0, Q4_1 or IQ4_NL matrix in WeightLayout::Rows,
// n_cols a multiple of 32) into dst (lanes16_bytes, 64-byte aligned) and
// returns the view of dst (Q4_0Lanes16, Q4_1Lanes16 or IQ4_NLLanes16).
// pool may be nullptr.
Tensor pack_q4_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool);

// The plain rows [r0, r0 + n) of a Q4_0Lanes16, Q4_1Lanes16 or IQ4_NLLanes16 matrix into
// out (n * row_bytes bytes).
void unpack_q4_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out);

}  // namespace tc::kernels
