// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): Q3_K
// matrices repacked at load (Q3_KLanes16, q3k_lanes16.h), AVX2 code that
// every x86 variant runs (their rows kernel for Q3_K is the same ymm code,
// matmul_x86_kquants.h, so the tiles serve AVX-512 machines too). A step
// is one 64-byte line of qs and one of hmask: bytes 4k..4k+3 of all 16
// rows, row j in 32-bit lane j. The qs line's 2-bit fields c
// with hmask's bits 4n + c are 4 weights (0..7) of each of the 4 groups of
// 32 of half n; each meets the token's 4 activations (one broadcast, one
// vpmaddubsw per 8 rows). A sub-block's int16 pair sums stay in the row's
// lane for its 4 steps (4 x 2 x 7 x 127 < 32767), and one vpmaddwd by the
// rows' scales (sc, sc) adds sc * sum q x to the int32 total; the -4 of the
// levels comes off at the end as 4 sum sc sum16(x), 8 vpmaddwd per
// super-block of the rows' (sc_2i, sc_2i+1) by the token's 16-element sums.
// The rows' kernels (OpsQ3_K) unpack 8 vectors of each super-block of each
// row and sum each row's lanes per super-block; here a tile's lanes hold
// every row's totals at once.
//
// Same bits as the rows: each super-block's total T = sum (sc - 32) (q - 4) x
// is an exact integer, and the float steps are OpsQ3_K's super-block lane
// order (matmul_x86_superblock.h) done lane by lane over the rows, as the
// Q6_K tiles do (the drivers of matmul_x86_k16_lane_passes.h, shared):
// per chunk of 4 super-blocks, v_s = fma(float(T_s), d_s * dx_s, +0) (+0
// past the row's end), the chunk's sum (v0 + v1) + (v2 + v3), stored on a
// row's first chunk and added after.
//
// GEMV order (decode, small batches): tile after tile, chunk after chunk.
// Up to kQ3KInTileTokens tokens take each 8-row half in one pass, unpacking
// the weights as they go (one token too: both halves in one pass, as the
// Q6_K tiles take them, ran 1.15-1.2x slower here, its registers spilled);
// more unpack each half's chunk once into L1 for all their passes of up to
// kQ3KTokens. GEMM order: chunks outer, then
// blocks of kGemmBlockTokens tokens, then tiles.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_k16_lane_passes.h"
#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/q3k_lanes16.h"

namespace tc::kernels::detail {
namespace {

// Tokens per pass over an 8-row half, and up to how many tokens the passes
// unpack the weights from the tile as they go (beyond: each half's chunk
// unpacked once into L1), as the Q6_K tiles.
constexpr int kQ3KTokens = 4;
constexpr int64_t kQ3KInTileTokens = kQ3KTokens;

// How far ahead (bytes) the GEMV sweep prefetches its stream, into L2.
constexpr int64_t kQ3KLanesAhead = 5 * kQ3KLanesSbBytes;

// One super-block's per-row constants for one 8-row half of a tile.
struct Q3KLaneConsts {
  __m256i sc[16];   // sub-block i: row j's scale - 32 as the int16 pair (sc, sc) in lane j
  __m256i pair[8];  // row j's (sc_2i, sc_2i+1) as int16 in lane j
  __m256 d;         // row j's d
};

// Super-block sb (its first byte) of a tile: both halves' constants. Scale
// i of the 16 rows from their packed bytes: the low nibble of byte i % 8
// (i < 8: bits 0-3, else 4-7), the top two bits from bits 2 (i / 4) of byte
// 8 + i % 4.
TC_SIMD_INLINE void q3k_lane_consts(const std::byte* sb, Q3KLaneConsts (&c)[2]) {
  __m128i b[12];  // packed byte i of the 16 rows
  for (int i = 0; i < 12; ++i) b[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQ3KLanesScales) + i);
  const __m128i m4 = _mm_set1_epi8(0x0f), m3 = _mm_set1_epi8(0x03), bias = _mm_set1_epi8(32);
  __m128i s[16];
  for (int i = 0; i < 16; ++i) {
    // (16-bit shifts, masked per byte before anything crosses into bits used.)
    const __m128i low = i < 8 ? _mm_and_si128(b[i], m4) : _mm_and_si128(_mm_srli_epi16(b[i - 8], 4), m4);
    const __m128i top = _mm_and_si128(_mm_srl_epi16(b[8 + i % 4], _mm_cvtsi32_si128(2 * (i / 4))), m3);
    s[i] = _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(top, 4)), bias);
  }
  for (int i = 0; i < 16; ++i) {
    c[0].sc[i] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s[i], s[i]));
    c[1].sc[i] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s[i], s[i]));
  }
  for (int i = 0; i < 8; ++i) {
    c[0].pair[i] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s[2 * i], s[2 * i + 1]));
    c[1].pair[i] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s[2 * i], s[2 * i + 1]));
  }
  for (int h = 0; h < 2; ++h) {
    c[h].d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQ3KLanesD) + h));
  }
}

