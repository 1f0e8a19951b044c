// The AMX matmul variant: the avx512 variant with the prefill of Q8_0
// (rows or Q8_0Lanes16), Q4_0 (Q4_0Lanes16), Q4_1 (rows or Q4_1Lanes16),
// Q4_K, Q5_K, Q6_K and IQ4_XS (rows; their lane tiles unpacked by the
// driver) run on AMX int8 tiles (matmul_x86_amx*.h, compiled with
// -mamx-tile -mamx-int8 too, kernels/CMakeLists.txt). The tiles form the same exact int32 sums as
// vpdpbusd and the float steps after them are the other variants', so
// every dtype gives the same bits as in the avx2 variant. matmul.cpp calls
// it only after CPUID and XCR0 said yes and the kernel granted this process
// the tile state.
#include "kernels/cpu/matmul_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__FMA__) && defined(__F16C__)

#define TC_MATMUL_VNNI 1
#include "kernels/cpu/matmul_x86_amx_kquants.h"
#include "kernels/cpu/matmul_x86_amx_q4.h"
#include "kernels/cpu/matmul_x86_amx_q8.h"

namespace tc::kernels::detail {
namespace {

// The variant every call without an AMX kernel goes to: avx512, whose BF16
// GEMM (two FMAs per weight pair, the same bits as vdpbf16ps) ran faster
// than avx512bf16's vdpbf16ps on the one AMX machine measured (`matmul_bench
// -t 2 --dtype bf16 --tokens 512`, 1B shapes, two runs: 112-124 against
// 91-100 GFLOP/s); the two differ in nothing else.
const MatmulIsa& amx_base() { return *isa_avx512(); }

// From how many tokens the tiles take a call (`matmul_bench -t 2 --tokens
// 16,32,48,64`, 1B shapes, the Xeon machine): Q8_0 from one tile of
// tokens (16: 2.1-2.8x the avx512 small-batch tiles); Q4_0Lanes16 from two
// (16: 0.8x the in-place lane tiles; 32: 0.9-1.6x; 48: 1.1-1.5x).
constexpr int64_t kAmxMinTokensQ8_0 = kAmxTokens;
constexpr int64_t kAmxMinTokensQ4_0 = 2 * kAmxTokens;
constexpr int64_t kAmxMinTokensQ4_1 = kAmxTokens;  // 16: 1.7x the avx512 path, 32: 2.1-2.4x
// Q4_K, Q5_K and Q6_K from one tile of tokens (16: Q4_K and Q5_K 1.7-2.0x
// the avx512 path, Q6_K 1.1-1.2x; 32: 2.1-2.8x and 1.5-1.8x).
constexpr int64_t kAmxMinTokensK = kAmxTokens;
// Q4_K, Q5_K and Q6_K in lane tiles (the layout at load): the avx512 base
// reads them below two tiles of tokens, the driver unpacks them for the
// tiles from there (`matmul_bench -t 2 --isa amx,avx512 --dtype
// q4_K,q4_kx16,q6_K,q6_kx16 --no-gemv --tokens N`, 1B shapes, the tiles'
// GFLOP/s from rows against the lane kernels': Q4_K 0.79-0.84x at 16
// tokens, 0.66x at 24, 1.20-1.26x at 32, 1.36-1.47x at 48; Q6_K 0.94x,
// 0.71-0.77x, 1.30-1.33x, 1.52-1.68x).
constexpr int64_t kAmxMaxLaneTokensK = 2 * kAmxTokens - 1;

void compute_rows_amx(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.dtype == DType::Q8_0 && a.n_tokens >= kAmxMinTokensQ8_0) {
    if (a.lane_rows > 0) return run_amx_lanes16<AmxQ8_0Lanes16>(a, r0, r1, amx_base());
    return run_amx_rows<AmxQ8_0>(a, r0, r1, amx_base());
  }
  if (a.dtype == DType::Q4_1 && a.n_tokens >= kAmxMinTokensQ4_1) {
    if (a.lane_rows > 0) return run_amx_lanes16<AmxQ4_1Lanes16>(a, r0, r1, amx_base());
    return run_amx_rows<AmxQ4_1>(a, r0, r1, amx_base());
  }
  // (K-quant lane tiles come here up to kAmxMaxLaneTokensK tokens, IQ4_XS tiles (repacked by avx2
  // only; in tests) for the tokens past whole 16-token groups: the base reads them.)
  const bool k_rows = a.lane_rows == 0 && a.n_tokens >= kAmxMinTokensK;
  if (a.dtype == DType::Q4_K && k_rows) return run_amx_rows<AmxQ4_K>(a, r0, r1, amx_base());
  if (a.dtype == DType::Q5_K && k_rows) return run_amx_rows<AmxQ5_K>(a, r0, r1, amx_base());
  if (a.dtype == DType::Q6_K && k_rows) return run_amx_rows<AmxQ6_K>(a, r0, r1, amx_base());
  if (a.dtype == DType::IQ4_XS && k_rows) return run_amx_rows<AmxIQ4_XS>(a, r0, r1, amx_base());
  if (a.dtype == DType::Q4_0 && a.lane_rows > 0 && a.n_tokens >= kAmxMinTokensQ4_0) {
    return run_amx_lanes16<AmxQ4_0>(a, r0, r1, amx_base());
  }
  amx_base().compute_rows(a, r0, r1);
}

}  // namespace

const MatmulIsa* isa_amx() {
  if (isa_avx512() == nullptr) return nullptr;
  static const MatmulIsa isa = {"amx", isa_avx512()->quantize_x, compute_rows_amx, true, true,
                                kAmxMaxLaneTokensK, true, kAmxTokens};
  return &isa;
}

}  // namespace tc::kernels::detail

#else

namespace tc::kernels::detail {
const MatmulIsa* isa_amx() { return nullptr; }
}  // namespace tc::kernels::detail

#endif
