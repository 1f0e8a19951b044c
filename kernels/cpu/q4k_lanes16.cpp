// Q4_K row layout <-> the 16-row lane tiles of q4k_lanes16.h (byte moves
// only: packing never changes a weight).
#include "kernels/cpu/q4k_lanes16.h"

#include <cstddef>

#include "kernels/check.h"
#include "kernels/cpu/lanes16_tiles.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;   // bytes of one row per step
constexpr int64_t kPairBytes = 32;  // a sub-block pair's qs in a row
constexpr int64_t kSteps = kPairBytes / kStepBytes;
constexpr int64_t kScaleBytes = 12;
static_assert(kQ4KLanes16Rows == lanes16::kRows);
static_assert(kQ4KLanesD == kQ4KLanesScales + kScaleBytes * kQ4KLanes16Rows);
static_assert(kQ4KLanesDmin == kQ4KLanesD + 32 && kQ4KLanesQs == kQ4KLanesDmin + 32);
static_assert(kQ4KLanesSbBytes == kQ4KLanesQs + kQ4KLanes16Rows * kQK_K / 2);
static_assert(kQ4KLanesSbBytes == kQ4KLanes16Rows * static_cast<int64_t>(sizeof(BlockQ4_K)));

// fn(tile_offset, row_offset, n) for every piece of row j's n_sb blocks:
// n bytes at row_offset of the row lie at tile_offset of its tile.
template <class Fn>
void for_each_piece(int64_t j, int64_t n_sb, Fn&& fn) {
  constexpr auto kBlock = static_cast<int64_t>(sizeof(BlockQ4_K));
  constexpr int64_t kScalesAt = offsetof(BlockQ4_K, scales), kQsAt = offsetof(BlockQ4_K, qs);
  for (int64_t s = 0; s < n_sb; ++s) {
    const int64_t tile = s * kQ4KLanesSbBytes, row = s * kBlock;
    fn(tile + kQ4KLanesD + 2 * j, row + offsetof(BlockQ4_K, d), 2);
    fn(tile + kQ4KLanesDmin + 2 * j, row + offsetof(BlockQ4_K, dmin), 2);
    for (int64_t i = 0; i < kScaleBytes; ++i) {
      fn(tile + kQ4KLanesScales + i * kQ4KLanes16Rows + j, row + kScalesAt + i, 1);
    }
    for (int64_t p = 0; p < kQK_K / 2 / kPairBytes; ++p) {
      for (int64_t k = 0; k < kSteps; ++k) {
        fn(tile + kQ4KLanesQs + ((p * kSteps + k) * kQ4KLanes16Rows + j) * kStepBytes,
           row + kQsAt + p * kPairBytes + k * kStepBytes, kStepBytes);
      }
    }
  }
}

void check_q4_k(const Tensor& t, const char* what) {
  TC_CHECK(t.dtype == DType::Q4_K && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK_K == 0, "q4k_lanes16: n_cols is not a multiple of 256");
}

}  // namespace

int64_t q4k_lanes16_tile_bytes(int64_t n_cols) { return n_cols / kQK_K * kQ4KLanesSbBytes; }

Tensor pack_q4k_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_q4_k(rows, "pack_q4k_lanes16: not a Q4_K matrix");
  const int64_t ns = rows.n_cols() / kQK_K;
  return lanes16::pack_pieces(rows, dst, q4k_lanes16_tile_bytes(rows.n_cols()), WeightLayout::Q4_KLanes16, pool,
                              {"pack_q4k_lanes16: needs a row-layout matrix and a destination",
                               "pack_q4k_lanes16: the destination must be 64-byte aligned"},
                              [ns](int64_t j, auto&& fn) { for_each_piece(j, ns, fn); });
}

void unpack_q4k_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q4_k(packed, "unpack_q4k_lanes16_rows: not a Q4_K matrix");
  TC_CHECK(packed.layout == WeightLayout::Q4_KLanes16, "unpack_q4k_lanes16_rows: not a Q4_KLanes16 matrix");
  lanes16::unpack_pieces(packed, r0, n, out, q4k_lanes16_tile_bytes(packed.n_cols()),
                         "unpack_q4k_lanes16_rows: rows outside the matrix",
                         [ns = packed.n_cols() / kQK_K](int64_t j, auto&& fn) { for_each_piece(j, ns, fn); });
}

}  // namespace tc::kernels
