// The lane-tile layouts' entry points (lanes16.h): each dtype to its file.
#include "kernels/cpu/lanes16.h"

#include "kernels/check.h"
#include "kernels/cpu/iq4xs_lanes16.h"
#include "kernels/cpu/lanes16_tiles.h"
#include "kernels/cpu/kquant_lanes16.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/q3k_lanes16.h"
#include "kernels/cpu/q4k_lanes16.h"
#include "kernels/cpu/q5_lanes16.h"
#include "kernels/cpu/q5k_lanes16.h"
#include "kernels/cpu/q6k_lanes16.h"
#include "kernels/cpu/q8_lanes16.h"

namespace tc::kernels {

static_assert(kLanes16Rows == kQ4Lanes16Rows && kLanes16Rows == kQ8Lanes16Rows && kLanes16Rows == kQ4KLanes16Rows &&
              kLanes16Rows == kQ5KLanes16Rows && kLanes16Rows == kQ6KLanes16Rows && kLanes16Rows == kQ3KLanes16Rows &&
              kLanes16Rows == kIQ4XSLanes16Rows && kLanes16Rows == kQ5Lanes16Rows);

bool has_lanes16(DType dtype) {
  return dtype == DType::Q4_0 || dtype == DType::Q4_1 || dtype == DType::IQ4_NL || dtype == DType::Q8_0 ||
         is_q5_lanes16(dtype) || is_kquant_lanes16(dtype);
}

WeightLayout lanes16_layout(DType dtype) {
  TC_CHECK(has_lanes16(dtype), "lanes16_layout: no lane layout for this dtype");
  switch (dtype) {
    case DType::Q8_0:
      return WeightLayout::Q8_0Lanes16;
    case DType::Q4_1:
      return WeightLayout::Q4_1Lanes16;
    case DType::Q3_K:
      return WeightLayout::Q3_KLanes16;
    case DType::Q4_K:
      return WeightLayout::Q4_KLanes16;
    case DType::Q5_K:
      return WeightLayout::Q5_KLanes16;
    case DType::Q6_K:
      return WeightLayout::Q6_KLanes16;
    case DType::IQ4_XS:
      return WeightLayout::IQ4_XSLanes16;
    case DType::IQ4_NL:
      return WeightLayout::IQ4_NLLanes16;
    case DType::Q5_0:
      return WeightLayout::Q5_0Lanes16;
    case DType::Q5_1:
      return WeightLayout::Q5_1Lanes16;
    default:
      return WeightLayout::Q4_0Lanes16;
  }
}

int64_t lanes16_tile_bytes(DType dtype, int64_t n_cols) {
  TC_CHECK(has_lanes16(dtype), "lanes16_tile_bytes: no lane layout for this dtype");
  if (dtype == DType::Q8_0) return q8_lanes16_tile_bytes(n_cols);
  if (is_q5_lanes16(dtype)) return q5_lanes16_tile_bytes(n_cols, dtype);
  if (is_kquant_lanes16(dtype)) return kquant_lanes16_tile_bytes(dtype, n_cols);
  return q4_lanes16_tile_bytes(n_cols, dtype);
}

// Every layout: the whole tiles, then the last n_rows % 16 rows as the file
// has them.
int64_t lanes16_bytes(DType dtype, int64_t n_cols, int64_t n_rows) {
  return lanes16::n_tiles(n_rows) * lanes16_tile_bytes(dtype, n_cols) +
         n_rows % kLanes16Rows * row_bytes(dtype, n_cols);
}

bool lanes16_wanted(DType dtype, CpuRepack mode) {
  if (dtype == DType::Q8_0) return q8_lanes16_wanted(mode);
  if (dtype == DType::Q3_K) return mode == CpuRepack::Auto && detail::chosen_isa().q3k_lanes16;
  if (dtype == DType::IQ4_XS) return mode == CpuRepack::Auto && detail::chosen_isa().iq4xs_lanes16;
  if (dtype == DType::IQ4_NL) return mode == CpuRepack::Auto && detail::chosen_isa().iq4nl_lanes16;
  if (is_q5_lanes16(dtype)) return mode == CpuRepack::Auto && detail::chosen_isa().q5_lanes16;
  if (is_kquant_lanes16(dtype)) return mode == CpuRepack::Auto && detail::chosen_isa().k_lanes16_max_tokens > 0;
  return has_lanes16(dtype) && q4_lanes16_wanted(mode);
}

Tensor pack_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  if (rows.dtype == DType::Q8_0) return pack_q8_lanes16(rows, dst, pool);
  if (is_q5_lanes16(rows.dtype)) return pack_q5_lanes16(rows, dst, pool);
  if (is_kquant_lanes16(rows.dtype)) return pack_kquant_lanes16(rows, dst, pool);
  return pack_q4_lanes16(rows, dst, pool);  // refuses any other dtype
}

void unpack_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  if (packed.dtype == DType::Q8_0) return unpack_q8_lanes16_rows(packed, r0, n, out);
  if (is_q5_lanes16(packed.dtype)) return unpack_q5_lanes16_rows(packed, r0, n, out);
  if (is_kquant_lanes16(packed.dtype)) return unpack_kquant_lanes16_rows(packed, r0, n, out);
  unpack_q4_lanes16_rows(packed, r0, n, out);  // refuses any other dtype
}

}  // namespace tc::kernels
