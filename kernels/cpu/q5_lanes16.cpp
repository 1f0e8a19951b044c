// Q5_0 and Q5_1 row layouts <-> the 16-row lane tiles of q5_lanes16.h (byte
// moves, and a fixed permutation of each block's 32 fifth bits: packing
// never changes a weight).
#include "kernels/cpu/q5_lanes16.h"

#include <cstring>

#include "kernels/check.h"
#include "kernels/cpu/lanes16_tiles.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;                                    // bytes of one row per step
constexpr int64_t kBlockQsBytes = kQ5Lanes16Rows * (kQK5_0 / 2);     // 256: qs of a block, 16 rows
constexpr int64_t kBlockQhBytes = kQ5Lanes16Rows * 4;                // 64: qh of a block, 16 rows
constexpr int64_t kBlockQBytes = kBlockQsBytes + kBlockQhBytes;      // 320
constexpr int64_t kBlockF16Bytes = kQ5Lanes16Rows * sizeof(uint16_t);  // 32: scales (or minimums) of a block
static_assert(kQ5Lanes16Rows == lanes16::kRows);

void check_q5(const Tensor& t, const char* what) {
  TC_CHECK(is_q5_lanes16(t.dtype) && t.ne[2] == 1 && t.ne[3] == 1, what);
  TC_CHECK(t.n_cols() % kQK5_0 == 0, "q5_lanes16: n_cols is not a multiple of 32");
}

WeightLayout layout_of(DType dtype) {
  return dtype == DType::Q5_1 ? WeightLayout::Q5_1Lanes16 : WeightLayout::Q5_0Lanes16;
}

// Where row j's pieces of block b sit in a tile of nb blocks.
int64_t qs_at(int64_t b, int64_t s, int64_t j) { return b * kBlockQBytes + (s * kQ5Lanes16Rows + j) * kStepBytes; }
int64_t qh_at(int64_t b, int64_t j) { return b * kBlockQBytes + kBlockQsBytes + j * 4; }
int64_t d_at(int64_t nb, int64_t b, int64_t j) { return nb * kBlockQBytes + b * kBlockF16Bytes + 2 * j; }
int64_t m_at(int64_t nb, int64_t b, int64_t j) { return d_at(nb, b, j) + nb * kBlockF16Bytes; }

// Row j's nb blocks into a tile...
template <class Block>
void put_row(std::byte* tile, int64_t nb, int64_t j, const Block* src) {
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(tile + d_at(nb, b, j), &src[b].d, 2);
    if constexpr (requires { src[b].m; }) std::memcpy(tile + m_at(nb, b, j), &src[b].m, 2);
    for (int64_t s = 0; s < 4; ++s) std::memcpy(tile + qs_at(b, s, j), src[b].qs + s * kStepBytes, kStepBytes);
    uint32_t qh;
    std::memcpy(&qh, src[b].qh, 4);
    const uint32_t spread = q5_lanes16_spread_qh(qh);
    std::memcpy(tile + qh_at(b, j), &spread, 4);
  }
}

// ... and back.
template <class Block>
void get_row(const std::byte* tile, int64_t nb, int64_t j, Block* dst) {
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(&dst[b].d, tile + d_at(nb, b, j), 2);
    if constexpr (requires { dst[b].m; }) std::memcpy(&dst[b].m, tile + m_at(nb, b, j), 2);
    for (int64_t s = 0; s < 4; ++s) std::memcpy(dst[b].qs + s * kStepBytes, tile + qs_at(b, s, j), kStepBytes);
    uint32_t spread;
    std::memcpy(&spread, tile + qh_at(b, j), 4);
    const uint32_t qh = q5_lanes16_gather_qh(spread);
    std::memcpy(dst[b].qh, &qh, 4);
  }
}

}  // namespace

bool is_q5_lanes16(DType dtype) { return dtype == DType::Q5_0 || dtype == DType::Q5_1; }

int64_t q5_lanes16_tile_bytes(int64_t n_cols, DType dtype) {
  const int64_t per_block = kBlockQBytes + kBlockF16Bytes * (dtype == DType::Q5_1 ? 2 : 1);
  return (n_cols / kQK5_0 * per_block + 63) / 64 * 64;
}

uint32_t q5_lanes16_spread_qh(uint32_t qh) {
  uint32_t out = 0;
  for (int s = 0; s < 8; ++s) {
    for (int k = 0; k < 4; ++k) out |= ((qh >> (4 * s + k)) & 1u) << (8 * k + s);
  }
  return out;
}

uint32_t q5_lanes16_gather_qh(uint32_t spread) {
  uint32_t qh = 0;
  for (int s = 0; s < 8; ++s) {
    for (int k = 0; k < 4; ++k) qh |= ((spread >> (8 * k + s)) & 1u) << (4 * s + k);
  }
  return qh;
}

Tensor pack_q5_lanes16(const Tensor& rows, std::byte* dst, ThreadPool* pool) {
  check_q5(rows, "pack_q5_lanes16: not a Q5_0 or Q5_1 matrix");
  const int64_t nb = rows.n_cols() / kQK5_0;
  const bool q5_1 = rows.dtype == DType::Q5_1;
  return lanes16::pack(rows, dst, q5_lanes16_tile_bytes(rows.n_cols(), rows.dtype), layout_of(rows.dtype), pool,
                       {"pack_q5_lanes16: needs a row-layout matrix and a destination",
                        "pack_q5_lanes16: the destination must be 64-byte aligned"},
                       [nb, q5_1](std::byte* tile, int64_t j, const std::byte* row) {
                         if (q5_1) {
                           put_row(tile, nb, j, reinterpret_cast<const BlockQ5_1*>(row));
                         } else {
                           put_row(tile, nb, j, reinterpret_cast<const BlockQ5_0*>(row));
                         }
                       });
}

void unpack_q5_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q5(packed, "unpack_q5_lanes16_rows: not a Q5_0 or Q5_1 matrix");
  TC_CHECK(packed.layout == layout_of(packed.dtype), "unpack_q5_lanes16_rows: not a Q5_0Lanes16 or Q5_1Lanes16 matrix");
  const int64_t nb = packed.n_cols() / kQK5_0;
  const bool q5_1 = packed.dtype == DType::Q5_1;
  lanes16::unpack(packed, r0, n, out, q5_lanes16_tile_bytes(packed.n_cols(), packed.dtype),
                  "unpack_q5_lanes16_rows: rows outside the matrix",
                  [nb, q5_1](const std::byte* tile, int64_t j, std::byte* row) {
                    if (q5_1) {
                      get_row(tile, nb, j, reinterpret_cast<BlockQ5_1*>(row));
                    } else {
                      get_row(tile, nb, j, reinterpret_cast<BlockQ5_0*>(row));
                    }
                  });
}

}  // namespace tc::kernels
