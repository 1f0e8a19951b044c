// The AVX2 + FMA + F16C axpy variant: the kernels of sparse_ffn_x86.h
// compiled with -mavx2 -mfma -mf16c (kernels/CMakeLists.txt). Picked with
// matmul's AVX2 variant, only after CPUID said yes.
#include "kernels/cpu/sparse_ffn_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "kernels/cpu/sparse_ffn_x86.h"

namespace tc::kernels::detail {
namespace {

constexpr AxpyIsa kAvx2 = {"avx2", compute_columns_x86<>};

}  // namespace

const AxpyIsa* axpy_isa_avx2() { return &kAvx2; }

}  // namespace tc::kernels::detail

#else

namespace tc::kernels::detail {
const AxpyIsa* axpy_isa_avx2() { return nullptr; }
}  // namespace tc::kernels::detail

#endif
