// Q5_K row layout <-> the 16-row lane tiles of q5k_lanes16.h (byte moves
// only: packing never changes a weight).
#include "kernels/cpu/q5k_lanes16.h"

#include <cstddef>

#include "kernels/check.h"
#include "kernels/cpu/lanes16_tiles.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;  // bytes of one row per step
constexpr int64_t kSteps = 8;      // steps per 32 bytes of qs or qh
constexpr int64_t kScaleBytes = 12;
static_assert(kQ5KLanes16Rows == lanes16::kRows);
static_assert(kQ5KLanesD == kQ5KLanesScales + kScaleBytes * kQ5KLanes16Rows && kQ5KLanesDmin == kQ5KLanesD + 32);
static_assert(q5k_lanes_qs(0, 0) == kQ5KLanesDmin + 32 && q5k_lanes_qs(1, 0) == q5k_lanes_qh(kSteps - 1) + 64);
static_assert(kQ5KLanesSbBytes == q5k_lanes_qs(3, kSteps - 1) + 64);
static_assert(kQ5KLanesSbBytes == kQ5KLanes16Rows * static_cast<int64_t>(sizeof(BlockQ5_K)));

// fn(tile_offset, row_offset, n) for every piece of row j's n_sb blocks:
// n bytes at row_offset of the row lie at tile_offset of its tile.
template <class Fn>
void for_each_piece(int64_t j, int64_t n_sb, Fn&& fn) {
  constexpr auto kBlock = static_cast<int64_t>(sizeof(BlockQ5_K));
  constexpr int64_t kScalesAt = offsetof(BlockQ5_K, scales);
  constexpr int64_t kQsAt = offsetof(BlockQ5_K, qs), kQhAt = offsetof(BlockQ5_K, qh);
  for (int64_t s = 0; s < n_sb; ++s) {
    const int64_t tile = s * kQ5KLanesSbBytes + j * kStepBytes, row = s * kBlock;
    fn(s * kQ5KLanesSbBytes + kQ5KLanesD + 2 * j, row + offsetof(BlockQ5_K, d), 2);
    fn(s * kQ5KLanesSbBytes + kQ5KLanesDmin + 2 * j, row + offsetof(BlockQ5_K, dmin), 2);
    for (int64_t i = 0; i < kScaleBytes; ++i) {
      fn(s * kQ5KLanesSbBytes + kQ5KLanesScales + i * kQ5KLanes16Rows + j, row + kScalesAt + i, 1);
    }
    for (int64_t k = 0; k < kSteps; ++k) {
      fn(tile + q5k_lanes_qh(k), row + kQhAt + k * kStepBytes, kStepBytes);
      for (int64_t p = 0; p < 4; ++p) fn(tile + q5k_lanes_qs(p, k), row + kQsAt + 32 * p + k * kStepBytes, kStepBytes);
    }
  }
}

void check_q5_k(const Tensor& t, const char* what) {
  TC_CHECK(t.dtype == DType::Q5_K && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK_K == 0, "q5k_lanes16: n_cols is not a multiple of 256");
}

}  // namespace

int64_t q5k_lanes16_tile_bytes(int64_t n_cols) { return n_cols / kQK_K * kQ5KLanesSbBytes; }

Tensor pack_q5k_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_q5_k(rows, "pack_q5k_lanes16: not a Q5_K matrix");
  const int64_t ns = rows.n_cols() / kQK_K;
  return lanes16::pack_pieces(rows, dst, q5k_lanes16_tile_bytes(rows.n_cols()), WeightLayout::Q5_KLanes16, pool,
                              {"pack_q5k_lanes16: needs a row-layout matrix and a destination",
                               "pack_q5k_lanes16: the destination must be 64-byte aligned"},
                              [ns](int64_t j, auto&& fn) { for_each_piece(j, ns, fn); });
}

void unpack_q5k_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q5_k(packed, "unpack_q5k_lanes16_rows: not a Q5_K matrix");
  TC_CHECK(packed.layout == WeightLayout::Q5_KLanes16, "unpack_q5k_lanes16_rows: not a Q5_KLanes16 matrix");
  lanes16::unpack_pieces(packed, r0, n, out, q5k_lanes16_tile_bytes(packed.n_cols()),
                         "unpack_q5k_lanes16_rows: rows outside the matrix",
                         [ns = packed.n_cols() / kQK_K](int64_t j, auto&& fn) { for_each_piece(j, ns, fn); });
}

}  // namespace tc::kernels
