// The K-quants' and IQ4_XS's row layouts <-> their 16-row lane tiles: one
// byte map per type (q3k_lanes16.h, q4k_lanes16.h, q5k_lanes16.h,
// q6k_lanes16.h, iq4xs_lanes16.h), one pack and unpack.
#include "kernels/cpu/kquant_lanes16.h"

#include <cstddef>

#include "kernels/check.h"
#include "kernels/cpu/iq4xs_lanes16.h"
#include "kernels/cpu/lanes16_tiles.h"
#include "kernels/cpu/q3k_lanes16.h"
#include "kernels/cpu/q4k_lanes16.h"
#include "kernels/cpu/q5k_lanes16.h"
#include "kernels/cpu/q6k_lanes16.h"

namespace tc::kernels {
namespace {

constexpr int64_t kRows = lanes16::kRows;
constexpr int64_t kStep = 4;  // bytes of one row per step: row j's at 4 j of the step's line
constexpr int64_t kSteps = 8;  // steps per 32 bytes of a row's quants
static_assert(kQ3KLanes16Rows == kRows && kQ4KLanes16Rows == kRows && kQ5KLanes16Rows == kRows &&
              kQ6KLanes16Rows == kRows && kIQ4XSLanes16Rows == kRows);

// Each type's byte map: pieces(j, fn) calls fn(tile_at, row_at, n) for every
// piece of row j's super-block (n bytes at row_at of its block lie at
// tile_at of the tile's super-block).
struct Q3KMap {
  using Block = BlockQ3_K;
  static constexpr WeightLayout kLayout = WeightLayout::Q3_KLanes16;
  static constexpr int64_t kSbBytes = kQ3KLanesSbBytes;
  template <class Fn>
  static void pieces(int64_t j, Fn&& fn) {
    for (int64_t i = 0; i < 12; ++i) fn(kQ3KLanesScales + i * kRows + j, offsetof(Block, scales) + i, 1);
    fn(kQ3KLanesD + 2 * j, offsetof(Block, d), 2);
    for (int64_t k = 0; k < kSteps; ++k) {
      for (int64_t n = 0; n < 2; ++n) {
        fn(q3k_lanes_qs(n, k) + j * kStep, offsetof(Block, qs) + 32 * n + k * kStep, kStep);
      }
      fn(q3k_lanes_hmask(k) + j * kStep, offsetof(Block, hmask) + k * kStep, kStep);
    }
  }
};
static_assert(kQ3KLanesD == kQ3KLanesScales + 12 * kRows && kQ3KLanesQs == kQ3KLanesD + 32);
static_assert(kQ3KLanesHalf1 == q3k_lanes_hmask(kSteps - 1) + 64);
static_assert(kQ3KLanesSbBytes == q3k_lanes_qs(1, kSteps - 1) + 64);

struct Q4KMap {
  using Block = BlockQ4_K;
  static constexpr WeightLayout kLayout = WeightLayout::Q4_KLanes16;
  static constexpr int64_t kSbBytes = kQ4KLanesSbBytes;
  template <class Fn>
  static void pieces(int64_t j, Fn&& fn) {
    fn(kQ4KLanesD + 2 * j, offsetof(Block, d), 2);
    fn(kQ4KLanesDmin + 2 * j, offsetof(Block, dmin), 2);
    for (int64_t i = 0; i < 12; ++i) fn(kQ4KLanesScales + i * kRows + j, offsetof(Block, scales) + i, 1);
    for (int64_t p = 0; p < 4; ++p) {
      for (int64_t k = 0; k < kSteps; ++k) {
        fn(kQ4KLanesQs + (p * kSteps + k) * kRows * kStep + j * kStep, offsetof(Block, qs) + 32 * p + k * kStep, kStep);
      }
    }
  }
};
static_assert(kQ4KLanesD == kQ4KLanesScales + 12 * kRows && kQ4KLanesDmin == kQ4KLanesD + 32);
static_assert(kQ4KLanesQs == kQ4KLanesDmin + 32 && kQ4KLanesSbBytes == kQ4KLanesQs + kRows * kQK_K / 2);

struct Q5KMap {
  using Block = BlockQ5_K;
  static constexpr WeightLayout kLayout = WeightLayout::Q5_KLanes16;
  static constexpr int64_t kSbBytes = kQ5KLanesSbBytes;
  template <class Fn>
  static void pieces(int64_t j, Fn&& fn) {
    fn(kQ5KLanesD + 2 * j, offsetof(Block, d), 2);
    fn(kQ5KLanesDmin + 2 * j, offsetof(Block, dmin), 2);
    for (int64_t i = 0; i < 12; ++i) fn(kQ5KLanesScales + i * kRows + j, offsetof(Block, scales) + i, 1);
    for (int64_t k = 0; k < kSteps; ++k) {
      fn(q5k_lanes_qh(k) + j * kStep, offsetof(Block, qh) + k * kStep, kStep);
      for (int64_t p = 0; p < 4; ++p) {
        fn(q5k_lanes_qs(p, k) + j * kStep, offsetof(Block, qs) + 32 * p + k * kStep, kStep);
      }
    }
  }
};
static_assert(kQ5KLanesD == kQ5KLanesScales + 12 * kRows && kQ5KLanesDmin == kQ5KLanesD + 32);
static_assert(q5k_lanes_qs(0, 0) == kQ5KLanesDmin + 32 && q5k_lanes_qs(1, 0) == q5k_lanes_qh(kSteps - 1) + 64);
static_assert(kQ5KLanesSbBytes == q5k_lanes_qs(3, kSteps - 1) + 64);

struct Q6KMap {
  using Block = BlockQ6_K;
  static constexpr WeightLayout kLayout = WeightLayout::Q6_KLanes16;
  static constexpr int64_t kSbBytes = kQ6KLanesSbBytes;
  template <class Fn>
  static void pieces(int64_t j, Fn&& fn) {
    fn(kQ6KLanesD + 2 * j, offsetof(Block, d), 2);
    for (int64_t i = 0; i < 16; ++i) fn(kQ6KLanesScales + i * kRows + j, offsetof(Block, scales) + i, 1);
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t k = 0; k < kSteps; ++k) {
        for (int64_t g = 0; g < 2; ++g) {
          fn(q6k_lanes_ql(n, g, k) + j * kStep, offsetof(Block, ql) + 64 * n + 32 * g + k * kStep, kStep);
        }
        fn(q6k_lanes_qh(n, k) + j * kStep, offsetof(Block, qh) + 32 * n + k * kStep, kStep);
      }
    }
  }
};
static_assert(kQ6KLanesHalf == 3 * kSteps * kRows * kStep);
static_assert(kQ6KLanesD == kQ6KLanesScales + 16 * kRows && kQ6KLanesQs == kQ6KLanesD + 32);
static_assert(kQ6KLanesSbBytes == kQ6KLanesQs + 2 * kQ6KLanesHalf);

