// Packing the K-quants (Q3_K, Q4_K, Q5_K, Q6_K) and IQ4_XS into and out of
// their 16-row lane layouts (q3k_lanes16.h, q4k_lanes16.h, q5k_lanes16.h,
// q6k_lanes16.h, iq4xs_lanes16.h: each layout's byte map and constants).
// Byte moves only: packing never changes a weight, and a matrix takes the
// file's bytes. Reached through lanes16.h's dtype-keyed entry points.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/tensor.h"

namespace tc::kernels {

class ThreadPool;

// Whether `dtype` is one of the super-block types with a lane layout here
// (Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS).
bool is_kquant_lanes16(DType dtype);

// Bytes of one tile of 16 rows of n_cols columns of `dtype`.
int64_t kquant_lanes16_tile_bytes(DType dtype, int64_t n_cols);

// Repacks `rows` (a Q3_K, Q4_K, Q5_K, Q6_K or IQ4_XS matrix in
// WeightLayout::Rows) into dst (lanes16_bytes, 64-byte aligned) and returns
// the view of dst. pool may be nullptr.
Tensor pack_kquant_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool);

// The plain rows [r0, r0 + n) of a matrix in its K-quant lane layout into
// out (n * row_bytes bytes).
void unpack_kquant_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out);

}  // namespace tc::kernels
