// Q4_0 and Q4_1 row layouts <-> the 16-row lane tiles of q4_lanes16.h
// (plain byte moves: no arithmetic, so packing never changes a weight).
#include "kernels/cpu/q4_lanes16.h"

#include <cstring>

#include "kernels/check.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;                                            // bytes of one row per step
constexpr int64_t kBlockQsBytes = kQ4Lanes16Rows * (kQK4_0 / 2);             // 256: qs of a block, 16 rows
constexpr int64_t kBlockDBytes = kQ4Lanes16Rows * sizeof(uint16_t);          // 32: scales of a block, 16 rows
// A block of 16 rows: qs and scales, and Q4_1's minimums.
int64_t tile_block_bytes(DType dtype) { return kBlockQsBytes + kBlockDBytes * (dtype == DType::Q4_1 ? 2 : 1); }

int64_t n_tiles(int64_t n_rows) { return n_rows / kQ4Lanes16Rows; }

// Where tile t's block b sits: its qs, its scales and (Q4_1) its minimums.
struct TileBlock {
  std::byte* qs;
  uint16_t* d;
  uint16_t* m;
};
TileBlock tile_block(std::byte* base, int64_t tile_bytes, int64_t nb, int64_t t, int64_t b) {
  std::byte* tile = base + t * tile_bytes;
  auto* d = reinterpret_cast<uint16_t*>(tile + nb * kBlockQsBytes + b * kBlockDBytes);
  return {tile + b * kBlockQsBytes, d, d + nb * kQ4Lanes16Rows};
}

void check_q4(const Tensor& t, const char* what) {
  TC_CHECK((t.dtype == DType::Q4_0 || t.dtype == DType::Q4_1) && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK4_0 == 0, "q4_lanes16: n_cols is not a multiple of 32");
}

// Row j's block b (Q4_0 or Q4_1: the same 16 bytes of nibbles) into the tile...
template <class Block>
void put_block(const TileBlock& out, int64_t j, const Block& src) {
  out.d[j] = src.d;
  if constexpr (requires { src.m; }) out.m[j] = src.m;
  for (int64_t s = 0; s < 4; ++s) {
    std::memcpy(out.qs + (s * kQ4Lanes16Rows + j) * kStepBytes, src.qs + s * kStepBytes, kStepBytes);
  }
}

// ... and back.
template <class Block>
void get_block(const TileBlock& in, int64_t j, Block& dst) {
  dst.d = in.d[j];
  if constexpr (requires { dst.m; }) dst.m = in.m[j];
  for (int64_t s = 0; s < 4; ++s) {
    std::memcpy(dst.qs + s * kStepBytes, in.qs + (s * kQ4Lanes16Rows + j) * kStepBytes, kStepBytes);
  }
}

}  // namespace

int64_t q4_lanes16_tile_bytes(int64_t n_cols, DType dtype) {
  return (n_cols / kQK4_0 * tile_block_bytes(dtype) + 63) / 64 * 64;
}

int64_t q4_lanes16_bytes(int64_t n_cols, int64_t n_rows, DType dtype) {
  return n_tiles(n_rows) * q4_lanes16_tile_bytes(n_cols, dtype) + n_rows % kQ4Lanes16Rows * row_bytes(dtype, n_cols);
}

bool q4_lanes16_wanted(CpuRepack mode) {
  return mode == CpuRepack::Auto && std::strcmp(detail::chosen_isa().name, "portable") != 0;
}

std::optional<CpuRepack> cpu_repack_from_name(std::string_view name) {
  if (name == "off") return CpuRepack::Off;
  if (name == "auto") return CpuRepack::Auto;
  return std::nullopt;
}

