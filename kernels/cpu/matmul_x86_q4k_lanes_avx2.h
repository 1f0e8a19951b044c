// Internal to the x86 SIMD matmul variants (see matmul_x86_common.h): Q4_K
// and Q5_K matrices repacked at load (Q4_KLanes16, q4k_lanes16.h;
// Q5_KLanes16, q5k_lanes16.h): AVX2 code that every x86 variant runs. On
// the AVX-512 Xeon it beat the VNNI rows kernels (vpdpbusd) from one token
// to 15 (docs/engine.md has the figures): it keeps a sub-block's sums in
// int16 and widens them once per 8 steps, where the rows widen by the
// scale every 32 weights and sum every row's lanes per super-block. A step
// is one 64-byte line: bytes 4k..4k+3 of a sub-block pair's quants for all
// 16 rows, row j in 32-bit lane j (Q5_K: with the matching line of fifth
// bits). Its low
// nibbles meet the token's 4 activations of the pair's first sub-block and
// its high nibbles those of the second (one broadcast each, one vpmaddubsw
// each per 8 rows); the int16 pair sums of a sub-block stay in the row's
// lane for L::kWidenSteps steps (Q4_K: 8 x 2 x 15 x 127 < 32767; Q5_K: 4 x
// 2 x 31 x 127), and one vpmaddwd by the rows' scales (sc, sc) adds sc *
// sum q x to the int32 total. The mins take 4 vpmaddwd per super-block: the
// rows' (m_2k, m_2k+1) by the token's 32-element sums. The rows' kernels
// (OpsQ4_K, OpsQ5_K) widen by the scale every 32 weights and sum each row's
// lanes per super-block; here a tile's lanes hold every row's totals at
// once.
//
// Same bits as the rows: the totals T = sum sc q x and M = sum m x of each
// super-block are exact integers, and the float steps are the super-block
// lane order (matmul_x86_superblock.h) done lane by lane over the rows: per
// chunk of 4 super-blocks, v_s = fma(float(T_s), d_s * dx_s, +0) and v_{4+s}
// = fma(float(M_s), -dmin_s * dx_s, +0) (+0 past the row's end), the
// chunk's sum ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)), stored on
// a row's first chunk and added after.
//
// GEMV order (decode, small batches): tile after tile, chunk after chunk.
// One token takes both 8-row halves per pass (each line loaded once), each
// super-block's constants unpacked as it comes, so that the stream is read
// in address order; a few tokens take a chunk's constants unpacked once and
// each half in passes of up to kQ4KTokens, unpacking the levels as they go;
// from L::kUnpackOnceFrom tokens on each half's chunk is unpacked once into
// L1 for all their passes. GEMM order: chunks outer, then blocks of
// kGemmBlockTokens tokens, then tiles.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/matmul_x86_common.h"
#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/q4k_lanes16.h"
#include "kernels/cpu/q5k_lanes16.h"