struct IQ4XSMap {
  using Block = BlockIQ4_XS;
  static constexpr WeightLayout kLayout = WeightLayout::IQ4_XSLanes16;
  static constexpr int64_t kSbBytes = kIQ4XSLanesSbBytes;
  template <class Fn>
  static void pieces(int64_t j, Fn&& fn) {
    for (int64_t i = 0; i < 4; ++i) fn(kIQ4XSLanesScalesL + i * kRows + j, offsetof(Block, scales_l) + i, 1);
    fn(kIQ4XSLanesScalesH + 2 * j, offsetof(Block, scales_h), 2);
    fn(kIQ4XSLanesD + 2 * j, offsetof(Block, d), 2);
    for (int64_t i = 0; i < 8; ++i) {
      for (int64_t k = 0; k < 4; ++k) {
        fn(iq4xs_lanes_qs(i, k) + j * kStep, offsetof(Block, qs) + 16 * i + k * kStep, kStep);
      }
    }
  }
};
static_assert(kIQ4XSLanesScalesH == kIQ4XSLanesScalesL + 4 * kRows && kIQ4XSLanesD == kIQ4XSLanesScalesH + 32);
static_assert(kIQ4XSLanesQs == kIQ4XSLanesD + 32 && kIQ4XSLanesSbBytes == iq4xs_lanes_qs(7, 3) + 64);

