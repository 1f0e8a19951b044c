// Internal to kernels/cpu: the contract between the matmul driver
// (matmul.cpp: dispatch, scratch, threads) and the per-ISA kernel files
// (matmul_portable.cpp, matmul_avx2.cpp, matmul_avx512.cpp). The sparse FFN
// (sparse_ffn.h) runs the same kernels over a gathered set of rows.
//
// Only plain data and function pointers cross this boundary. The ISA files
// are compiled with -mavx2 / -mavx512* and must not instantiate inline or
// template code with external linkage (std:: containers, std::min, ...):
// the linker keeps one copy of such code for the whole program and could pick
// the AVX one for the baseline callers. Their helpers live in anonymous
// namespaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "kernels/dtype.h"

namespace tc::kernels {
struct Tensor;
class ThreadPool;
struct MatmulTarget;
}  // namespace tc::kernels

namespace tc::kernels::detail {

// How the activations are prepared for a weight dtype.
enum class XFormat {
  F32,        // f32 copy (F32 weights)
  F16,        // rounded to f16, kept as f16 and widened back to f32 (F16 weights)
  BF16,       // rounded to bf16, kept as bf16 pairs and widened to f32 odd/even halves (BF16 weights)
  Q8_32,      // int8 in blocks of 32 (Q8_0 weights)
  Q8_32_NIB,  // as Q8_32 with each pair of blocks in nibble order (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 weights)
  Q8_256,     // int8 in blocks of 256 (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS weights)
};

// Where the parts of one prepared token row sit (byte offsets from the row
// start). Rows are `stride` bytes apart: 64-byte aligned and an odd number
// of cache lines, so the rows of many tokens do not crowd the same cache sets.
// F32: the n_in values as they came (f32_offset 0).
// F16: x clamped to +-65504 and rounded to nearest-even f16, as llama.cpp
// prepares x for F16
// weights (half the cache traffic of f32 x in the decode loop):
//   h      f16   [n_in]        at offset 0
//   xf     f32   [n_in]        at f32_offset: the same values widened (exact),
//                              for the paths that multiply in f32 tiles
// Both forms hold the same numbers, so every path forms the same products.
// BF16: x clamped to bf16's finite range, rounded to nearest-even bf16 and
// flushed to zero below bf16's normal range (as llama.cpp prepares x for
// BF16 weights, and as vdpbf16ps reads its inputs), in steps of 32 inputs
// (n32 = n_in rounded up to 32, zeros after n_in):
//   hb     bf16  [n32]         at offset 0, in order (what vdpbf16ps takes)
//   xs     f32   [n32]         at f32_offset: the same values widened, per
//                              step s its odd inputs then its even ones:
//                              xs[32s + l] = x[32s + 2l + 1],
//                              xs[32s + 16 + l] = x[32s + 2l] (l < 16), for
//                              the avx512 kernels that emulate vdpbf16ps
//                              with FMAs (every variant writes it, so the
//                              prepared bytes are the same everywhere; the
//                              avx2 kernels split hb's pairs instead)
// Quantized, with nb = n_in / block:
//   qs     int8  [n_in]        x[i] ~= qs[i] * d[i / block]
//   d      f32   [nb]          d = max|x| over the block / 127; 0 (and qs 0) when
//                              max|x| < 1e-30. x must be finite.
//   sum32  int32 [n_in / 32]   sum of qs over each 32 elements
//   sum16  int16 [n_in / 16]   sum of qs over each 16 elements (Q8_256 only)
//   gd     f32   [nb8]         Q8_32_NIB only, nb8 = nb rounded up to 8: d of
//                              each group of 8 blocks in kQ4GroupOrder
//   gs8    int32 [nb8]         Q8_32_NIB only: 8 * sum32 in the same order
//                              (the Q4_0 nibbles' -8 offset, exact)
// d, sum32, gd and gs8 are zero-filled up to a multiple of 8 entries (kernels
// read them 8 at a time). In Q8_32_NIB, blocks 2k and 2k+1 store their qs as
// [2k: 0-15 | 2k+1: 0-15 | 2k: 16-31 | 2k+1: 16-31], matching how Q4_0 packs
// elements j and j+16 in one byte; an odd last block stays in order.
// Every ISA writes the same bytes: qs = round_to_nearest_even(x * (1 / d)).
struct XLayout {
  XFormat format = XFormat::F32;
  int64_t n_in = 0;
  int64_t block = 1;
  int64_t d_offset = 0;
  int64_t sum32_offset = 0;
  int64_t sum16_offset = 0;
  int64_t gd_offset = 0;
  int64_t gs8_offset = 0;
  int64_t f32_offset = 0;  // F32, F16 and BF16: where the f32 values sit
  int64_t stride = 0;