namespace tc::kernels::detail {
namespace {

// Tokens per pass over an 8-row half: 2 int16 sums and an int32 total per
// token, the step's two nibble vectors and a broadcast fill the 16 ymm.
// From DRAM on 2 Zen 3 cores (5632 x 2048, against the rows, alternating,
// 2 runs): 4 tokens 1.58-1.64x the rows' speed in passes of 4, 1.22-1.45x
// in two of 2; 8 tokens 2.25-2.26x against 2.06-2.26x in 3 + 3 + 2.
constexpr int kQ4KTokens = 4;

// How far ahead (bytes) the GEMV sweep prefetches its stream, into L2 (one
// line per step). From DRAM on 2 Zen 3 cores (5632 x 2048, against the
// rows, alternating, 3 runs): one token 1.21-1.32x the rows' speed at 4
// super-blocks ahead into L2, 1.18-1.21x into L1, 1.16-1.28x at 8 into L2,
// 0.95-1.08x at 2 into L1, 0.74-0.83x without. (Measured with the
// constants after the quants and a chunk's constants unpacked first; with
// the constants first and unpacked as they come, one core streams 16 GB/s
// where it streamed 12.5, against a read probe of 20.)
constexpr int64_t kQ4KLanesAhead = 4;  // super-blocks

// The two layouts this kernel reads: where a step's lines lie, whether the
// levels have a fifth bit (Q5_K, its qh line shared by the 4 pairs' step),
// and how many steps a sub-block's int16 pair sums may take before they
// are widened: 8 x 2 x 15 x 127 < 32767 for Q4_K, 4 x 2 x 31 x 127 for Q5_K.
// kUnpackOnceFrom, from one Zen 3 core, weights in L2 (128 x 2048), G
// MAC/s unpacking as they go / once: Q4_K 5 tokens 81 / 65, 8 84-90 /
// 81-82, 16 90 / 91, 64 93 / 99; Q5_K 5 tokens 54 / 56, 8 62 / 67, 64 65 /
// 82, 512 69 / 91 (its fifth bits cost 4 more instructions a step).
struct Q4KLanes {
  static constexpr int64_t kSbBytes = kQ4KLanesSbBytes;
  static constexpr bool kFifthBit = false;
  static constexpr int kWidenSteps = 8;
  static constexpr int64_t kUnpackOnceFrom = 16;
  static constexpr int64_t qs(int p, int k) { return kQ4KLanesQs + 64 * (8 * p + k); }
  static constexpr int64_t qh(int) { return 0; }
};
struct Q5KLanes {
  static constexpr int64_t kSbBytes = kQ5KLanesSbBytes;
  static constexpr bool kFifthBit = true;
  static constexpr int kWidenSteps = 4;
  static constexpr int64_t kUnpackOnceFrom = 5;
  static constexpr int64_t qs(int p, int k) { return q5k_lanes_qs(p, k); }
  static constexpr int64_t qh(int k) { return q5k_lanes_qh(k); }
};
static_assert(kQ5KLanesScales == kQ4KLanesScales && kQ5KLanesD == kQ4KLanesD && kQ5KLanesDmin == kQ4KLanesDmin);

// One super-block's per-row constants for one 8-row half of a tile.
struct Q4KLaneConsts {
  __m256i sc[8];    // sub-block i: row j's scale as the int16 pair (sc, sc) in lane j
  __m256i mins[4];  // pair k: row j's (m_2k, m_2k+1) as int16 in lane j
  __m256 d;         // row j's d
  __m256 neg_dmin;  // row j's -dmin
};

// Super-block sb (its first byte) of a tile: both halves' constants.
TC_SIMD_INLINE void q4k_lane_consts(const std::byte* sb, Q4KLaneConsts (&c)[2]) {
  __m128i b[12];
  for (int i = 0; i < 12; ++i) b[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(sb + kQ4KLanesScales) + i);
  const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(0x0f), m30 = _mm_set1_epi8(0x30);
  __m128i sc[8], mn[8];  // 16 rows' 6-bit scales and mins, as llama.cpp's get_scale_min_k4
  for (int j = 0; j < 4; ++j) {
    sc[j] = _mm_and_si128(b[j], m63);
    mn[j] = _mm_and_si128(b[j + 4], m63);
    sc[j + 4] = _mm_or_si128(_mm_and_si128(b[j + 8], m15), _mm_and_si128(_mm_srli_epi16(b[j], 2), m30));
    mn[j + 4] =
        _mm_or_si128(_mm_and_si128(_mm_srli_epi16(b[j + 8], 4), m15), _mm_and_si128(_mm_srli_epi16(b[j + 4], 2), m30));
  }
  for (int i = 0; i < 8; ++i) {
    c[0].sc[i] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sc[i], sc[i]));
    c[1].sc[i] = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sc[i], sc[i]));
  }
  for (int k = 0; k < 4; ++k) {
    c[0].mins[k] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn[2 * k], mn[2 * k + 1]));
    c[1].mins[k] = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(mn[2 * k], mn[2 * k + 1]));
  }
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int h = 0; h < 2; ++h) {
    c[h].d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kQ4KLanesD) + h));
    c[h].neg_dmin =
        _mm256_xor_ps(sign, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kQ4KLanesDmin) + h)));
  }
}

// Step k of pair p of a tile's super-block for one 8-row half h: lo = the
// levels of sub-block 2p (elements 64 p + 4 k ..), hi = those of 2p + 1,
// each row's 4 in its lane.
template <class L>
TC_SIMD_INLINE void k4_lane_unpack(const std::byte* sb, int p, int k, int h, __m256i& lo, __m256i& hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(sb + L::qs(p, k) + 32 * h));
  lo = _mm256_and_si256(w, m4);
  hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
  if constexpr (L::kFifthBit) {  // bits 2p and 2p + 1 of qh to bit 4
    const __m256i m10 = _mm256_set1_epi8(0x10);
    const __m256i q = _mm256_srl_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(sb + L::qh(k) + 32 * h)),
                                       _mm_cvtsi32_si128(2 * p));
    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(q, 4), m10));
    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(q, 3), m10));
  }
}

