// The AVX2 + FMA + F16C matmul variant: the kernels of matmul_x86_*.h
// compiled with -mavx2 -mfma -mf16c (kernels/CMakeLists.txt). matmul.cpp
// calls it only after CPUID said yes.
#include "kernels/cpu/matmul_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "kernels/cpu/matmul_x86_float.h"
#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

void compute_rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  switch (a.dtype) {
    case DType::F32:
      return run_float<LoadF32>(a, r0, r1);
    case DType::F16:
      return run_float<LoadF16>(a, r0, r1);
    case DType::BF16:
      return run_float<LoadBF16>(a, r0, r1);
    default:
      return compute_rows_quant(a, r0, r1);
  }
}

constexpr MatmulIsa kAvx2 = {"avx2", quantize_x, compute_rows};

}  // namespace

const MatmulIsa* isa_avx2() { return &kAvx2; }

}  // namespace tc::kernels::detail

#else

namespace tc::kernels::detail {
const MatmulIsa* isa_avx2() { return nullptr; }
}  // namespace tc::kernels::detail

#endif