  bool operator==(const XLayout&) const = default;  // the same prepared bytes
};

// One matmul as the kernels see it (see matmul.h for the meaning).
// Output r reads weight row r, or row rows[r] when rows is set (the
// row-gathered GEMV of sparse_ffn.h); n_out counts outputs either way.
struct MatmulArgs {
  DType dtype = DType::F32;
  const std::byte* w = nullptr;  // weights, row i at w + i * row_bytes
  int64_t row_bytes = 0;
  int64_t n_in = 0;
  int64_t n_out = 0;
  const int32_t* rows = nullptr;  // i32 [n_out]: the weight row of each output; nullptr: output r = row r
  const std::byte* xq = nullptr;  // prepared activations [n_tokens], layout xl
  XLayout xl;
  int64_t n_tokens = 0;
  float* y = nullptr;  // f32 [n_tokens, n_out]
  // A lane-tile layout (WeightLayout::Q4_0Lanes16 and the others,
  // lanes16.h), rows == nullptr: outputs [0, lane_rows) read 16-row tiles
  // from w, lane_tile_bytes apart; the driver hands the kernels whole tiles
  // and the rows after them (at lane_tail, row_bytes apart) as a row-layout
  // matrix. 0: the row layout.
  int64_t lane_rows = 0;
  int64_t lane_tile_bytes = 0;
  const std::byte* lane_tail = nullptr;
  // Q4_0Lanes16 with at most kLaneXTokens tokens: their prepared activations
  // interleaved by token (LaneX below), built once per call by the driver,
  // so the kernel addresses every token from one pointer. nullptr: none.
  const std::byte* lane_x = nullptr;
};

// LaneX: the Q8_32_NIB activations of up to kLaneXTokens tokens (t), for
// nb blocks, np = (nb + 1) / 2 block pairs, ng = (nb + 7) / 8 groups:
//   qs   int8  [np][kLaneXTokens][64]  pair p of token t (XLayout's qs
//                                      bytes 64p..64p + 63)
//   gs8  int32 [ng][kLaneXTokens][8]   at lane_x_gs8_offset: group g's gs8
//   gd   f32   [ng][kLaneXTokens][8]   at lane_x_gd_offset: group g's gd
// Tokens past the call's count are left unset (never read).
constexpr int kLaneXTokens = 8;

// Internal linkage (see the top of this file): every ISA file gets its own copy.
namespace {

// LaneX offsets (see above) for nb blocks.
inline int64_t lane_x_gs8_offset(int64_t nb) { return (nb + 1) / 2 * kLaneXTokens * 64; }
inline int64_t lane_x_gd_offset(int64_t nb) { return lane_x_gs8_offset(nb) + (nb + 7) / 8 * kLaneXTokens * 32; }
inline int64_t lane_x_bytes(int64_t nb) { return lane_x_gd_offset(nb) + (nb + 7) / 8 * kLaneXTokens * 32; }

// The order of a group of 8 Q4_0 blocks in the lanes of the x86 kernels:
// reducing the four block pairs' partial sums leaves block 2k's sum in the
// low half and 2k+1's in the high half (matmul_x86_quant.h).
constexpr int kQ4GroupOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// Fills a Q8_32_NIB row's gd and gs8 (see XLayout) from its d and sum32
// (nb blocks, both zero-filled to a multiple of 8).
inline void fill_q4_groups(const float* d, const int32_t* sum32, int64_t nb, float* gd, int32_t* gs8) {
  for (int64_t g = 0; g < nb; g += 8) {
    for (int i = 0; i < 8; ++i) {
      gd[g + i] = d[g + kQ4GroupOrder[i]];
      gs8[g + i] = 8 * sum32[g + kQ4GroupOrder[i]];
    }
  }
}

// Elements per step of the BF16 kernels: 16 f32 lanes, each summing one
// pair of inputs per step.
constexpr int64_t kBf16Step = 32;

// x (f32) as matmul's BF16 kernels read it: clamped to +-bf16's largest
// finite value, rounded to nearest-even bf16, and +-0 below bf16's normal
// range. x must be finite.
inline uint16_t bf16_for_matmul(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  const uint32_t sign = u & 0x80000000u;
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
  if ((r & 0x7f80u) == 0x7f80u) r = (sign >> 16) | 0x7f7fu;  // rounded past the largest finite value
  if ((r & 0x7f80u) == 0) r = sign >> 16;                    // subnormal or zero: +-0
  return static_cast<uint16_t>(r);
}

// Prepares one token of x (f32 [n]) for BF16 weights into hb and xs (see
// XLayout); n32 is n rounded up to kBf16Step.
inline void prepare_bf16_x(const float* x, int64_t n, uint16_t* hb, float* xs) {
  const int64_t n32 = (n + kBf16Step - 1) / kBf16Step * kBf16Step;
  for (int64_t i = 0; i < n32; ++i) {
    const uint16_t h = i < n ? bf16_for_matmul(x[i]) : 0;
    hb[i] = h;
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    const int64_t step = i / kBf16Step, e = i % kBf16Step;
    xs[kBf16Step * step + (e % 2 == 1 ? e / 2 : 16 + e / 2)] = f;
  }
}

// The weight row that output r reads.
inline const std::byte* weight_row(const MatmulArgs& a, int64_t r) {
  return a.w + (a.rows != nullptr ? static_cast<int64_t>(a.rows[r]) : r) * a.row_bytes;
}

}  // namespace

// MatmulIsa::k_lanes16_max_tokens of a variant that reads the tiles for
// every call.
constexpr int64_t kAllTokens = std::numeric_limits<int64_t>::max();

// The kernels of one instruction-set variant. Both functions are pure and
// thread-safe; they write only their own part of the output.
struct MatmulIsa {
  const char* name;
  // Prepares tokens [t_begin, t_end) of x (f32 [*, xl.n_in]) into xq
  // (64-byte aligned, as matmul's scratch buffer is).
  void (*quantize_x)(const XLayout& xl, const float* x, int64_t t_begin, int64_t t_end, std::byte* xq);
  // Computes y[t, r] for r in [r_begin, r_end) and every token. Each output
  // is summed in an order fixed by (dtype, n_in) alone, so tiling, the row
  // range and the token count never change its bits.
  void (*compute_rows)(const MatmulArgs& args, int64_t r_begin, int64_t r_end);
  // Whether compute_rows reads Q4_0Lanes16 (and Q4_1Lanes16), Q8_0Lanes16,
  // the K-quants' Q4_KLanes16 to Q6_KLanes16 tiles (for how many tokens),
  // and Q3_KLanes16 (args.lane_rows > 0, the range whole tiles below
  // lane_rows); the driver unpacks them otherwise.
  bool q4_lanes16 = false;
  bool q8_lanes16 = false;
  // Q4_K-Q6_K and IQ4_XS: read for calls of at most this many tokens (0: never);
  // larger calls get the tiles unpacked (amx: its GEMM reads rows).
  int64_t k_lanes16_max_tokens = 0;
  bool q3k_lanes16 = false;
  // Such an unpacked call: the row kernels take whole groups of this many
  // tokens and the tiles the tokens after them (0: the rows take them all).
  int64_t k_rows_token_group = 0;
  // IQ4_XSLanes16 too, within k_lanes16_max_tokens (measured on AVX2 only:
  // the AVX-512 variants keep IQ4_XS in the file's rows).
  bool iq4xs_lanes16 = false;
  // IQ4_NLLanes16 (measured on AVX2 only: the AVX-512 variants keep IQ4_NL
  // in the file's rows).
  bool iq4nl_lanes16 = false;
  // Q5_0Lanes16 and Q5_1Lanes16 (AVX2 only, as IQ4_NL's).
  bool q5_lanes16 = false;
};

// The variants compiled into this binary. The AVX ones return nullptr when
// the build has no x86-64 SIMD flags; whether this CPU runs them is the
// driver's business (matmul.cpp).
const MatmulIsa& isa_portable();
const MatmulIsa* isa_avx2();
const MatmulIsa* isa_avx512();
const MatmulIsa* isa_avx512bf16();  // avx512 with vdpbf16ps for BF16 weights
const MatmulIsa* isa_amx();         // avx512 with AMX int8 tiles for Q8_0, Q4_0 and K-quant prefill

// The layout of quantized activations for weights of `dtype` and rows of n_in.
XLayout x_layout(DType dtype, int64_t n_in);

// Whether this CPU (and OS) can run the variant named "portable", "avx2",
// "avx512", "avx512bf16" or "amx".
bool isa_supported(const char* name);

// The variant matmul() uses for a THERMOCLINE_ISA value (nullptr or "" for
// none): the best supported one, or the one asked for when it is supported
// and not above the best.
const MatmulIsa& isa_for_request(const char* request);

// The variant matmul() uses in this process: isa_for_request of
// THERMOCLINE_ISA, chosen on first use.
const MatmulIsa& chosen_isa();

// matmul() with a given variant; pool may be nullptr (single-threaded).
void matmul_with(const MatmulIsa& isa, const Tensor& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool);

// matmul_many() with a given variant; pool may be nullptr.
void matmul_many_with(const MatmulIsa& isa, std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens,
                      ThreadPool* pool);

// The row-gathered matmul (sparse_ffn.h's matmul_rows) with a given variant:
// y[t * n_rows + k] = the matmul output of weight row rows[k] for token t,
// bit for bit. pool may be nullptr.
void matmul_rows_with(const MatmulIsa& isa, const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows,
                      int64_t n_rows, float* y, ThreadPool* pool);

}  // namespace tc::kernels::detail
