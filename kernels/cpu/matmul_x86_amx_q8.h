// Internal to the amx matmul variant (matmul_amx.cpp): Q8_0 weights on AMX
// tiles (matmul_x86_amx.h has the scheme), from rows (AmxQ8_0) or from
// Q8_0Lanes16 tiles (AmxQ8_0Lanes16). pack_q8_lanes already lays a block
// out as a B tile wants it: step s (elements 4s..4s+3) of row j at bytes
// 4j..4j+3 of row s, and so does a Q8_0Lanes16 tile but for the unsigned
// bytes. A is 16 tokens' 32 bytes of the block, in place.
#pragma once

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__) && defined(TC_MATMUL_VNNI)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_amx.h"
#include "kernels/cpu/matmul_x86_q8_lanes.h"

namespace tc::kernels::detail {
namespace {

struct AmxQ8_0 {
  using Pack = PackQ8Lanes;
  using Sums = BlockSums;
  static constexpr int64_t kBlockElems = 32;
  static constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(BlockQ8_0));

  // C tiles 0-1, A tiles 2-3 (16 tokens x 32 bytes), B tiles 4-5 (8 steps
  // x 16 rows x 4 bytes): two blocks in flight.
  static const AmxTileConfig& config() {
    static const AmxTileConfig c =
        AmxTileConfig().tile(0, 16, 64).tile(1, 16, 64).tile(2, 16, 32).tile(3, 16, 32).tile(4, 8, 64).tile(5, 8, 64);
    return c;
  }
  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    const std::byte* w[kAmxRows];
    for (int i = 0; i < kAmxRows; ++i) w[i] = weight_row(a, rt + i);
    pack_q8_lanes(p, w, c0, nb);
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    const int64_t nb = min64(kChunkBlocks32, a.n_in / 32 - c0);
    prefetch_rows(a, rt, kAmxRows, c0 * kBlockBytes, nb * kBlockBytes);
  }
  static void pair_sums(const Pack& p, const std::byte* xq, int64_t stride, int64_t b0, int64_t i, int64_t nb,
                        BlockSums& out) {
    constexpr int64_t kOut = BlockSums::kTokenStride;
    _tile_loadd(2, xq + 32 * (b0 + i), stride);
    _tile_loadd(4, p.q[i], 4 * kAmxRows);
    _tile_zero(0);
    _tile_dpbssd(0, 2, 4);
    if (i + 1 < nb) {
      _tile_loadd(3, xq + 32 * (b0 + i + 1), stride);
      _tile_loadd(5, p.q[i + 1], 4 * kAmxRows);
      _tile_zero(1);
      _tile_dpbssd(1, 3, 5);
    }
    _tile_stored(0, out.s[0][i], kOut);
    if (i + 1 < nb) _tile_stored(1, out.s[0][i + 1], kOut);
  }
  TC_SIMD_INLINE static void finish(const Pack& p, const BlockSums& sums, int t, const XRow& x, int64_t b0,
                                    int64_t nb, float* out, bool first) {
    amx_finish_blocks(p.dw, nullptr, sums, t, x, b0, nb, out, first);
  }
};

// A Q8_0Lanes16 tile's chunk (q8_lanes16.h): the pack only turns its bytes
// w + 128 back into signed ones (xor 0x80) and widens the scales (and
// forms the bias, which the tiles do not use).
struct AmxQ8_0Lanes16 : AmxQ8_0 {
  static void pack(Pack& p, const MatmulArgs& a, int64_t rt, int64_t c0, int64_t nb) {
    pack_q8_lanes(p, lanes16_q8_chunk(a, rt, c0), nb);
  }
  static void prefetch(const MatmulArgs& a, int64_t rt, int64_t c0) {
    const int64_t nb = min64(kChunkBlocks32, a.n_in / 32 - c0);
    const Lanes16Q8Chunk c = lanes16_q8_chunk(a, rt, c0);
    for (int64_t at = 0; at < 512 * nb; at += 64) _mm_prefetch(reinterpret_cast<const char*>(c.qs) + at, _MM_HINT_T0);
    for (int64_t at = 0; at < 32 * nb; at += 64) _mm_prefetch(reinterpret_cast<const char*>(c.d) + at, _MM_HINT_T0);
  }
};

}  // namespace
}  // namespace tc::kernels::detail

#endif
