// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): Q6_K
// matrices repacked at load (Q6_KLanes16, q6k_lanes16.h), AVX2 code that
// every x86 variant runs (the AVX-512 ones too: see
// matmul_x86_q4k_lanes_avx2.h). A step is one 64-byte line of ql and one of qh: bytes 4k..4k+3 of
// all 16 rows, row j in 32-bit lane j. Its ql line's low nibbles with qh's
// matching 2 bits are 4 weights (0..63) of one group, its high nibbles with
// 2 more bits 4 of the group two on; each meets the token's 4 activations
// (one broadcast, one vpmaddubsw per 8 rows). A sub-block's int16 pair sums
// stay in the row's lane for 2 steps (2 x 2 x 63 x 127 < 32767), and one
// vpmaddwd by the rows' scales (sc, sc) adds sc * sum q x to the int32
// total; the -32 of the levels comes off at the end as 32 sum sc sum16(x),
// 8 vpmaddwd per super-block of the rows' (sc_2i, sc_2i+1) by the token's
// 16-element sums. The rows' kernels (OpsQ6_K) unpack 8 vectors of each
// super-block of each row and sum each row's lanes per super-block; here a
// tile's lanes hold every row's totals at once.
//
// Same bits as the rows: each super-block's total T = sum sc (q - 32) x is
// an exact integer, and the float steps are OpsQ6_K's super-block lane
// order (matmul_x86_superblock.h) done lane by lane over the rows: per chunk
// of 4 super-blocks, v_s = fma(float(T_s), d_s * dx_s, +0) (+0 past the
// row's end), the chunk's sum (v0 + v1) + (v2 + v3) (its lanes 4-7, the
// mins Q6_K has not, are +0 and leave it unchanged), stored on a row's
// first chunk and added after.
//
// GEMV order (decode, small batches): tile after tile, chunk after chunk.
// One token takes both 8-row halves per pass (the lines loaded once), each
// super-block's constants unpacked as it comes, so that the stream is read
// in address order; a few tokens take each half in passes of up to
// kQ6KTokens, unpacking the weights as they go; more unpack each half's
// chunk once into L1 for all their passes. GEMM order: chunks outer, then
// blocks of kGemmBlockTokens tokens, then tiles.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_k16_lane_passes.h"
#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/q6k_lanes16.h"

namespace tc::kernels::detail {
namespace {

// Tokens per pass over an 8-row half. One Zen 3 core, weights in L2 (128 x
// 2048), G MAC/s at 4 / 64 / 512 tokens: 47 / 63 / 62 in passes of 3,
// 59 / 65 / 65 in passes of 4 (unpacking as they go).
constexpr int kQ6KTokens = 4;

// Up to this many tokens a pass unpacks the weights from the tile as it
// goes; beyond, each half's chunk is unpacked once into L1 for them all (the
// same core: 5-8 tokens 1.1-1.2x, 64 and 512 1.3x against unpacking per
// pass; 3-4 tokens are one pass per half either way).
constexpr int64_t kQ6KInTileTokens = kQ6KTokens;

// How far ahead (bytes) the GEMV sweep prefetches its stream, into L2. From
// DRAM, one Zen 3 core, one token (5632 x 2048): 18 GB/s at 3 or 6
// super-blocks ahead, 15 without (the read probe: 20).
constexpr int64_t kQ6KLanesAhead = 3 * kQ6KLanesSbBytes;

// One super-block's per-row constants for one 8-row half of a tile.
struct Q6KLaneConsts {
  __m256i sc[16];   // sub-block i: row j's scale as the int16 pair (sc, sc) in lane j
  __m256i pair[8];  // row j's (sc_2i, sc_2i+1) as int16 in lane j
  __m256 d;         // row j's d
};

// Super-block sb (its first byte) of a tile: both halves' constants.
TC_SIMD_INLINE void q6k_lane_consts(const std::byte* sb, Q6KLaneConsts (&c)[2]) {
  __m128i s[16];  // scale i of the 16 rows
  for (int i = 0; i < 16; ++i) s[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQ6KLanesScales) + i);
  for (int i = 0; i < 16; ++i) {
    c[0].sc[i] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s[i], s[i]));
    c[1].sc[i] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s[i], s[i]));
  }
  for (int i = 0; i < 8; ++i) {
    c[0].pair[i] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s[2 * i], s[2 * i + 1]));
    c[1].pair[i] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s[2 * i], s[2 * i + 1]));
  }
  for (int h = 0; h < 2; ++h) {
    c[h].d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQ6KLanesD) + h));
  }
}

