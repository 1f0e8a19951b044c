// AVX-512 matmul kernels (placeholder while the AVX2 path settles).
#include "kernels/cpu/matmul_kernels.h"

namespace tc::kernels::detail {

const MatmulIsa* isa_avx512() { return nullptr; }

}  // namespace tc::kernels::detail