// Where a pass's levels come from: unpacked from the tile as it goes
// (K4InTile: H halves from h0, the stream prefetched ahead if pf is set),
// or read from a half's chunk unpacked once (K4Unpacked, one half).
template <class L>
struct K4InTile {
  const std::byte* sb;
  int h0;
  const char* pf;  // the super-block to prefetch meanwhile, a line per step, or nullptr
  TC_SIMD_INLINE void step(int p, int k, int h, __m256i& lo, __m256i& hi) const {
    if (pf != nullptr && h == 0) {
      if (k == 0) _mm_prefetch(pf + kQ4KLanesScales + 64 * p, _MM_HINT_T1);
      _mm_prefetch(pf + L::qs(p, k), _MM_HINT_T1);
      if (L::kFifthBit && p == 0) _mm_prefetch(pf + L::qh(k), _MM_HINT_T1);
    }
    k4_lane_unpack<L>(sb, p, k, h0 + h, lo, hi);
  }
};

// One half of a super-block unpacked: step (p, k)'s lo and hi vectors.
struct K4UnpackedSb {
  __m256i v[4][8][2];
};

struct K4Unpacked {
  const K4UnpackedSb* sb;
  TC_SIMD_INLINE void step(int p, int k, int, __m256i& lo, __m256i& hi) const {
    lo = _mm256_load_si256(&sb->v[p][k][0]);
    hi = _mm256_load_si256(&sb->v[p][k][1]);
  }
};

// The integer totals of one super-block for H halves (c[0..H), the levels
// from `w`) and T tokens: t_sum = T (sum sc q x), m_sum = M (sum m x) of
// each row. xq[t]: the token's 256 activations of this super-block, xs[t]
// its 8 sums of 32. L::kWidenSteps: steps between widenings.
template <class L, int H, int T, class Src>
TC_SIMD_INLINE void q4k_lane_totals(const Src& w, const Q4KLaneConsts* c, const int8_t* const (&xq)[T],
                                    const int32_t* const (&xs)[T], __m256i (&t_sum)[T][H], __m256i (&m_sum)[T][H]) {
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) t_sum[t][h] = _mm256_setzero_si256();
  }
#pragma GCC unroll 1
  for (int p = 0; p < 4; ++p) {
    __m256i lo_sum[T][H], hi_sum[T][H];  // int16 pair sums of sub-blocks 2p and 2p + 1
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i lo[H], hi[H];
      for (int h = 0; h < H; ++h) w.step(p, k, h, lo[h], hi[h]);
      const bool first = k % L::kWidenSteps == 0;
      for (int t = 0; t < T; ++t) {
        const __m256i xa = lane_x4(xq[t] + 64 * p + 4 * k);
        const __m256i xb = lane_x4(xq[t] + 64 * p + 32 + 4 * k);
        for (int h = 0; h < H; ++h) {
          const __m256i pa = _mm256_maddubs_epi16(lo[h], xa), pb = _mm256_maddubs_epi16(hi[h], xb);
          lo_sum[t][h] = first ? pa : _mm256_add_epi16(lo_sum[t][h], pa);
          hi_sum[t][h] = first ? pb : _mm256_add_epi16(hi_sum[t][h], pb);
          // In step order: left alone, GCC took the 8 steps' products first
          // and summed them in a tree, spilling them to the stack.
          asm("" : "+x"(lo_sum[t][h]), "+x"(hi_sum[t][h]));
        }
      }
      if ((k + 1) % L::kWidenSteps != 0) continue;
      for (int t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) {
          const Q4KLaneConsts& ch = c[h];
          const __m256i lo_w = _mm256_madd_epi16(lo_sum[t][h], ch.sc[2 * p]);
          const __m256i hi_w = _mm256_madd_epi16(hi_sum[t][h], ch.sc[2 * p + 1]);
          t_sum[t][h] = _mm256_add_epi32(t_sum[t][h], _mm256_add_epi32(lo_w, hi_w));
        }
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    // The token's sums of 32 as int16: pair k = (s_2k, s_2k+1) in dword k of
    // the low half (k < 2) or 4 + k - 2 of the high one.
    const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[t]));
    const __m256i pairs = _mm256_packs_epi32(s, s);
    for (int h = 0; h < H; ++h) m_sum[t][h] = _mm256_setzero_si256();
    for (int k = 0; k < 4; ++k) {
      const __m256i xk = _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(k < 2 ? k : k + 2));
      for (int h = 0; h < H; ++h) {
        m_sum[t][h] = _mm256_add_epi32(m_sum[t][h], _mm256_madd_epi16(c[h].mins[k], xk));
      }
    }
  }
}

