// Q6_K row layout <-> the 16-row lane tiles of q6k_lanes16.h (byte moves
// only: packing never changes a weight).
#include "kernels/cpu/q6k_lanes16.h"

#include <cstddef>

#include "kernels/check.h"
#include "kernels/cpu/lanes16_tiles.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;  // bytes of one row per step
constexpr int64_t kSteps = 8;      // steps per 32 bytes of ql or qh
constexpr int64_t kLine = kQ6KLanes16Rows * kStepBytes;
constexpr int64_t kScaleBytes = kQK_K / 16;
static_assert(kQ6KLanes16Rows == lanes16::kRows);
static_assert(kQ6KLanesHalf == 3 * kSteps * kLine);
static_assert(kQ6KLanesD == kQ6KLanesScales + kScaleBytes * kQ6KLanes16Rows && kQ6KLanesQs == kQ6KLanesD + 32);
static_assert(kQ6KLanesSbBytes == kQ6KLanesQs + 2 * kQ6KLanesHalf);
static_assert(kQ6KLanesSbBytes == kQ6KLanes16Rows * static_cast<int64_t>(sizeof(BlockQ6_K)));

// fn(tile_offset, row_offset, n) for every piece of row j's n_sb blocks:
// n bytes at row_offset of the row lie at tile_offset of its tile.
template <class Fn>
void for_each_piece(int64_t j, int64_t n_sb, Fn&& fn) {
  constexpr auto kBlock = static_cast<int64_t>(sizeof(BlockQ6_K));
  constexpr int64_t kQlAt = offsetof(BlockQ6_K, ql), kQhAt = offsetof(BlockQ6_K, qh);
  constexpr int64_t kScalesAt = offsetof(BlockQ6_K, scales);
  for (int64_t s = 0; s < n_sb; ++s) {
    const int64_t tile = s * kQ6KLanesSbBytes, row = s * kBlock;
    fn(tile + kQ6KLanesD + 2 * j, row + offsetof(BlockQ6_K, d), 2);
    for (int64_t i = 0; i < kScaleBytes; ++i) {
      fn(tile + kQ6KLanesScales + i * kQ6KLanes16Rows + j, row + kScalesAt + i, 1);
    }
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t k = 0; k < kSteps; ++k) {
        const int64_t at = tile + j * kStepBytes;
        for (int64_t g = 0; g < 2; ++g) {
          fn(at + q6k_lanes_ql(n, g, k), row + kQlAt + 64 * n + 32 * g + k * kStepBytes, kStepBytes);
        }
        fn(at + q6k_lanes_qh(n, k), row + kQhAt + 32 * n + k * kStepBytes, kStepBytes);
      }
    }
  }
}

void check_q6_k(const Tensor& t, const char* what) {
  TC_CHECK(t.dtype == DType::Q6_K && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK_K == 0, "q6k_lanes16: n_cols is not a multiple of 256");
}

}  // namespace

int64_t q6k_lanes16_tile_bytes(int64_t n_cols) { return n_cols / kQK_K * kQ6KLanesSbBytes; }

Tensor pack_q6k_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_q6_k(rows, "pack_q6k_lanes16: not a Q6_K matrix");
  const int64_t ns = rows.n_cols() / kQK_K;
  return lanes16::pack_pieces(rows, dst, q6k_lanes16_tile_bytes(rows.n_cols()), WeightLayout::Q6_KLanes16, pool,
                              {"pack_q6k_lanes16: needs a row-layout matrix and a destination",
                               "pack_q6k_lanes16: the destination must be 64-byte aligned"},
                              [ns](int64_t j, auto&& fn) { for_each_piece(j, ns, fn); });
}

void unpack_q6k_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q6_k(packed, "unpack_q6k_lanes16_rows: not a Q6_K matrix");
  TC_CHECK(packed.layout == WeightLayout::Q6_KLanes16, "unpack_q6k_lanes16_rows: not a Q6_KLanes16 matrix");
  lanes16::unpack_pieces(packed, r0, n, out, q6k_lanes16_tile_bytes(packed.n_cols()),
                         "unpack_q6k_lanes16_rows: rows outside the matrix",
                         [ns = packed.n_cols() / kQK_K](int64_t j, auto&& fn) { for_each_piece(j, ns, fn); });
}

}  // namespace tc::kernels