// The 3-bit weights (0..7) of one step of a tile's super-block for one
// 8-row half h: groups 2p and 2p + 1 of half n (elements 128 n + 32 c + 4 k
// ..), each row's 4 in its lane.
// (N and P fixed at compile time: every shift an immediate.)
template <int N, int P>
TC_SIMD_INLINE void q3k_lane_unpack(const std::byte* sb, int k, int h, __m256i& lo, __m256i& hi) {
  const __m256i m3 = _mm256_set1_epi8(0x03), m4 = _mm256_set1_epi8(0x04);
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + q3k_lanes_qs(N, k) + 32 * h));
  const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + q3k_lanes_hmask(k) + 32 * h));
  const __m256i q_p = _mm256_srli_epi16(q, 4 * P);  // fields 2P, 2P + 1 at bits 0-1, 2-3
  // hmask bits 4N + 2P and 4N + 2P + 1 at bits 2 and 3.
  constexpr int kHb = 4 * N + 2 * P;
  const __m256i h_p = kHb >= 2 ? _mm256_srli_epi16(hm, kHb >= 2 ? kHb - 2 : 0) : _mm256_slli_epi16(hm, 2);
  lo = _mm256_or_si256(_mm256_and_si256(q_p, m3), _mm256_and_si256(h_p, m4));
  hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q_p, 2), m3),
                       _mm256_and_si256(_mm256_srli_epi16(h_p, 1), m4));
}

// Where a pass's weights come from: unpacked from the tile as it goes
// (InTile: halves from h0, the stream prefetched ahead if pf is set), or
// read from a half's chunk unpacked once (Unpacked, one half).
struct Q3KInTile {
  const std::byte* sb;
  int h0;
  const char* pf;  // the super-block to prefetch meanwhile, a line per step, or nullptr
  template <int N, int P>
  TC_SIMD_INLINE void step(int k, int h, __m256i& lo, __m256i& hi) const {
    if (pf != nullptr && h == 0 && P == 0) {
      _mm_prefetch(pf + q3k_lanes_qs(N, k), _MM_HINT_T1);
      if (N == 0) _mm_prefetch(pf + q3k_lanes_hmask(k), _MM_HINT_T1);
      if (N == 1 && k < 4) _mm_prefetch(pf + kQ3KLanesScales + 64 * k, _MM_HINT_T1);
    }
    q3k_lane_unpack<N, P>(sb, k, h0 + h, lo, hi);
  }
};

// One half of a super-block unpacked: step (n, p, k)'s lo and hi vectors.
struct Q3KUnpackedSb {
  __m256i v[2][2][8][2];
};

struct Q3KUnpacked {
  const Q3KUnpackedSb* sb;
  template <int N, int P>
  TC_SIMD_INLINE void step(int k, int, __m256i& lo, __m256i& hi) const {
    lo = _mm256_load_si256(&sb->v[N][P][k][0]);
    hi = _mm256_load_si256(&sb->v[N][P][k][1]);
  }
};

// The integer totals T = sum sc (q - 4) x of one super-block for H halves
// (c[0..H), the weights from `w`) and T tokens. xq[t]: the token's 256
// activations of this super-block, x16[t] its 16 sums of 16.
template <int H, int T, class Src>
TC_SIMD_INLINE void q3k_lane_totals(const Src& w, const Q3KLaneConsts* c, const int8_t* const (&xq)[T],
                                    const int16_t* const (&x16)[T], __m256i (&total)[T][H]) {
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) total[t][h] = _mm256_setzero_si256();
  }
  // Half n, groups 2p (lo) and 2p + 1 (hi).
  auto half_pair = [&]<int n, int p>() __attribute__((always_inline)) {
#pragma GCC unroll 1
    for (int kk = 0; kk < 2; ++kk) {  // steps 4kk..4kk + 3: one sub-block of each group
      __m256i lo_sum[T][H], hi_sum[T][H];
#pragma GCC unroll 4
      for (int k4 = 0; k4 < 4; ++k4) {
        const int k = 4 * kk + k4;
        __m256i lo[H], hi[H];
        for (int h = 0; h < H; ++h) w.template step<n, p>(k, h, lo[h], hi[h]);
        for (int t = 0; t < T; ++t) {
          const __m256i xa = lane_x4(xq[t] + 128 * n + 64 * p + 4 * k);
          const __m256i xb = lane_x4(xq[t] + 128 * n + 64 * p + 32 + 4 * k);
          for (int h = 0; h < H; ++h) {
            const __m256i pa = _mm256_maddubs_epi16(lo[h], xa), pb = _mm256_maddubs_epi16(hi[h], xb);
            lo_sum[t][h] = k4 == 0 ? pa : _mm256_add_epi16(lo_sum[t][h], pa);
            hi_sum[t][h] = k4 == 0 ? pb : _mm256_add_epi16(hi_sum[t][h], pb);
            asm("" : "+x"(lo_sum[t][h]), "+x"(hi_sum[t][h]));
          }
        }
      }
      const int sub = 8 * n + 4 * p + kk;  // group 2p's sub-block; group 2p + 1's is sub + 2
      for (int t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) {
          const __m256i lo = _mm256_madd_epi16(lo_sum[t][h], c[h].sc[sub]);
          const __m256i hi = _mm256_madd_epi16(hi_sum[t][h], c[h].sc[sub + 2]);
          total[t][h] = _mm256_add_epi32(total[t][h], _mm256_add_epi32(lo, hi));
        }
      }
    }
  };
  half_pair.template operator()<0, 0>();
  half_pair.template operator()<0, 1>();
  half_pair.template operator()<1, 0>();
  half_pair.template operator()<1, 1>();
  k16_lane_offset<2, H, T>(c, x16, total);
}

