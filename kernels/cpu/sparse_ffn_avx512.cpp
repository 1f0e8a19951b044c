// The AVX-512 axpy variant: the kernels of sparse_ffn_x86.h compiled with
// matmul_avx512.cpp's flags (kernels/CMakeLists.txt), so the compiler has
// 32 vector registers, plus sparse_ffn_x86_512.h's 128-column zmm tiles for
// one token (F16, Q8_0, Q4_0). The operations per column and their order
// are those of the AVX2 variant: both give the same bits (tests/kernels
// checks it where the CPU has AVX-512). Picked with matmul's AVX-512 variant.
#include "kernels/cpu/sparse_ffn_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__FMA__) && defined(__F16C__)

#include "kernels/cpu/sparse_ffn_x86_512.h"

namespace tc::kernels::detail {
namespace {

constexpr AxpyIsa kAvx512 = {"avx512", compute_columns_x86<ZmmTiles>};

}  // namespace

const AxpyIsa* axpy_isa_avx512() { return &kAvx512; }

}  // namespace tc::kernels::detail

#else

namespace tc::kernels::detail {
const AxpyIsa* axpy_isa_avx512() { return nullptr; }
}  // namespace tc::kernels::detail

#endif
