// Fixtures shared by the kernel tests that run every matmul variant over
// every weight dtype (matmul_test, sparse_ffn_test): the dtypes, the ISA
// variants this CPU runs, and padded weight matrices of fresh random values
// with their dequantized float64 copies.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "kernels/tensor.h"
#include "tests/test_util.h"

namespace tc::test {

inline constexpr kernels::DType kWeightDTypes[] = {
    kernels::DType::F32,  kernels::DType::F16,  kernels::DType::BF16,   kernels::DType::Q8_0,
    kernels::DType::Q4_0, kernels::DType::Q4_1, kernels::DType::Q5_0,   kernels::DType::Q5_1,
    kernels::DType::IQ4_NL, kernels::DType::Q2_K, kernels::DType::Q3_K, kernels::DType::Q4_K,
    kernels::DType::Q5_K, kernels::DType::Q6_K, kernels::DType::IQ4_XS, kernels::DType::MXFP4};

// Whether `dtype` is a 256-element super-block format (the k-quants, IQ4_XS).
inline bool is_super_block(kernels::DType dtype) { return kernels::dtype_traits(dtype).block_size == kernels::kQK_K; }

// The matmul variants this CPU runs; warns once (naming `what`) about AVX-512.
inline std::vector<const kernels::detail::MatmulIsa*> matmul_variants(const char* what) {
  namespace detail = kernels::detail;
  std::vector<const detail::MatmulIsa*> out = {&detail::isa_portable()};
  if (detail::isa_supported("avx2")) out.push_back(detail::isa_avx2());
  static bool warned = false;
  if (detail::isa_supported("avx512")) {
    out.push_back(detail::isa_avx512());
  } else if (!warned) {
    WARN("this CPU has no AVX-512 (F/BW/VL/VNNI): the avx512 " << what << " variant is not run");
  }
  if (detail::isa_supported("avx512bf16")) {
    out.push_back(detail::isa_avx512bf16());
  } else if (!warned) {
    WARN("this CPU has no AVX512_BF16: the avx512bf16 " << what << " variant is not run");
  }
  if (detail::isa_supported("amx")) {
    out.push_back(detail::isa_amx());
  } else if (!warned) {
    WARN("this CPU (or OS) has no AMX int8 tiles: the amx " << what << " variant is not run");
  }
  warned = true;
  return out;
}

// A weight matrix of n_rows rows of n_cols values stored as `dtype`, rows
// `pad` bytes longer than packed (padding 0xff: NaN in every float format),
// and its dequantized values [n_rows][n_cols].
struct Weights {
  kernels::DType dtype;
  int64_t n_cols, n_rows, row_bytes;
  std::vector<std::byte> bytes;
  std::vector<double> values;

  kernels::Tensor tensor() const {
    kernels::Tensor t = kernels::Tensor::matrix(bytes.data(), dtype, n_cols, n_rows);
    t.row_bytes = row_bytes;
    return t;
  }
  double at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * n_cols + c)]; }
};

// Normal values (sd 0.5, fixed seed) quantized to `dtype`.
inline Weights make_weights(kernels::DType dtype, int64_t n_cols, int64_t n_rows, uint64_t seed, int64_t pad = 0) {
  Weights w{dtype, n_cols, n_rows, kernels::row_bytes(dtype, n_cols) + pad, {}, {}};
  const auto src = random_floats(static_cast<size_t>(n_cols * n_rows), seed, 0.5f);
  w.bytes.assign(static_cast<size_t>(w.row_bytes * n_rows), std::byte{0xff});
  w.values.resize(static_cast<size_t>(n_cols * n_rows));
  std::vector<float> row(static_cast<size_t>(n_cols));
  for (int64_t r = 0; r < n_rows; ++r) {
    std::byte* dst = w.bytes.data() + r * w.row_bytes;
    kernels::quantize_row(dtype, src.data() + r * n_cols, dst, n_cols);
    kernels::dequantize_row(dtype, dst, row.data(), n_cols);
    for (int64_t c = 0; c < n_cols; ++c) w.values[static_cast<size_t>(r * n_cols + c)] = row[static_cast<size_t>(c)];
  }
  return w;
}

// The most matmul's prepared activations can move output row r of w for the
// token x (f32 [n_cols]), against the float64 product over x itself:
// - quantized weights: each x moves by at most half its block's step
//   max|x| / 127, so the output by sum over blocks of step / 2 * sum |w|;
// - F16 weights: x is rounded to f16, each x by at most half an ulp
//   (2^-11 |x|; 2^-25 below f16's normal range), times |w|;
// - BF16 weights: x is rounded to bf16, each x by at most half an ulp
//   (2^-8 |x|; all of it below 2^-126, flushed to zero), times |w|;
// - F32 weights: 0 (x is used as it came).
inline double activation_error_bound(const Weights& w, int64_t r, const float* x) {
  if (w.dtype == kernels::DType::F16 || w.dtype == kernels::DType::BF16) {
    const bool f16 = w.dtype == kernels::DType::F16;
    double bound = 0;
    for (int64_t c = 0; c < w.n_cols; ++c) {
      const double ax = std::fabs(static_cast<double>(x[c]));
      bound += std::fabs(w.at(r, c)) * (f16 ? std::fmax(ax * 0x1p-11, 0x1p-25) : std::fmax(ax * 0x1p-8, 0x1p-126));
    }
    return bound;
  }
  if (!kernels::dtype_traits(w.dtype).is_quantized) return 0;
  const int64_t block = is_super_block(w.dtype) ? kernels::kQK_K : 32;
  double bound = 0;
  for (int64_t b0 = 0; b0 < w.n_cols; b0 += block) {
    double amax = 0, wsum = 0;
    for (int64_t c = b0; c < b0 + block; ++c) {
      amax = std::fmax(amax, std::fabs(static_cast<double>(x[c])));
      wsum += std::fabs(w.at(r, c));
    }
    bound += amax / 127.0 / 2.0 * wsum;
  }
  return bound;
}

}  // namespace tc::test
