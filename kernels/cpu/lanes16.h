// The 16-row lane-tile layouts of the CPU matmul, by the dtype they hold:
// Q4_0, Q4_1 and IQ4_NL (q4_lanes16.h), Q5_0 and Q5_1 (q5_lanes16.h), Q8_0 (q8_lanes16.h), Q3_K
// (q3k_lanes16.h), Q4_K (q4k_lanes16.h), Q5_K (q5k_lanes16.h), Q6_K
// (q6k_lanes16.h) and IQ4_XS (iq4xs_lanes16.h; the last five packed by
// kquant_lanes16.h). One entry point per operation, so that the repack at
// load, matmul's driver and the benchmarks need not know which file holds
// which dtype.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/q4_lanes16.h"
#include "kernels/tensor.h"

namespace tc::kernels {

class ThreadPool;

constexpr int64_t kLanes16Rows = 16;

// Whether `dtype` has a lane layout.
bool has_lanes16(DType dtype);

// The layout that holds `dtype` (has_lanes16).
WeightLayout lanes16_layout(DType dtype);

// Bytes of one tile of 16 rows of n_cols columns, and of a whole matrix.
int64_t lanes16_tile_bytes(DType dtype, int64_t n_cols);
int64_t lanes16_bytes(DType dtype, int64_t n_cols, int64_t n_rows);

// Whether matmul() here should get `dtype`'s matrices in its layout under
// `mode` (false for dtypes without one).
bool lanes16_wanted(DType dtype, CpuRepack mode);

// Repacks `rows` (row layout, a dtype with a lane layout) into dst
// (lanes16_bytes, 64-byte aligned) and returns the view of dst. pool may be
// nullptr.
Tensor pack_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool);

// The plain rows [r0, r0 + n) of a lane-tile matrix into out (n * row_bytes
// bytes).
void unpack_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out);

}  // namespace tc::kernels