// The kernel as the drivers of matmul_x86_k16_lane_passes.h take it.
struct Q3KLane {
  using Consts = Q3KLaneConsts;
  static constexpr int kTokens = kQ3KTokens;
  template <int H, int T, class Src>
  TC_SIMD_INLINE static void totals(const Src& w, const Consts* c, const int8_t* const (&xq)[T],
                                    const int16_t* const (&x16)[T], __m256i (&total)[T][H]) {
    q3k_lane_totals<H, T>(w, c, xq, x16, total);
  }
};

// Half h of a tile's chunk (count super-blocks from sb0) unpacked into u,
// the stream prefetched ahead if `prefetch`.
TC_SIMD_INLINE void q3k_lane_unpack_half(const std::byte* tile, int64_t sb0, int64_t count, int h,
                                         Q3KUnpackedSb (&u)[4], bool prefetch) {
  for (int64_t s = 0; s < count; ++s) {
    const std::byte* sb = tile + (sb0 + s) * kQ3KLanesSbBytes;
    const Q3KInTile w{sb, h, prefetch ? reinterpret_cast<const char*>(sb) + kQ3KLanesAhead : nullptr};
    auto half = [&]<int n>() __attribute__((always_inline)) {
      for (int k = 0; k < 8; ++k) {
        w.template step<n, 0>(k, 0, u[s].v[n][0][k][0], u[s].v[n][0][k][1]);
        w.template step<n, 1>(k, 0, u[s].v[n][1][k][0], u[s].v[n][1][k][1]);
      }
    };
    half.template operator()<0>();
    half.template operator()<1>();
  }
}

// Tile rt's chunk from super-block sb0 for tokens [t0, t1): a few over each
// half, unpacking as they go; more over each half unpacked once.
TC_SIMD_INLINE void q3k_lane_chunk(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t n_sb, int64_t t0, int64_t t1,
                                   bool prefetch) {
  const std::byte* tile = a.w + rt / kQ3KLanes16Rows * a.lane_tile_bytes;
  const int64_t count = min64(4, n_sb - sb0);
  auto in_tile = [&](int h0, bool pf) __attribute__((always_inline)) {
    return [=](int s) __attribute__((always_inline)) {
      const std::byte* sb = tile + (sb0 + s) * kQ3KLanesSbBytes;
      return Q3KInTile{sb, h0, pf ? reinterpret_cast<const char*>(sb) + kQ3KLanesAhead : nullptr};
    };
  };
  Q3KLaneConsts c[4][2];
  for (int64_t s = 0; s < count; ++s) q3k_lane_consts(tile + (sb0 + s) * kQ3KLanesSbBytes, c[s]);
  if (t1 - t0 <= kQ3KInTileTokens) {
    for (int h = 0; h < 2; ++h) {
      k16_lane_half<Q3KLane>(a, rt, sb0, count, c, h, t0, t1, [&](bool first) __attribute__((always_inline)) {
        return in_tile(h, prefetch && h == 0 && first);
      });
    }
    return;
  }
  alignas(32) Q3KUnpackedSb u[4];
  for (int h = 0; h < 2; ++h) {
    q3k_lane_unpack_half(tile, sb0, count, h, u, prefetch && h == 0);
    k16_lane_half<Q3KLane>(a, rt, sb0, count, c, h, t0, t1, [&](bool) __attribute__((always_inline)) {
      return [&](int s) __attribute__((always_inline)) { return Q3KUnpacked{&u[s]}; };
    });
  }
}

// Outputs [r0, r1) of a Q3_KLanes16 matrix (whole 16-row tiles, below
// a.lane_rows), every token. Each row gets its chunks in order either way.
void run_lanes16_q3_K(const MatmulArgs& a, int64_t r0, int64_t r1) {
  k16_lane_sweep(a, r0, r1, [&a](int64_t rt, int64_t sb0, int64_t n_sb, int64_t t0, int64_t t1, bool prefetch)
                                __attribute__((always_inline)) { q3k_lane_chunk(a, rt, sb0, n_sb, t0, t1, prefetch); });
}

}  // namespace
}  // namespace tc::kernels::detail