// One pass over a tile's chunk (count super-blocks from sb0, super-block
// s's constants from consts_of(s), its levels from src(s)) for H halves
// from h0 and tokens t0..t0 + T - 1: their outputs' chunk sums stored
// (first chunk) or added.
template <class L, int H, int T, class ConstsOf, class SrcOf>
TC_SIMD_INLINE void q4k_lane_pass(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t count,
                                  const ConstsOf& consts_of, int h0, int64_t t0, const SrcOf& src) {
  __m256 v[8][T][H];
  for (int s = 0; s < 4; ++s) {
    if (s >= count) {
      for (int t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) v[s][t][h] = v[4 + s][t][h] = _mm256_setzero_ps();
      }
      continue;
    }
    const int8_t* xq[T];
    const int32_t* xs[T];
    float dx[T];
    for (int t = 0; t < T; ++t) {
      const XRow x = x_row(a, t0 + t);
      xq[t] = x.qs + kQK_K * (sb0 + s);
      xs[t] = x.sum32 + 8 * (sb0 + s);
      dx[t] = x.d[sb0 + s];
    }
    __m256i t_sum[T][H], m_sum[T][H];
    decltype(auto) c = consts_of(s);
    q4k_lane_totals<L, H, T>(src(s), c + h0, xq, xs, t_sum, m_sum);
    for (int t = 0; t < T; ++t) {
      const __m256 vdx = _mm256_set1_ps(dx[t]);
      for (int h = 0; h < H; ++h) {
        const Q4KLaneConsts& ch = c[h0 + h];
        v[s][t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t_sum[t][h]), _mm256_mul_ps(ch.d, vdx), _mm256_setzero_ps());
        v[4 + s][t][h] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(m_sum[t][h]), _mm256_mul_ps(ch.neg_dmin, vdx), _mm256_setzero_ps());
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      const __m256 lo = _mm256_add_ps(_mm256_add_ps(v[0][t][h], v[1][t][h]), _mm256_add_ps(v[2][t][h], v[3][t][h]));
      const __m256 hi = _mm256_add_ps(_mm256_add_ps(v[4][t][h], v[5][t][h]), _mm256_add_ps(v[6][t][h], v[7][t][h]));
      const __m256 sum = _mm256_add_ps(lo, hi);
      float* y = a.y + (t0 + t) * a.n_out + rt + 8 * (h0 + h);
      _mm256_storeu_ps(y, sb0 == 0 ? sum : _mm256_add_ps(_mm256_loadu_ps(y), sum));
    }
  }
}

// Tokens [t0, t1) over one 8-row half h in as few passes of up to
// kQ4KTokens as there can be, of sizes as even as they can be (5 tokens:
// 3 + 2, not 4 + 1); src_of(first) gives the levels' source for the first
// pass or the others.
template <class L, class SrcOf>
TC_SIMD_INLINE void q4k_lane_half(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t count,
                                  const Q4KLaneConsts (&c)[4][2], int h, int64_t t0, int64_t t1, const SrcOf& src_of) {
  static_assert(kQ4KTokens == 4);
  const int64_t n = t1 - t0, passes = (n + kQ4KTokens - 1) / kQ4KTokens;
  int64_t t = t0;
  auto consts_of = [&c](int s) __attribute__((always_inline)) -> const Q4KLaneConsts(&)[2] { return c[s]; };
  for (int64_t i = 0; i < passes; ++i) {
    const int64_t size = n / passes + (i < n % passes ? 1 : 0);
    const auto src = src_of(i == 0);
    if (size == 4) q4k_lane_pass<L, 1, 4>(a, rt, sb0, count, consts_of, h, t, src);
    if (size == 3) q4k_lane_pass<L, 1, 3>(a, rt, sb0, count, consts_of, h, t, src);
    if (size == 2) q4k_lane_pass<L, 1, 2>(a, rt, sb0, count, consts_of, h, t, src);
    if (size == 1) q4k_lane_pass<L, 1, 1>(a, rt, sb0, count, consts_of, h, t, src);
    t += size;
  }
}

// Half h of a tile's chunk (count super-blocks from sb0) unpacked into u,
// the stream prefetched ahead if `prefetch`.
template <class L>
TC_SIMD_INLINE void k4_lane_unpack_half(const std::byte* tile, int64_t sb0, int64_t count, int h,
                                        K4UnpackedSb (&u)[4], bool prefetch) {
  for (int64_t s = 0; s < count; ++s) {
    const std::byte* sb = tile + (sb0 + s) * L::kSbBytes;
    const K4InTile<L> w{sb, h, prefetch ? reinterpret_cast<const char*>(sb) + kQ4KLanesAhead * L::kSbBytes : nullptr};
    for (int p = 0; p < 4; ++p) {
      for (int k = 0; k < 8; ++k) w.step(p, k, 0, u[s].v[p][k][0], u[s].v[p][k][1]);
    }
  }
}

