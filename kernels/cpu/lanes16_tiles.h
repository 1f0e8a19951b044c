// Internal to the lane layouts' packers (q4_lanes16.cpp, q8_lanes16.cpp,
// kquant_lanes16.cpp): what packing into and out of a 16-row lane-tile
// layout does alike for every dtype (the tiles in parallel, the rows after
// the last whole tile kept in the row layout, the checks); each dtype
// supplies how one row's blocks go into a tile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/check.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor.h"

namespace tc::kernels::lanes16 {

constexpr int64_t kRows = 16;

inline int64_t n_tiles(int64_t n_rows) { return n_rows / kRows; }

// What pack() refuses, with messages naming the caller.
struct PackErrors {
  const char* no_matrix;  // not a row-layout matrix with data, or no destination
  const char* unaligned;  // dst not 64-byte aligned
};

// Packs `rows` into dst (tile_bytes per tile, then the tail rows) and
// returns the packed view in `layout`: each tile is zeroed (its padding
// too), then put_row(tile, j, row) writes row j of it from the row's bytes.
template <class PutRow>
Tensor pack(const Tensor& rows, std::byte* dst, int64_t tile_bytes, WeightLayout layout, ThreadPool* pool,
            const PackErrors& errors, PutRow&& put_row) {
  TC_CHECK(rows.layout == WeightLayout::Rows && rows.data != nullptr && dst != nullptr, errors.no_matrix);
  TC_CHECK(reinterpret_cast<uintptr_t>(dst) % 64 == 0, errors.unaligned);
  const int64_t n_rows = rows.n_rows();
  const int64_t plain_row = row_bytes(rows.dtype, rows.n_cols());
  auto pack_tiles = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      std::byte* tile = dst + t * tile_bytes;
      std::memset(tile, 0, static_cast<size_t>(tile_bytes));
      for (int64_t j = 0; j < kRows; ++j) put_row(tile, j, static_cast<const std::byte*>(rows.row(t * kRows + j)));
    }
  };
  const int64_t tiles = n_tiles(n_rows);
  if (pool != nullptr) {
    pool->parallel_for(tiles, 1, pack_tiles);
  } else {
    pack_tiles(0, tiles);
  }
  std::byte* tail = dst + tiles * tile_bytes;
  for (int64_t r = tiles * kRows; r < n_rows; ++r) {
    std::memcpy(tail + (r - tiles * kRows) * plain_row, rows.row(r), static_cast<size_t>(plain_row));
  }
  Tensor packed = rows;
  packed.data = dst;
  packed.row_bytes = plain_row;
  packed.layout = layout;
  packed.memory = MemoryKind::Host;
  return packed;
}

// The plain rows [r0, r0 + n) of `packed` into out: get_row(tile, j, row)
// writes row j of a tile back; the tail rows are copied.
template <class GetRow>
void unpack(const Tensor& packed, int64_t r0, int64_t n, std::byte* out, int64_t tile_bytes, const char* who,
            GetRow&& get_row) {
  TC_CHECK(r0 >= 0 && n >= 0 && r0 + n <= packed.n_rows(), who);
  const int64_t tiled_rows = n_tiles(packed.n_rows()) * kRows;
  const auto* base = static_cast<const std::byte*>(packed.data);
  for (int64_t r = r0; r < r0 + n; ++r) {
    std::byte* dst_row = out + (r - r0) * packed.row_bytes;
    if (r >= tiled_rows) {
      std::memcpy(dst_row, base + n_tiles(packed.n_rows()) * tile_bytes + (r - tiled_rows) * packed.row_bytes,
                  static_cast<size_t>(packed.row_bytes));
    } else {
      get_row(base + r / kRows * tile_bytes, r % kRows, dst_row);
    }
  }
}

// pack() and unpack() for a layout made of byte moves only:
// for_each_piece(j, fn) calls fn(tile_offset, row_offset, n) for every piece
// of row j (n bytes at row_offset of the row lie at tile_offset of its tile).
template <class ForEachPiece>
Tensor pack_pieces(const Tensor& rows, std::byte* dst, int64_t tile_bytes, WeightLayout layout, ThreadPool* pool,
                   const PackErrors& errors, ForEachPiece&& for_each_piece) {
  return pack(rows, dst, tile_bytes, layout, pool, errors, [&](std::byte* tile, int64_t j, const std::byte* row) {
    for_each_piece(j, [&](int64_t at_tile, int64_t at_row, int64_t n) {
      std::memcpy(tile + at_tile, row + at_row, static_cast<size_t>(n));
    });
  });
}

template <class ForEachPiece>
void unpack_pieces(const Tensor& packed, int64_t r0, int64_t n, std::byte* out, int64_t tile_bytes, const char* who,
                   ForEachPiece&& for_each_piece) {
  unpack(packed, r0, n, out, tile_bytes, who, [&](const std::byte* tile, int64_t j, std::byte* row) {
    for_each_piece(j, [&](int64_t at_tile, int64_t at_row, int64_t n_bytes) {
      std::memcpy(row + at_row, tile + at_tile, static_cast<size_t>(n_bytes));
    });
  });
}

}  // namespace tc::kernels::lanes16