template <class Map>
constexpr bool kSameBytes = Map::kSbBytes == kRows * static_cast<int64_t>(sizeof(typename Map::Block));
static_assert(kSameBytes<Q3KMap> && kSameBytes<Q4KMap> && kSameBytes<Q5KMap> && kSameBytes<Q6KMap> &&
              kSameBytes<IQ4XSMap>);

// f(Map{}) for the map of `dtype` (is_kquant_lanes16).
template <class F>
decltype(auto) with_map(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Q3_K:
      return f(Q3KMap{});
    case DType::Q4_K:
      return f(Q4KMap{});
    case DType::Q5_K:
      return f(Q5KMap{});
    case DType::IQ4_XS:
      return f(IQ4XSMap{});
    default:
      return f(Q6KMap{});
  }
}

// A matrix's super-blocks: row j's pieces of each, as pack_pieces and
// unpack_pieces take them.
template <class Map>
auto every_piece(int64_t n_sb) {
  return [n_sb](int64_t j, auto&& fn) {
    constexpr auto kBlock = static_cast<int64_t>(sizeof(typename Map::Block));
    for (int64_t s = 0; s < n_sb; ++s) {
      Map::pieces(j, [&](int64_t tile_at, int64_t row_at, int64_t n) {
        fn(s * Map::kSbBytes + tile_at, s * kBlock + row_at, n);
      });
    }
  };
}

void check_matrix(const Tensor& t, const char* what) {
  TC_CHECK(is_kquant_lanes16(t.dtype) && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK_K == 0, "kquant_lanes16: n_cols is not a multiple of 256");
}

}  // namespace

bool is_kquant_lanes16(DType dtype) {
  return dtype == DType::Q3_K || dtype == DType::Q4_K || dtype == DType::Q5_K || dtype == DType::Q6_K ||
         dtype == DType::IQ4_XS;
}

int64_t kquant_lanes16_tile_bytes(DType dtype, int64_t n_cols) {
  TC_CHECK(is_kquant_lanes16(dtype), "kquant_lanes16_tile_bytes: not a Q3_K, Q4_K, Q5_K, Q6_K or IQ4_XS matrix");
  return with_map(dtype, [&](auto map) { return n_cols / kQK_K * decltype(map)::kSbBytes; });
}

Tensor pack_kquant_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_matrix(rows, "pack_kquant_lanes16: not a Q3_K, Q4_K, Q5_K, Q6_K or IQ4_XS matrix");
  return with_map(rows.dtype, [&](auto map) {
    using Map = decltype(map);
    return lanes16::pack_pieces(rows, dst, kquant_lanes16_tile_bytes(rows.dtype, rows.n_cols()), Map::kLayout, pool,
                                {"pack_kquant_lanes16: needs a row-layout matrix and a destination",
                                 "pack_kquant_lanes16: the destination must be 64-byte aligned"},
                                every_piece<Map>(rows.n_cols() / kQK_K));
  });
}

void unpack_kquant_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_matrix(packed, "unpack_kquant_lanes16_rows: not a Q3_K, Q4_K, Q5_K, Q6_K or IQ4_XS matrix");
  with_map(packed.dtype, [&](auto map) {
    using Map = decltype(map);
    TC_CHECK(packed.layout == Map::kLayout,
             "unpack_kquant_lanes16_rows: not its dtype's Lanes16 matrix");
    lanes16::unpack_pieces(packed, r0, n, out, kquant_lanes16_tile_bytes(packed.dtype, packed.n_cols()),
                           "unpack_kquant_lanes16_rows: rows outside the matrix",
                           every_piece<Map>(packed.n_cols() / kQK_K));
  });
}

}  // namespace tc::kernels
