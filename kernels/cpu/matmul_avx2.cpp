// The AVX2 + FMA + F16C matmul variant: the kernels of matmul_x86_*.h
// compiled with -mavx2 -mfma -mf16c (kernels/CMakeLists.txt). matmul.cpp
// calls it only after CPUID said yes.
#include "kernels/cpu/matmul_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "kernels/cpu/matmul_x86_rows.h"

namespace tc::kernels::detail {
namespace {

constexpr MatmulIsa kAvx2 = {"avx2", quantize_x, compute_rows_x86, true, true, kAllTokens, true, 0, true, true, true};

}  // namespace

const MatmulIsa* isa_avx2() { return &kAvx2; }

}  // namespace tc::kernels::detail

#else

namespace tc::kernels::detail {
const MatmulIsa* isa_avx2() { return nullptr; }
}  // namespace tc::kernels::detail

#endif
