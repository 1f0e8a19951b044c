// Internal to the x86 SIMD matmul variants: the per-dtype dispatch over the
// float and quantized kernels. Included by matmul_avx2.cpp and
// matmul_avx512.cpp, so each translation unit compiles it with its own ISA
// flags (hence the anonymous namespace).
#pragma once

#include "kernels/cpu/matmul_x86_float.h"
#include "kernels/cpu/matmul_x86_quant.h"

namespace tc::kernels::detail {
namespace {

void compute_rows_x86(const MatmulArgs& a, int64_t r0, int64_t r1) {
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

}  // namespace
}  // namespace tc::kernels::detail
