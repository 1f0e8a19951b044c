// The AVX-512 BF16 matmul variant: the avx512 variant with BF16 weights run
// by vdpbf16ps (matmul_x86_bf16.h compiled with -mavx512bf16 too,
// kernels/CMakeLists.txt). Every other dtype, and the activation
// preparation, is the avx512 variant's; BF16 gives the same bits as the
// avx512 and avx2 variants' FMA steps. matmul.cpp calls it only after CPUID
// and XCR0 said yes.
#include "kernels/cpu/matmul_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512BF16__) && \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#define TC_MATMUL_BF16 1
#include "kernels/cpu/matmul_x86_bf16.h"

namespace tc::kernels::detail {
namespace {

void compute_rows_avx512bf16(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.dtype == DType::BF16) return run_bf16(a, r0, r1);
  isa_avx512()->compute_rows(a, r0, r1);
}

}  // namespace

const MatmulIsa* isa_avx512bf16() {
  if (isa_avx512() == nullptr) return nullptr;
  static const MatmulIsa isa = {"avx512bf16", isa_avx512()->quantize_x, compute_rows_avx512bf16, true, true,
                                kAllTokens, true};
  return &isa;
}

}  // namespace tc::kernels::detail

#else

namespace tc::kernels::detail {
const MatmulIsa* isa_avx512bf16() { return nullptr; }
}  // namespace tc::kernels::detail

#endif