// The 6-bit weights of one step of a tile's super-block for one 8-row half
// h: lo = group g (elements 128 n + 32 g + 4 k ..), hi = group g + 2, each
// row's 4 in its lane.
TC_SIMD_INLINE void q6k_lane_unpack(const std::byte* sb, int n, int g, int k, int h, __m256i& lo, __m256i& hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
  const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + q6k_lanes_ql(n, g, k) + 32 * h));
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + q6k_lanes_qh(n, k) + 32 * h));
  const __m256i q_lo = g == 0 ? _mm256_slli_epi16(q, 4) : _mm256_slli_epi16(q, 2);
  const __m256i q_hi = g == 0 ? q : _mm256_srli_epi16(q, 2);
  lo = _mm256_or_si256(_mm256_and_si256(l, m4), _mm256_and_si256(q_lo, m30));
  hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), m4), _mm256_and_si256(q_hi, m30));
}

// Where a pass's weights come from: unpacked from the tile as it goes
// (InTile: H halves from h0, the stream prefetched ahead if pf is set), or
// read from a half's chunk unpacked once (Unpacked, one half).
struct Q6KInTile {
  const std::byte* sb;
  int h0;
  const char* pf;  // the super-block to prefetch meanwhile, a line per step, or nullptr
  TC_SIMD_INLINE void step(int n, int g, int k, int h, __m256i& lo, __m256i& hi) const {
    if (pf != nullptr && h == 0) {
      _mm_prefetch(pf + q6k_lanes_ql(n, g, k), _MM_HINT_T1);
      if (g == 0) _mm_prefetch(pf + q6k_lanes_qh(n, k), _MM_HINT_T1);
      if (n == 0 && g == 1 && k < 5) _mm_prefetch(pf + kQ6KLanesScales + 64 * k, _MM_HINT_T1);
    }
    q6k_lane_unpack(sb, n, g, k, h0 + h, lo, hi);
  }
};

// One half of a super-block unpacked: step (n, g, k)'s lo and hi vectors.
struct Q6KUnpackedSb {
  __m256i v[2][2][8][2];
};

struct Q6KUnpacked {
  const Q6KUnpackedSb* sb;
  TC_SIMD_INLINE void step(int n, int g, int k, int, __m256i& lo, __m256i& hi) const {
    lo = _mm256_load_si256(&sb->v[n][g][k][0]);
    hi = _mm256_load_si256(&sb->v[n][g][k][1]);
  }
};

// The integer totals T = sum sc (q - 32) x of one super-block for H halves
// (c[0..H), the weights from `w`) and T tokens. xq[t]: the token's 256
// activations of this super-block, x16[t] its 16 sums of 16.
template <int H, int T, class Src>
TC_SIMD_INLINE void q6k_lane_totals(const Src& w, const Q6KLaneConsts* c, const int8_t* const (&xq)[T],
                                    const int16_t* const (&x16)[T], __m256i (&total)[T][H]) {
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) total[t][h] = _mm256_setzero_si256();
  }
#pragma GCC unroll 1
  for (int n = 0; n < 2; ++n) {
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {  // groups g (low nibbles) and g + 2 (high)
#pragma GCC unroll 1
      for (int kk = 0; kk < 4; ++kk) {  // steps 2kk, 2kk + 1: one sub-block's half
        __m256i lo_sum[T][H], hi_sum[T][H];
#pragma GCC unroll 2
        for (int k2 = 0; k2 < 2; ++k2) {
          const int k = 2 * kk + k2;
          __m256i lo[H], hi[H];
          for (int h = 0; h < H; ++h) w.step(n, g, k, h, lo[h], hi[h]);
          for (int t = 0; t < T; ++t) {
            const __m256i xa = lane_x4(xq[t] + 128 * n + 32 * g + 4 * k);
            const __m256i xb = lane_x4(xq[t] + 128 * n + 64 + 32 * g + 4 * k);
            for (int h = 0; h < H; ++h) {
              const __m256i pa = _mm256_maddubs_epi16(lo[h], xa), pb = _mm256_maddubs_epi16(hi[h], xb);
              lo_sum[t][h] = k2 == 0 ? pa : _mm256_add_epi16(lo_sum[t][h], pa);
              hi_sum[t][h] = k2 == 0 ? pb : _mm256_add_epi16(hi_sum[t][h], pb);
              asm("" : "+x"(lo_sum[t][h]), "+x"(hi_sum[t][h]));
            }
          }
        }
        const int sub = 8 * n + 2 * g + kk / 2;  // the low nibbles' sub-block; the high ones' is sub + 4
        for (int t = 0; t < T; ++t) {
          for (int h = 0; h < H; ++h) {
            const __m256i lo = _mm256_madd_epi16(lo_sum[t][h], c[h].sc[sub]);
            const __m256i hi = _mm256_madd_epi16(hi_sum[t][h], c[h].sc[sub + 4]);
            total[t][h] = _mm256_add_epi32(total[t][h], _mm256_add_epi32(lo, hi));
          }
        }
      }
    }
  }
  k16_lane_offset<5, H, T>(c, x16, total);
}

