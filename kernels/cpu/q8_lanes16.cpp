// Q8_0 row layout <-> the 16-row lane tiles of q8_lanes16.h (byte moves and
// the self-inverse xor 0x80: packing never changes a weight).
#include "kernels/cpu/q8_lanes16.h"

#include <cstring>

#include "kernels/check.h"
#include "kernels/cpu/lanes16_tiles.h"
#include "kernels/cpu/matmul_kernels.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;                                    // bytes of one row per step
constexpr int64_t kSteps = kQK8_0 / kStepBytes;                      // 8
constexpr int64_t kBlockQsBytes = kQ8Lanes16Rows * kQK8_0;           // 512: qs of a block, 16 rows
constexpr int64_t kBlockDBytes = kQ8Lanes16Rows * sizeof(uint16_t);  // 32: scales of a block, 16 rows
constexpr int64_t kTileBlockBytes = kBlockQsBytes + kBlockDBytes;    // 544
constexpr uint32_t kOffset4 = 0x80808080u;  // w + 128 as an unsigned byte = w xor 0x80, 4 at a time
static_assert(kQ8Lanes16Rows == lanes16::kRows);

// One step's 4 bytes from src to dst, each xor 0x80 (its own inverse).
void copy_step(void* dst, const void* src) {
  uint32_t v;
  std::memcpy(&v, src, sizeof v);
  v ^= kOffset4;
  std::memcpy(dst, &v, sizeof v);
}

// Block b's qs and scales in a tile of nb blocks.
std::byte* block_qs(std::byte* tile, int64_t b) { return tile + b * kBlockQsBytes; }
const std::byte* block_qs(const std::byte* tile, int64_t b) { return tile + b * kBlockQsBytes; }
uint16_t* block_d(std::byte* tile, int64_t nb, int64_t b) {
  return reinterpret_cast<uint16_t*>(tile + nb * kBlockQsBytes + b * kBlockDBytes);
}
const uint16_t* block_d(const std::byte* tile, int64_t nb, int64_t b) {
  return reinterpret_cast<const uint16_t*>(tile + nb * kBlockQsBytes + b * kBlockDBytes);
}

void check_q8_0(const Tensor& t, const char* what) {
  TC_CHECK(t.dtype == DType::Q8_0 && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK8_0 == 0, "q8_lanes16: n_cols is not a multiple of 32");
}

}  // namespace

int64_t q8_lanes16_tile_bytes(int64_t n_cols) { return (n_cols / kQK8_0 * kTileBlockBytes + 63) / 64 * 64; }

bool q8_lanes16_wanted(CpuRepack mode) { return mode == CpuRepack::Auto && detail::chosen_isa().q8_lanes16; }

Tensor pack_q8_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_q8_0(rows, "pack_q8_lanes16: not a Q8_0 matrix");
  const int64_t nb = rows.n_cols() / kQK8_0;
  return lanes16::pack(rows, dst, q8_lanes16_tile_bytes(rows.n_cols()), WeightLayout::Q8_0Lanes16, pool,
                       {"pack_q8_lanes16: needs a row-layout matrix and a destination",
                        "pack_q8_lanes16: the destination must be 64-byte aligned"},
                       [nb](std::byte* tile, int64_t j, const std::byte* row) {
                         const auto* src = reinterpret_cast<const BlockQ8_0*>(row);
                         for (int64_t b = 0; b < nb; ++b) {
                           block_d(tile, nb, b)[j] = src[b].d;
                           for (int64_t s = 0; s < kSteps; ++s) {
                             copy_step(block_qs(tile, b) + (s * kQ8Lanes16Rows + j) * kStepBytes,
                                       src[b].qs + s * kStepBytes);
                           }
                         }
                       });
}

void unpack_q8_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q8_0(packed, "unpack_q8_lanes16_rows: not a Q8_0 matrix");
  TC_CHECK(packed.layout == WeightLayout::Q8_0Lanes16, "unpack_q8_lanes16_rows: not a Q8_0Lanes16 matrix");
  const int64_t nb = packed.n_cols() / kQK8_0;
  lanes16::unpack(packed, r0, n, out, q8_lanes16_tile_bytes(packed.n_cols()),
                  "unpack_q8_lanes16_rows: rows outside the matrix",
                  [nb](const std::byte* tile, int64_t j, std::byte* row) {
                    auto* blocks = reinterpret_cast<BlockQ8_0*>(row);
                    for (int64_t b = 0; b < nb; ++b) {
                      blocks[b].d = block_d(tile, nb, b)[j];
                      for (int64_t s = 0; s < kSteps; ++s) {
                        copy_step(blocks[b].qs + s * kStepBytes,
                                  block_qs(tile, b) + (s * kQ8Lanes16Rows + j) * kStepBytes);
                      }
                    }
                  });
}

}  // namespace tc::kernels
