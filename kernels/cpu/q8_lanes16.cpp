// Q8_0 row layout <-> the 16-row lane tiles of q8_lanes16.h (byte moves and
// the self-inverse xor 0x80: packing never changes a weight).
#include "kernels/cpu/q8_lanes16.h"

#include <cstring>

#include "kernels/check.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;                                    // bytes of one row per step
constexpr int64_t kSteps = kQK8_0 / kStepBytes;                      // 8
constexpr int64_t kBlockQsBytes = kQ8Lanes16Rows * kQK8_0;           // 512: qs of a block, 16 rows
constexpr int64_t kBlockDBytes = kQ8Lanes16Rows * sizeof(uint16_t);  // 32: scales of a block, 16 rows
constexpr int64_t kTileBlockBytes = kBlockQsBytes + kBlockDBytes;    // 544
constexpr uint32_t kOffset4 = 0x80808080u;  // w + 128 as an unsigned byte = w xor 0x80, 4 at a time

int64_t n_tiles(int64_t n_rows) { return n_rows / kQ8Lanes16Rows; }

// Where tile t's block b sits: its qs and its scales.
struct TileBlock {
  std::byte* qs;
  uint16_t* d;
};
TileBlock tile_block(std::byte* base, int64_t tile_bytes, int64_t nb, int64_t t, int64_t b) {
  std::byte* tile = base + t * tile_bytes;
  return {tile + b * kBlockQsBytes, reinterpret_cast<uint16_t*>(tile + nb * kBlockQsBytes + b * kBlockDBytes)};
}

// One step's 4 bytes from src to dst, each xor 0x80 (its own inverse).
void copy_step(void* dst, const void* src) {
  uint32_t v;
  std::memcpy(&v, src, sizeof v);
  v ^= kOffset4;
  std::memcpy(dst, &v, sizeof v);
}

void check_q8_0(const Tensor& t, const char* what) {
  TC_CHECK(t.dtype == DType::Q8_0 && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK8_0 == 0, "q8_lanes16: n_cols is not a multiple of 32");
}

}  // namespace

int64_t q8_lanes16_tile_bytes(int64_t n_cols) { return (n_cols / kQK8_0 * kTileBlockBytes + 63) / 64 * 64; }

int64_t q8_lanes16_bytes(int64_t n_cols, int64_t n_rows) {
  return n_tiles(n_rows) * q8_lanes16_tile_bytes(n_cols) + n_rows % kQ8Lanes16Rows * row_bytes(DType::Q8_0, n_cols);
}

bool q8_lanes16_wanted(CpuRepack mode) { return mode == CpuRepack::Auto && detail::chosen_isa().q8_lanes16; }

Tensor pack_q8_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_q8_0(rows, "pack_q8_lanes16: not a Q8_0 matrix");
  TC_CHECK(rows.layout == WeightLayout::Rows && rows.data != nullptr && dst != nullptr,
           "pack_q8_lanes16: needs a row-layout matrix and a destination");
  TC_CHECK(reinterpret_cast<uintptr_t>(dst) % 64 == 0, "pack_q8_lanes16: the destination must be 64-byte aligned");
  const int64_t nb = rows.n_cols() / kQK8_0, n_rows = rows.n_rows();
  const int64_t tile_bytes = q8_lanes16_tile_bytes(rows.n_cols());
  const int64_t plain_row = row_bytes(DType::Q8_0, rows.n_cols());
  auto pack_tiles = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      std::memset(dst + t * tile_bytes, 0, static_cast<size_t>(tile_bytes));  // the padding too
      for (int64_t j = 0; j < kQ8Lanes16Rows; ++j) {
        const auto* src = rows.row_as<const BlockQ8_0>(t * kQ8Lanes16Rows + j);
        for (int64_t b = 0; b < nb; ++b) {
          const TileBlock out = tile_block(dst, tile_bytes, nb, t, b);
          out.d[j] = src[b].d;
          for (int64_t s = 0; s < kSteps; ++s) {
            copy_step(out.qs + (s * kQ8Lanes16Rows + j) * kStepBytes, src[b].qs + s * kStepBytes);
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
  for (int64_t r = tiles * kQ8Lanes16Rows; r < n_rows; ++r) {
    std::memcpy(tail + (r - tiles * kQ8Lanes16Rows) * plain_row, rows.row(r), static_cast<size_t>(plain_row));
  }
  Tensor packed = rows;
  packed.data = dst;
  packed.row_bytes = plain_row;
  packed.layout = WeightLayout::Q8_0Lanes16;
  packed.memory = MemoryKind::Host;
  return packed;
}

void unpack_q8_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q8_0(packed, "unpack_q8_lanes16_rows: not a Q8_0 matrix");
  TC_CHECK(packed.layout == WeightLayout::Q8_0Lanes16, "unpack_q8_lanes16_rows: not a Q8_0Lanes16 matrix");
  TC_CHECK(r0 >= 0 && n >= 0 && r0 + n <= packed.n_rows(), "unpack_q8_lanes16_rows: rows outside the matrix");
  const int64_t nb = packed.n_cols() / kQK8_0;
  const int64_t tile_bytes = q8_lanes16_tile_bytes(packed.n_cols());
  const int64_t tiled_rows = n_tiles(packed.n_rows()) * kQ8Lanes16Rows;
  auto* base = static_cast<std::byte*>(packed.data);
  for (int64_t r = r0; r < r0 + n; ++r) {
    std::byte* dst_row = out + (r - r0) * packed.row_bytes;
    if (r >= tiled_rows) {
      std::memcpy(dst_row, base + n_tiles(packed.n_rows()) * tile_bytes + (r - tiled_rows) * packed.row_bytes,
                  static_cast<size_t>(packed.row_bytes));
      continue;
    }
    auto* blocks = reinterpret_cast<BlockQ8_0*>(dst_row);
    const int64_t t = r / kQ8Lanes16Rows, j = r % kQ8Lanes16Rows;
    for (int64_t b = 0; b < nb; ++b) {
      const TileBlock in = tile_block(base, tile_bytes, nb, t, b);
      blocks[b].d = in.d[j];
      for (int64_t s = 0; s < kSteps; ++s) {
        copy_step(blocks[b].qs + s * kStepBytes, in.qs + (s * kQ8Lanes16Rows + j) * kStepBytes);
      }
    }
  }
}

}  // namespace tc::kernels
