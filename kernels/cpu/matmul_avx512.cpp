// The AVX-512 matmul variant: the kernels of matmul_x86_*.h compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni (kernels/CMakeLists.txt),
// so int8 dot products use vpdpbusd and tiles get 32 vector registers;
// some kernels take zmm registers (the Q8_0 decode and GEMM, the Q4_0 lane
// GEMM, the F16 GEMM with two rows per register). The summation order and
// the integer lanes are those of the AVX2 variant: both give the same bits
// (tests/kernels checks it where the CPU has AVX-512).
// matmul.cpp calls it only after CPUID and XCR0 said yes.
#include "kernels/cpu/matmul_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__FMA__) && defined(__F16C__)

#define TC_MATMUL_VNNI 1
#include "kernels/cpu/matmul_x86_rows.h"

namespace tc::kernels::detail {
namespace {

constexpr MatmulIsa kAvx512 = {"avx512", quantize_x, compute_rows_x86, true, true, kAllTokens, true};

}  // namespace

const MatmulIsa* isa_avx512() { return &kAvx512; }

}  // namespace tc::kernels::detail

#else

namespace tc::kernels::detail {
const MatmulIsa* isa_avx512() { return nullptr; }
}  // namespace tc::kernels::detail

#endif
