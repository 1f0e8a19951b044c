// Internal to the x86 SIMD matmul variants: the dispatch per dtype over the
// float and quantized kernels, and per token count over their loop orders.
// Included by matmul_avx2.cpp and matmul_avx512.cpp, so each translation
// unit compiles it with its own ISA flags (hence the anonymous namespace).
#pragma once

#include "kernels/cpu/matmul_x86_bf16.h"
#include "kernels/cpu/matmul_x86_f16.h"
#include "kernels/cpu/matmul_x86_float.h"
#include "kernels/cpu/matmul_x86_kquants.h"
#include "kernels/cpu/matmul_x86_group32.h"
#include "kernels/cpu/matmul_x86_iq4nl_lanes_avx2.h"
#include "kernels/cpu/matmul_x86_iq4xs_lanes_avx2.h"
#include "kernels/cpu/matmul_x86_lut4_lanes.h"
#include "kernels/cpu/matmul_x86_q3k_lanes_avx2.h"
#include "kernels/cpu/matmul_x86_q4_lanes.h"
#include "kernels/cpu/matmul_x86_q4k_lanes_avx2.h"
#include "kernels/cpu/matmul_x86_q5_lanes_avx2.h"
#include "kernels/cpu/matmul_x86_q6k_lanes_avx2.h"
#include "kernels/cpu/matmul_x86_q8_lanes.h"
#include "kernels/cpu/matmul_x86_q8_lanes_avx2.h"
#include "kernels/cpu/matmul_x86_quant.h"
#include "kernels/cpu/matmul_x86_superblock_gemm.h"

#include <type_traits>