// The kernel as the drivers of matmul_x86_k16_lane_passes.h take it.
struct Q6KLane {
  using Consts = Q6KLaneConsts;
  static constexpr int kTokens = kQ6KTokens;
  template <int H, int T, class Src>
  TC_SIMD_INLINE static void totals(const Src& w, const Consts* c, const int8_t* const (&xq)[T],
                                    const int16_t* const (&x16)[T], __m256i (&total)[T][H]) {
    q6k_lane_totals<H, T>(w, c, xq, x16, total);
  }
};

// Half h of a tile's chunk (count super-blocks from sb0) unpacked into u,
// the stream prefetched ahead if `prefetch`.
TC_SIMD_INLINE void q6k_lane_unpack_half(const std::byte* tile, int64_t sb0, int64_t count, int h,
                                         Q6KUnpackedSb (&u)[4], bool prefetch) {
  for (int64_t s = 0; s < count; ++s) {
    const std::byte* sb = tile + (sb0 + s) * kQ6KLanesSbBytes;
    const Q6KInTile w{sb, h, prefetch ? reinterpret_cast<const char*>(sb) + kQ6KLanesAhead : nullptr};
    for (int n = 0; n < 2; ++n) {
      for (int g = 0; g < 2; ++g) {
        for (int k = 0; k < 8; ++k) w.step(n, g, k, 0, u[s].v[n][g][k][0], u[s].v[n][g][k][1]);
      }
    }
  }
}

// Tile rt's chunk from super-block sb0 for tokens [t0, t1): one token over
// both halves; a few over each half, unpacking as they go; more over each
// half unpacked once.
TC_SIMD_INLINE void q6k_lane_chunk(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t n_sb, int64_t t0, int64_t t1,
                                   bool prefetch) {
  const std::byte* tile = a.w + rt / kQ6KLanes16Rows * a.lane_tile_bytes;
  const int64_t count = min64(4, n_sb - sb0);
  auto in_tile = [&](int h0, bool pf) __attribute__((always_inline)) {
    return [=](int s) __attribute__((always_inline)) {
      const std::byte* sb = tile + (sb0 + s) * kQ6KLanesSbBytes;
      return Q6KInTile{sb, h0, pf ? reinterpret_cast<const char*>(sb) + kQ6KLanesAhead : nullptr};
    };
  };
  if (t1 - t0 == 1) {  // each super-block's constants as it comes: the stream stays in order
    Q6KLaneConsts c[2];
    auto consts_of = [&](int s) __attribute__((always_inline)) -> const Q6KLaneConsts(&)[2] {
      q6k_lane_consts(tile + (sb0 + s) * kQ6KLanesSbBytes, c);
      return c;
    };
    return k16_lane_pass<Q6KLane, 2, 1>(a, rt, sb0, count, consts_of, 0, t0, in_tile(0, prefetch));
  }
  Q6KLaneConsts c[4][2];
  for (int64_t s = 0; s < count; ++s) q6k_lane_consts(tile + (sb0 + s) * kQ6KLanesSbBytes, c[s]);
  if (t1 - t0 <= kQ6KInTileTokens) {
    for (int h = 0; h < 2; ++h) {
      k16_lane_half<Q6KLane>(a, rt, sb0, count, c, h, t0, t1, [&](bool first) __attribute__((always_inline)) {
        return in_tile(h, prefetch && h == 0 && first);
      });
    }
    return;
  }
  alignas(32) Q6KUnpackedSb u[4];
  for (int h = 0; h < 2; ++h) {
    q6k_lane_unpack_half(tile, sb0, count, h, u, prefetch && h == 0);
    k16_lane_half<Q6KLane>(a, rt, sb0, count, c, h, t0, t1, [&](bool) __attribute__((always_inline)) {
      return [&](int s) __attribute__((always_inline)) { return Q6KUnpacked{&u[s]}; };
    });
  }
}

// Outputs [r0, r1) of a Q6_KLanes16 matrix (whole 16-row tiles, below
// a.lane_rows), every token. Each row gets its chunks in order either way.
void run_lanes16_q6_K(const MatmulArgs& a, int64_t r0, int64_t r1) {
  k16_lane_sweep(a, r0, r1, [&a](int64_t rt, int64_t sb0, int64_t n_sb, int64_t t0, int64_t t1, bool prefetch)
                                __attribute__((always_inline)) { q6k_lane_chunk(a, rt, sb0, n_sb, t0, t1, prefetch); });
}

}  // namespace
}  // namespace tc::kernels::detail
