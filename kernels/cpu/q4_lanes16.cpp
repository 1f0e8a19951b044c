// Q4_0, Q4_1 and IQ4_NL row layouts <-> the 16-row lane tiles of
// q4_lanes16.h (plain byte moves: no arithmetic, so packing never changes a
// weight).
#include "kernels/cpu/q4_lanes16.h"

#include <cstring>
#include <type_traits>

#include "kernels/check.h"
#include "kernels/cpu/lanes16_tiles.h"
#include "kernels/cpu/matmul_kernels.h"

namespace tc::kernels {
namespace {

constexpr int64_t kStepBytes = 4;                                            // bytes of one row per step
constexpr int64_t kBlockQsBytes = kQ4Lanes16Rows * (kQK4_0 / 2);             // 256: qs of a block, 16 rows
constexpr int64_t kBlockDBytes = kQ4Lanes16Rows * sizeof(uint16_t);          // 32: scales of a block, 16 rows
static_assert(kQ4Lanes16Rows == lanes16::kRows);

// A block of 16 rows: qs and scales, and Q4_1's minimums.
int64_t tile_block_bytes(DType dtype) { return kBlockQsBytes + kBlockDBytes * (dtype == DType::Q4_1 ? 2 : 1); }

// Where block b of a tile of nb blocks sits: its qs, its scales and (Q4_1)
// its minimums. Byte: std::byte or const std::byte.
template <class Byte>
struct TileBlock {
  using U16 = std::conditional_t<std::is_const_v<Byte>, const uint16_t, uint16_t>;
  Byte* qs;
  U16* d;
  U16* m;
  TileBlock(Byte* tile, int64_t nb, int64_t b)
      : qs(tile + b * kBlockQsBytes),
        d(reinterpret_cast<U16*>(tile + nb * kBlockQsBytes + b * kBlockDBytes)),
        m(d + nb * kQ4Lanes16Rows) {}
};

void check_q4(const Tensor& t, const char* what) {
  TC_CHECK((t.dtype == DType::Q4_0 || t.dtype == DType::Q4_1 || t.dtype == DType::IQ4_NL) && t.ne[2] == 1 &&
               t.ne[3] == 1,
           what);
  TC_CHECK(t.n_cols() % kQK4_0 == 0, "q4_lanes16: n_cols is not a multiple of 32");
}

// Row j's nb blocks (Q4_0, Q4_1 or IQ4_NL: the same 16 bytes of nibbles)
// into a tile...
template <class Block>
void put_row(std::byte* tile, int64_t nb, int64_t j, const Block* src) {
  for (int64_t b = 0; b < nb; ++b) {
    const TileBlock<std::byte> out(tile, nb, b);
    out.d[j] = src[b].d;
    if constexpr (requires { src[b].m; }) out.m[j] = src[b].m;
    for (int64_t s = 0; s < 4; ++s) {
      std::memcpy(out.qs + (s * kQ4Lanes16Rows + j) * kStepBytes, src[b].qs + s * kStepBytes, kStepBytes);
    }
  }
}

// ... and back.
template <class Block>
void get_row(const std::byte* tile, int64_t nb, int64_t j, Block* dst) {
  for (int64_t b = 0; b < nb; ++b) {
    const TileBlock<const std::byte> in(tile, nb, b);
    dst[b].d = in.d[j];
    if constexpr (requires { dst[b].m; }) dst[b].m = in.m[j];
    for (int64_t s = 0; s < 4; ++s) {
      std::memcpy(dst[b].qs + s * kStepBytes, in.qs + (s * kQ4Lanes16Rows + j) * kStepBytes, kStepBytes);
    }
  }
}

// Each dtype's own layout (the same bytes for Q4_0 and IQ4_NL, told apart so
// that no kernel reads one as the other).
WeightLayout q4_lanes16_layout(DType dtype) {
  if (dtype == DType::Q4_1) return WeightLayout::Q4_1Lanes16;
  return dtype == DType::IQ4_NL ? WeightLayout::IQ4_NLLanes16 : WeightLayout::Q4_0Lanes16;
}

}  // namespace

int64_t q4_lanes16_tile_bytes(int64_t n_cols, DType dtype) {
  return (n_cols / kQK4_0 * tile_block_bytes(dtype) + 63) / 64 * 64;
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
  check_q4(rows, "pack_q4_lanes16: not a Q4_0, Q4_1 or IQ4_NL matrix");
  const int64_t nb = rows.n_cols() / kQK4_0;
  const DType dtype = rows.dtype;
  return lanes16::pack(rows, dst, q4_lanes16_tile_bytes(rows.n_cols(), dtype), q4_lanes16_layout(dtype), pool,
                       {"pack_q4_lanes16: needs a row-layout matrix and a destination",
                        "pack_q4_lanes16: the destination must be 64-byte aligned"},
                       [nb, dtype](std::byte* tile, int64_t j, const std::byte* row) {
                         if (dtype == DType::Q4_1) {
                           put_row(tile, nb, j, reinterpret_cast<const BlockQ4_1*>(row));
                         } else if (dtype == DType::IQ4_NL) {
                           put_row(tile, nb, j, reinterpret_cast<const BlockIQ4_NL*>(row));
                         } else {
                           put_row(tile, nb, j, reinterpret_cast<const BlockQ4_0*>(row));
                         }
                       });
}

void unpack_q4_lanes16_rows(const Tensor& packed, int64_t r0, int64_t n, std::byte* out) {
  check_q4(packed, "unpack_q4_lanes16_rows: not a Q4_0, Q4_1 or IQ4_NL matrix");
  const DType dtype = packed.dtype;
  TC_CHECK(packed.layout == q4_lanes16_layout(dtype),
           "unpack_q4_lanes16_rows: not a Q4_0Lanes16, Q4_1Lanes16 or IQ4_NLLanes16 matrix");
  const int64_t nb = packed.n_cols() / kQK4_0;
  lanes16::unpack(packed, r0, n, out, q4_lanes16_tile_bytes(packed.n_cols(), dtype),
                  "unpack_q4_lanes16_rows: rows outside the matrix",
                  [nb, dtype](const std::byte* tile, int64_t j, std::byte* row) {
                    if (dtype == DType::Q4_1) {
                      get_row(tile, nb, j, reinterpret_cast<BlockQ4_1*>(row));
                    } else if (dtype == DType::IQ4_NL) {
                      get_row(tile, nb, j, reinterpret_cast<BlockIQ4_NL*>(row));
                    } else {
                      get_row(tile, nb, j, reinterpret_cast<BlockQ4_0*>(row));
                    }
                  });
}

}  // namespace tc::kernels