namespace tc::kernels::detail {
namespace {

template <class Ops>
void run_quant(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t n_blocks = a.n_in / Ops::kBlock;
  const int64_t n_out = a.n_out;
  if (a.n_tokens == 1) {
    const XRow x = x_row(a, 0);
    if (a.rows != nullptr) {
      decode_gathered_rows<Ops>(a, r0, r1, x);
      return;
    }
    for (int64_t r = r0; r < r1; ++r) decode_row<Ops>(a, r, x);
    return;
  }
  // Q4_0 from 3 tokens on: the packed tiles (nibbles unpacked once per row
  // tile and chunk) beat the small-batch tiles, 1.1-1.4x at 3-16 tokens.
  const bool packed_small = std::is_same_v<Ops, OpsQ4_0> && a.n_tokens >= 3;
  // Small batches of the super-block types from kUnpackedMinTokens tokens
  // on: each row's chunk unpacked once for every token, as in GEMM order.
  if constexpr (SuperBlockOps<Ops>) {
    if (!gemm_order(a) && a.n_tokens >= kUnpackedMinTokens) return run_unpacked_gemm<Ops>(a, r0, r1);
  }
  if (!gemm_order(a) && !packed_small) {
    // Small batches: Ops::kGemvRows rows x up to kGemvTokens tokens per
    // tile, each weight read from memory once per call.
    constexpr int kRows = Ops::kGemvRows;
    for (int64_t r = r0; r < r1; r += kRows) {
      const int rr = static_cast<int>(min64(kRows, r1 - r));
      const std::byte* w[kRows];
      for (int i = 0; i < rr; ++i) w[i] = weight_row(a, r + i);
      for (int64_t c0 = 0; c0 < n_blocks; c0 += Ops::kChunkBlocks) {
        const int64_t nb = min64(Ops::kChunkBlocks, n_blocks - c0);
        if (a.rows != nullptr && r + 2 * kRows <= r1) {
          // Gathered rows do not follow each other in memory: fetch the next
          // tile's chunk while this one computes.
          constexpr int64_t kBlockBytes = static_cast<int64_t>(sizeof(typename Ops::Block));
          prefetch_rows(a, r + kRows, kRows, c0 * kBlockBytes, nb * kBlockBytes);
        }
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kGemvTokens) {
          const int tt = static_cast<int>(min64(kGemvTokens, a.n_tokens - t0));
          XRow x[kGemvTokens];
          for (int i = 0; i < tt; ++i) x[i] = x_row(a, t0 + i);
          quant_tile_n<Ops, kRows, kGemvTokens>(rr, tt, w, x, c0, nb, a.y + t0 * n_out + r, n_out, c0 == 0);
        }
      }
    }
    return;
  }
  if constexpr (std::is_same_v<Ops, OpsQ4_0>) {
    run_lane_gemm_q4_0(a, r0, r1);
  } else if constexpr (std::is_same_v<Ops, OpsQ8_0>) {
#if defined(__AVX512F__) && defined(TC_MATMUL_VNNI)
    run_lane_gemm_q8_0(a, r0, r1);
#else
    run_packed_gemm<Ops>(a, r0, r1);
#endif
  } else if constexpr (std::is_same_v<Ops, OpsIQ4_NL> || std::is_same_v<Ops, OpsMXFP4>) {
    run_lane_gemm_lut4<Ops>(a, r0, r1);
  } else if constexpr (kIsGroup32<Ops>) {
    run_packed_gemm<Ops>(a, r0, r1);
  } else {
    static_assert(SuperBlockOps<Ops>, "run_quant: a quantized dtype without a GEMM");
    run_unpacked_gemm<Ops>(a, r0, r1);
  }
}

void compute_rows_quant(const MatmulArgs& a, int64_t r0, int64_t r1) {
  switch (a.dtype) {
    case DType::Q8_0:
      return run_quant<OpsQ8_0>(a, r0, r1);
    case DType::Q4_0:
      return run_quant<OpsQ4_0>(a, r0, r1);
    case DType::Q4_1:
      return run_quant<OpsQ4_1>(a, r0, r1);
    case DType::Q5_0:
      return run_quant<OpsQ5_0>(a, r0, r1);
    case DType::Q5_1:
      return run_quant<OpsQ5_1>(a, r0, r1);
    case DType::IQ4_NL:
      return run_quant<OpsIQ4_NL>(a, r0, r1);
    case DType::MXFP4:
      return run_quant<OpsMXFP4>(a, r0, r1);
    case DType::Q2_K:
      return run_quant<OpsQ2_K>(a, r0, r1);
    case DType::Q3_K:
      return run_quant<OpsQ3_K>(a, r0, r1);
    case DType::Q4_K:
      return run_quant<OpsQ4_K>(a, r0, r1);
    case DType::Q5_K:
      return run_quant<OpsQ5_K>(a, r0, r1);
    case DType::Q6_K:
      return run_quant<OpsQ6_K>(a, r0, r1);
    case DType::IQ4_XS:
      return run_quant<OpsIQ4_XS>(a, r0, r1);
    default:
      return;
  }
}

void compute_rows_x86(const MatmulArgs& a, int64_t r0, int64_t r1) {
  switch (a.dtype) {
    case DType::F32:
      return run_float<LoadF32>(a, r0, r1);
    case DType::F16:
      return run_f16(a, r0, r1);
    case DType::BF16:
      return run_bf16(a, r0, r1);
    default:
      if (a.lane_rows > 0) {  // lane tiles (matmul.cpp splits)
        // run_lanes16_q8_0: matmul_x86_q8_lanes.h with VNNI (AVX-512),
        // matmul_x86_q8_lanes_avx2.h without.
        if (a.dtype == DType::Q8_0) return run_lanes16_q8_0(a, r0, r1);
        // Q3_K's tiles: every variant (MatmulIsa::q3k_lanes16; its rows take
        // the same ymm code everywhere).
        if (a.dtype == DType::Q3_K) return run_lanes16_q3_K(a, r0, r1);
        // The other K-quants' tiles: AVX2 code too, which on the AVX-512
        // Xeon beat the VNNI rows kernels from one token to eight
        // (matmul_x86_q4k_lanes_avx2.h).
        if (a.dtype == DType::Q4_K) return run_lanes16_q4_K(a, r0, r1);
        if (a.dtype == DType::Q5_K) return run_lanes16_q5_K(a, r0, r1);
        if (a.dtype == DType::Q6_K) return run_lanes16_q6_K(a, r0, r1);
        // IQ4_XS's tiles: every variant (its rows take the same ymm code everywhere).
        if (a.dtype == DType::IQ4_XS) return run_lanes16_iq4_xs(a, r0, r1);
#if !defined(TC_MATMUL_VNNI)
        // IQ4_NL's, Q5_0's and Q5_1's: AVX2 only (MatmulIsa::iq4nl_lanes16,
        // q5_lanes16; the others get them unpacked).
        if (a.dtype == DType::IQ4_NL) return run_lanes16_iq4_nl(a, r0, r1);
        if (a.dtype == DType::Q5_0) return run_lanes16_q5<false>(a, r0, r1);
        if (a.dtype == DType::Q5_1) return run_lanes16_q5<true>(a, r0, r1);
#endif
        return run_lanes16_q4_0(a, r0, r1);
      }
      return compute_rows_quant(a, r0, r1);
  }
}

}  // namespace
}  // namespace tc::kernels::detail