Tensor pack_q4_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_q4(rows, "pack_q4_lanes16: not a Q4_0 or Q4_1 matrix");
  TC_CHECK(rows.layout == WeightLayout::Rows && rows.data != nullptr && dst != nullptr,
           "pack_q4_lanes16: needs a row-layout matrix and a destination");
  TC_CHECK(reinterpret_cast<uintptr_t>(dst) % 64 == 0, "pack_q4_lanes16: the destination must be 64-byte aligned");
  const int64_t nb = rows.n_cols() / kQK4_0, n_rows = rows.n_rows();
  const bool q4_1 = rows.dtype == DType::Q4_1;
  const int64_t tile_bytes = q4_lanes16_tile_bytes(rows.n_cols(), rows.dtype);
  const int64_t plain_row = row_bytes(rows.dtype, rows.n_cols());
  auto pack_tiles = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      std::memset(dst + t * tile_bytes, 0, static_cast<size_t>(tile_bytes));  // the padding too
      for (int64_t j = 0; j < kQ4Lanes16Rows; ++j) {
        for (int64_t b = 0; b < nb; ++b) {
          const TileBlock out = tile_block(dst, tile_bytes, nb, t, b);
          if (q4_1) {
            put_block(out, j, rows.row_as<const BlockQ4_1>(t * kQ4Lanes16Rows + j)[b]);
          } else {
            put_block(out, j, rows.row_as<const BlockQ4_0>(t * kQ4Lanes16Rows + j)[b]);
          }
        }
      }
    }
  };
  const int64_t tiles = n_tiles(n_rows);
  if (pool != nullptr) {
    pool->parallel_for(tiles, 1, pack_tiles);
  } else {
    pack_tiles(0, tiles);
  }
  std::byte* tail = dst + tiles * tile_bytes;
  for (int64_t r = tiles * kQ4Lanes16Rows; r < n_rows; ++r) {
    std::memcpy(tail + (r - tiles * kQ4Lanes16Rows) * plain_row, rows.row(r), static_cast<size_t>(plain_row));
  }
  Tensor packed = rows;
  packed.data = dst;
  packed.row_bytes = plain_row;
  packed.layout = q4_1 ? WeightLayout::Q4_1Lanes16 : WeightLayout::Q4_0Lanes16;
  packed.memory = MemoryKind::Host;
  return packed;
}

void unpack_q4_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q4(packed, "unpack_q4_lanes16_rows: not a Q4_0 or Q4_1 matrix");
  const bool q4_1 = packed.dtype == DType::Q4_1;
  TC_CHECK(packed.layout == (q4_1 ? WeightLayout::Q4_1Lanes16 : WeightLayout::Q4_0Lanes16),
           "unpack_q4_lanes16_rows: not a Q4_0Lanes16 or Q4_1Lanes16 matrix");
  TC_CHECK(r0 >= 0 && n >= 0 && r0 + n <= packed.n_rows(), "unpack_q4_lanes16_rows: rows outside the matrix");
  const int64_t nb = packed.n_cols() / kQK4_0;
  const int64_t tile_bytes = q4_lanes16_tile_bytes(packed.n_cols(), packed.dtype);
  const int64_t tiled_rows = n_tiles(packed.n_rows()) * kQ4Lanes16Rows;
  auto* base = static_cast<std::byte*>(packed.data);
  for (int64_t r = r0; r < r0 + n; ++r) {
    std::byte* dst_row = out + (r - r0) * packed.row_bytes;
    if (r >= tiled_rows) {
      std::memcpy(dst_row, base + n_tiles(packed.n_rows()) * tile_bytes + (r - tiled_rows) * packed.row_bytes,
                  static_cast<size_t>(packed.row_bytes));
      continue;
    }
    const int64_t t = r / kQ4Lanes16Rows, j = r % kQ4Lanes16Rows;
    for (int64_t b = 0; b < nb; ++b) {
      const TileBlock in = tile_block(base, tile_bytes, nb, t, b);
      if (q4_1) {
        get_block(in, j, reinterpret_cast<BlockQ4_1*>(dst_row)[b]);
      } else {
        get_block(in, j, reinterpret_cast<BlockQ4_0*>(dst_row)[b]);
      }
    }
  }
}

}  // namespace tc::kernels
