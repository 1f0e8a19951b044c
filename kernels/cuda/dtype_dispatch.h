// Runtime DType -> compile-time template argument for the kernel launchers:
// visit_weight_dtype(t, f) calls f(std::integral_constant<DType, T>{}) for
// every weight dtype (is_weight_dtype); visit_table_dtype, for what
// get_rows reads, is the same set. Other dtypes fail a TC_CHECK.
#pragma once

#include <type_traits>

#include "kernels/check.h"
#include "kernels/dtype.h"

namespace tc::kernels::cuda {

template <DType T>
using DTypeConstant = std::integral_constant<DType, T>;

template <typename F>
void visit_weight_dtype(DType type, F&& f) {
  switch (type) {
    case DType::F32: f(DTypeConstant<DType::F32>{}); return;
    case DType::F16: f(DTypeConstant<DType::F16>{}); return;
    case DType::BF16: f(DTypeConstant<DType::BF16>{}); return;
    case DType::Q8_0: f(DTypeConstant<DType::Q8_0>{}); return;
    case DType::Q4_0: f(DTypeConstant<DType::Q4_0>{}); return;
    case DType::Q4_1: f(DTypeConstant<DType::Q4_1>{}); return;
    case DType::Q5_0: f(DTypeConstant<DType::Q5_0>{}); return;
    case DType::Q5_1: f(DTypeConstant<DType::Q5_1>{}); return;
    case DType::IQ4_NL: f(DTypeConstant<DType::IQ4_NL>{}); return;
    case DType::Q2_K: f(DTypeConstant<DType::Q2_K>{}); return;
    case DType::Q3_K: f(DTypeConstant<DType::Q3_K>{}); return;
    case DType::Q4_K: f(DTypeConstant<DType::Q4_K>{}); return;
    case DType::Q5_K: f(DTypeConstant<DType::Q5_K>{}); return;
    case DType::Q6_K: f(DTypeConstant<DType::Q6_K>{}); return;
    case DType::IQ4_XS: f(DTypeConstant<DType::IQ4_XS>{}); return;
    case DType::MXFP4: f(DTypeConstant<DType::MXFP4>{}); return;
    default: break;
  }
  TC_CHECK(false, "CUDA backend: not a weight dtype (F32, F16, BF16 or a block format)");
}

template <typename F>
void visit_table_dtype(DType type, F&& f) {
  visit_weight_dtype(type, f);
}

}  // namespace tc::kernels::cuda