// Tile rt's chunk from super-block sb0 for tokens [t0, t1). One token
// unpacks each super-block's constants as it comes (the stream stays in
// address order: a chunk's constants first made one-token decode from DRAM
// 1.3x slower); a few share a chunk's and unpack the levels as they go;
// more unpack each half's chunk once into L1 (L::kUnpackOnceFrom tokens).
template <class L>
TC_SIMD_INLINE void q4k_lane_chunk(const MatmulArgs& a, int64_t rt, int64_t sb0, int64_t n_sb, int64_t t0, int64_t t1,
                                   bool prefetch) {
  const std::byte* tile = a.w + rt / kQ4KLanes16Rows * a.lane_tile_bytes;
  const int64_t count = min64(4, n_sb - sb0);
  auto in_tile = [&](int h0, bool pf) __attribute__((always_inline)) {
    return [=](int s) __attribute__((always_inline)) {
      const std::byte* sb = tile + (sb0 + s) * L::kSbBytes;
      return K4InTile<L>{sb, h0, pf ? reinterpret_cast<const char*>(sb) + kQ4KLanesAhead * L::kSbBytes : nullptr};
    };
  };
  if (t1 - t0 == 1) {
    Q4KLaneConsts c[2];
    auto consts_of = [&](int s) __attribute__((always_inline)) -> const Q4KLaneConsts(&)[2] {
      q4k_lane_consts(tile + (sb0 + s) * L::kSbBytes, c);
      return c;
    };
    return q4k_lane_pass<L, 2, 1>(a, rt, sb0, count, consts_of, 0, t0, in_tile(0, prefetch));
  }
  Q4KLaneConsts c[4][2];
  for (int64_t s = 0; s < count; ++s) q4k_lane_consts(tile + (sb0 + s) * L::kSbBytes, c[s]);
  if (t1 - t0 < L::kUnpackOnceFrom) {
    for (int h = 0; h < 2; ++h) {
      auto src_of = [&](bool first) __attribute__((always_inline)) {
        return in_tile(h, prefetch && h == 0 && first);
      };
      q4k_lane_half<L>(a, rt, sb0, count, c, h, t0, t1, src_of);
    }
    return;
  }
  alignas(32) K4UnpackedSb u[4];
  for (int h = 0; h < 2; ++h) {
    k4_lane_unpack_half<L>(tile, sb0, count, h, u, prefetch && h == 0);
    q4k_lane_half<L>(a, rt, sb0, count, c, h, t0, t1, [&](bool) __attribute__((always_inline)) {
      return [&](int s) __attribute__((always_inline)) { return K4Unpacked{&u[s]}; };
    });
  }
}

// Outputs [r0, r1) of a matrix in layout L (whole 16-row tiles, below
// a.lane_rows), every token. Each row gets its chunks in order either way.
template <class L>
void run_lanes16_k4(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_sb = a.n_in / kQK_K;
  if (!gemm_order(a)) {
    for (int64_t rt = r0; rt < r1; rt += kQ4KLanes16Rows) {
      for (int64_t sb0 = 0; sb0 < n_sb; sb0 += 4) q4k_lane_chunk<L>(a, rt, sb0, n_sb, 0, a.n_tokens, true);
    }
    return;
  }
  for (int64_t sb0 = 0; sb0 < n_sb; sb0 += 4) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kGemmBlockTokens) {
      const int64_t t1 = min64(a.n_tokens, t0 + kGemmBlockTokens);
      for (int64_t rt = r0; rt < r1; rt += kQ4KLanes16Rows) q4k_lane_chunk<L>(a, rt, sb0, n_sb, t0, t1, false);
    }
  }
}

// Outputs [r0, r1) of a Q4_KLanes16 / Q5_KLanes16 matrix.
void run_lanes16_q4_K(const MatmulArgs& a, int64_t r0, int64_t r1) { run_lanes16_k4<Q4KLanes>(a, r0, r1); }
void run_lanes16_q5_K(const MatmulArgs& a, int64_t r0, int64_t r1) { run_lanes16_k4<Q5KLanes>(a, r0, r1); }

}  // namespace
}  // namespace tc::kernels::detail
