// The CUDA matmul family against float64 references over the dequantized
// weights, for every weight dtype: the decode GEMV (1-8 tokens, padded
// rows, 4096-wide rows), the cuBLAS path (more tokens; f16 tiles, several
// tiles), matmul_rows (gathered rows, bit-identical to matmul's GEMV rows,
// NaN for a bad index), and axpy_rows (zero skipping, one and many splits,
// the same bits on every run and for any batch).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/device_scratch.h"
#include "kernels/dtype.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/weight_fixtures.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;
using tc::test::DeviceWeights;
using tc::test::first_bad;
using tc::test::from_device;
using tc::test::make_weights;
using tc::test::poisoned_device;
using tc::test::same_bits;
using tc::test::to_device;
using tc::test::Weights;

constexpr double kUnit = 0x1p-24;  // f32 unit roundoff

struct Reference {
  std::vector<double> y, tol;
};

enum class Path { Gemv, Cublas };

// The most the GPU may move one output from the float64 product over the
// same dequantized weights, relative to s = sum_c |w_rc x_c|:
// - GEMV: f32 FMA chains of n_in / 32 terms per lane plus a 5-step warp
//   tree: (n_in / 32 + 8) u s.
// - cuBLAS: f32 accumulation in an order cuBLAS picks: (n_in + 8) u s,
//   at least 1e-5 s for tensor-core accumulators; for f16 GEMMs plus x
//   rounded to f16 (half an ulp, 2^-11 |x|, 2^-25 in the subnormal range) and,
//   for block formats, each dequantized weight rounded to f16 likewise.
double tolerance(const Weights& w, int64_t r, const float* x, Path path) {
  double s = 0, x_round = 0, w_round = 0;
  for (int64_t c = 0; c < w.n_cols; ++c) {
    const double aw = std::fabs(w.at(r, c));
    const double ax = std::fabs(static_cast<double>(x[c]));
    s += aw * ax;
    x_round += aw * std::fmax(ax * 0x1p-11, 0x1p-25);
    w_round += ax * std::fmax(aw * 0x1p-11, 0x1p-25);
  }
  if (path == Path::Gemv) return (static_cast<double>(w.n_cols) / 32 + 8) * kUnit * s;
  double tol = std::fmax((static_cast<double>(w.n_cols) + 8) * kUnit, 1e-5) * s;
  const bool f16_gemm = w.dtype != DType::F32 && w.dtype != DType::BF16;
  if (f16_gemm) tol += x_round;
  if (dtype_traits(w.dtype).is_quantized) tol += w_round;
  return tol;
}

// y[t, k] for the rows `rows` (all rows if empty).
Reference reference(const Weights& w, const std::vector<float>& x, int64_t n_tokens, const std::vector<int32_t>& rows,
                    Path path) {
  const auto n_y = rows.empty() ? w.n_rows : static_cast<int64_t>(rows.size());
  Reference ref;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x.data() + t * w.n_cols;
    for (int64_t k = 0; k < n_y; ++k) {
      const int64_t r = rows.empty() ? k : rows[static_cast<size_t>(k)];
      double sum = 0;
      for (int64_t c = 0; c < w.n_cols; ++c) sum += w.at(r, c) * static_cast<double>(xt[c]);
      ref.y.push_back(sum);
      ref.tol.push_back(tolerance(w, r, xt, path));
    }
  }
  return ref;
}

void require_close(const std::vector<float>& got, const Reference& ref) {
  const size_t bad = first_bad(got, ref.y, ref.tol);
  if (bad < got.size()) {
    INFO("output " << bad << " got " << got[bad] << " want " << ref.y[bad] << " tolerance " << ref.tol[bad]);
    REQUIRE(bad == got.size());
  }
}

std::vector<float> run_matmul(Backend& cuda, const DeviceWeights& w, const std::vector<float>& x, int64_t n_tokens) {
  const Buffer dx = to_device(cuda, x);
  const Buffer dy = poisoned_device(cuda, static_cast<size_t>(n_tokens * w.tensor.n_rows()));
  cuda.matmul(w.tensor, dx.as<float>(), n_tokens, dy.as<float>());
  return from_device<float>(cuda, dy.data(), static_cast<size_t>(n_tokens * w.tensor.n_rows()));
}

std::vector<float> run_matmul_rows(Backend& cuda, const DeviceWeights& w, const std::vector<float>& x,
                                   int64_t n_tokens, const std::vector<int32_t>& rows) {
  const Buffer dx = to_device(cuda, x);
  const Buffer drows = to_device(cuda, rows);
  const auto n_y = static_cast<int64_t>(rows.size());
  const Buffer dy = poisoned_device(cuda, static_cast<size_t>(n_tokens * n_y));
  cuda.matmul_rows(w.tensor, dx.as<float>(), n_tokens, drows.as<int32_t>(), n_y, dy.as<float>());
  return from_device<float>(cuda, dy.data(), static_cast<size_t>(n_tokens * n_y));
}

std::vector<float> run_axpy_rows(Backend& cuda, const DeviceWeights& w_t, const std::vector<float>& a,
                                 int64_t n_tokens, const std::vector<int32_t>& rows) {
  const Buffer da = to_device(cuda, a);
  const Buffer drows = to_device(cuda, rows.empty() ? std::vector<int32_t>{0} : rows);
  const int64_t n_out = w_t.tensor.n_cols();
  const Buffer dy = poisoned_device(cuda, static_cast<size_t>(n_tokens * n_out));
  cuda.axpy_rows(w_t.tensor, da.as<float>(), n_tokens, drows.as<int32_t>(), static_cast<int64_t>(rows.size()),
                 dy.as<float>());
  return from_device<float>(cuda, dy.data(), static_cast<size_t>(n_tokens * n_out));
}

// Row padding past the packed size: the kernels must step by row_bytes.
// F32 rows stay 4-byte aligned (the backend requires it).
int64_t row_pad(DType dtype) { return dtype == DType::F32 ? 8 : 6; }

std::vector<int64_t> n_in_values(DType dtype) {
  if (tc::test::is_super_block(dtype)) return {256, 768};
  if (dtype_traits(dtype).is_quantized) return {32, 96, 544};
  return {8, 37, 300};
}

std::string label(DType dtype, int64_t n_in, int64_t n_tokens) {
  return std::string(dtype_name(dtype)) + " n_in " + std::to_string(n_in) + " tokens " + std::to_string(n_tokens);
}

// Unsorted, with a duplicate: the gather must not assume order or uniqueness.
std::vector<int32_t> some_rows(int64_t n_neurons, uint64_t seed) {
  auto rows = tc::test::random_tokens(static_cast<size_t>(n_neurons / 3 + 1), seed, n_neurons);
  rows.push_back(rows.front());
  return rows;
}

}  // namespace

TEST_CASE("cuda matmul: decode GEMV matches float64 for every dtype, 1-8 tokens, padded rows", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  uint64_t seed = 1;
  for (DType dtype : tc::test::kWeightDTypes) {
    for (int64_t n_in : n_in_values(dtype)) {
      const Weights w = make_weights(dtype, n_in, 83, seed++, row_pad(dtype));
      const DeviceWeights dw = to_device(*cuda, w);
      for (int64_t n_tokens : {1, 2, 3, 8}) {
        INFO(label(dtype, n_in, n_tokens));
        const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed++);
        require_close(run_matmul(*cuda, dw, x, n_tokens), reference(w, x, n_tokens, {}, Path::Gemv));
      }
    }
  }
}

TEST_CASE("cuda matmul: 4096-wide rows (decode shape) match float64 and a token's bits do not depend on the batch",
          "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  uint64_t seed = 50;
  for (DType dtype : tc::test::kWeightDTypes) {
    const Weights w = make_weights(dtype, 4096, 40, seed++);
    const DeviceWeights dw = to_device(*cuda, w);
    const auto x = tc::test::random_floats(8 * 4096, seed++);
    INFO(label(dtype, 4096, 8));
    const auto batch = run_matmul(*cuda, dw, x, 8);
    require_close(batch, reference(w, x, 8, {}, Path::Gemv));
    for (int64_t t = 0; t < 8; ++t) {
      const std::vector<float> xt(x.begin() + t * 4096, x.begin() + (t + 1) * 4096);
      const auto alone = run_matmul(*cuda, dw, xt, 1);
      REQUIRE(same_bits(alone, std::vector<float>(batch.begin() + t * 40, batch.begin() + (t + 1) * 40)));
    }
  }
}

TEST_CASE("cuda matmul: the cuBLAS path (more than 8 tokens) matches float64 for every dtype", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  uint64_t seed = 100;
  for (DType dtype : tc::test::kWeightDTypes) {
    for (int64_t n_in : n_in_values(dtype)) {
      const Weights w = make_weights(dtype, n_in, 83, seed++, row_pad(dtype));
      const DeviceWeights dw = to_device(*cuda, w);
      for (int64_t n_tokens : {9, 33, 64}) {
        INFO(label(dtype, n_in, n_tokens));
        const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed++);
        require_close(run_matmul(*cuda, dw, x, n_tokens), reference(w, x, n_tokens, {}, Path::Cublas));
      }
    }
  }
}

TEST_CASE("cuda matmul: the cuBLAS path over several dequantized tiles", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  // 64 MiB f16 tiles of 4096-wide rows hold 8192 rows: 8195 rows take two.
  const Weights w = make_weights(DType::Q4_0, 4096, 8195, 200);
  const DeviceWeights dw = to_device(*cuda, w);
  const auto x = tc::test::random_floats(9 * 4096, 201);
  require_close(run_matmul(*cuda, dw, x, 9), reference(w, x, 9, {}, Path::Cublas));
}

TEST_CASE("cuda matmul_rows: gathered rows equal matmul's GEMV rows bit for bit and float64", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  uint64_t seed = 300;
  for (DType dtype : tc::test::kWeightDTypes) {
    for (int64_t n_in : n_in_values(dtype)) {
      const Weights w = make_weights(dtype, n_in, 83, seed++, row_pad(dtype));
      const DeviceWeights dw = to_device(*cuda, w);
      const auto rows = some_rows(83, seed++);
      const auto n_y = rows.size();
      for (int64_t n_tokens : {1, 5, 8, 11}) {
        INFO(label(dtype, n_in, n_tokens));
        const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed++);
        const auto y = run_matmul_rows(*cuda, dw, x, n_tokens, rows);
        require_close(y, reference(w, x, n_tokens, rows, Path::Gemv));
        if (n_tokens > 8) continue;  // matmul takes cuBLAS there
        const auto dense = run_matmul(*cuda, dw, x, n_tokens);
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (size_t k = 0; k < n_y; ++k) {
            const float got = y[t * n_y + k];
            const float want = dense[static_cast<size_t>(t * 83 + rows[k])];
            REQUIRE(std::memcmp(&got, &want, sizeof got) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("cuda matmul_rows: a row index out of range gives NaN there and leaves the others right", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const Weights w = make_weights(DType::F16, 64, 10, 400);
  const DeviceWeights dw = to_device(*cuda, w);
  const std::vector<int32_t> rows = {3, 10, -1, 9};
  const auto x = tc::test::random_floats(2 * 64, 401);
  const auto y = run_matmul_rows(*cuda, dw, x, 2, rows);
  const auto ref = reference(w, x, 2, {3, 0, 0, 9}, Path::Gemv);
  for (int64_t t = 0; t < 2; ++t) {
    CHECK(std::isnan(y[t * 4 + 1]));
    CHECK(std::isnan(y[t * 4 + 2]));
    for (int64_t k : {0, 3}) REQUIRE(std::fabs(y[t * 4 + k] - ref.y[t * 4 + k]) <= ref.tol[t * 4 + k]);
  }
}

// y[t, j] = sum_k a[t, k] w_t[rows[k], j] in float64, tolerance (n_rows + 2)
// u sum_k |a w| (a sequential f32 FMA chain per split, then the splits summed).
Reference axpy_reference(const Weights& w_t, const std::vector<float>& a, int64_t n_tokens,
                         const std::vector<int32_t>& rows) {
  Reference ref;
  const auto n_rows = static_cast<int64_t>(rows.size());
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j < w_t.n_cols; ++j) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < n_rows; ++k) {
        const double term = static_cast<double>(a[static_cast<size_t>(t * n_rows + k)]) *
                            w_t.at(rows[static_cast<size_t>(k)], j);
        sum += term;
        mag += std::fabs(term);
      }
      ref.y.push_back(sum);
      ref.tol.push_back((static_cast<double>(n_rows) + 2) * kUnit * mag);
    }
  }
  return ref;
}

// Activations with about a third exact zeros (+0 and -0), as after ReLU.
std::vector<float> sparse_activations(size_t n, uint64_t seed) {
  auto a = tc::test::random_floats(n, seed);
  for (size_t i = 0; i < n; ++i) {
    if (i % 3 == 0) a[i] = (i % 2 == 0) ? 0.0f : -0.0f;
  }
  return a;
}

TEST_CASE("cuda axpy_rows: matches float64 for every dtype, row set and token count", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  uint64_t seed = 500;
  for (DType dtype : tc::test::kWeightDTypes) {
    const int64_t n_out = tc::test::is_super_block(dtype) ? 512 : 96;
    // 83 neurons: one split; 700: several (64 rows each), the last one short.
    for (int64_t n_neurons : {83, 700}) {
      const Weights w_t = make_weights(dtype, n_out, n_neurons, seed++, row_pad(dtype));
      const DeviceWeights dw = to_device(*cuda, w_t);
      std::vector<int32_t> all(static_cast<size_t>(n_neurons));
      for (int64_t i = 0; i < n_neurons; ++i) all[static_cast<size_t>(i)] = static_cast<int32_t>(i);
      for (const auto& rows : {some_rows(n_neurons, seed++), all, std::vector<int32_t>{}}) {
        for (int64_t n_tokens : {1, 3, 8}) {
          INFO(std::string(dtype_name(dtype)) << " neurons " << n_neurons << " rows " << rows.size() << " tokens "
                                              << n_tokens);
          const auto a = sparse_activations(static_cast<size_t>(n_tokens) * rows.size(), seed++);
          const auto y = run_axpy_rows(*cuda, dw, a, n_tokens, rows);
          require_close(y, axpy_reference(w_t, a, n_tokens, rows));
          if (rows.empty()) {
            for (float v : y) REQUIRE((v == 0.0f && !std::signbit(v)));
          }
        }
      }
    }
  }
}

TEST_CASE("cuda axpy_rows: a long prompt runs in passes of bounded partial sums, each token as alone", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  // 2048 rows split 32 ways over 8192 outputs: 1 MiB of partials per token,
  // so passes of 32 tokens (kAxpyMaxPartialBytes); 70 tokens take three.
  const int64_t n_out = 8192, n_neurons = 2048, n_tokens = 70;
  REQUIRE(tc::kernels::axpy_pass_tokens(tc::kernels::axpy_split_count(n_neurons), n_out) == 32);
  const Weights w_t = make_weights(DType::F16, n_out, n_neurons, 700);
  const DeviceWeights dw = to_device(*cuda, w_t);
  std::vector<int32_t> all(static_cast<size_t>(n_neurons));
  for (int64_t i = 0; i < n_neurons; ++i) all[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  const auto a = sparse_activations(static_cast<size_t>(n_tokens * n_neurons), 701);
  const auto y = run_axpy_rows(*cuda, dw, a, n_tokens, all);
  require_close(y, axpy_reference(w_t, a, n_tokens, all));
  for (const int64_t t : {int64_t{0}, int64_t{33}, n_tokens - 1}) {  // in the first, second and last pass
    INFO("token " << t);
    const std::vector<float> at(a.begin() + t * n_neurons, a.begin() + (t + 1) * n_neurons);
    REQUIRE(same_bits(run_axpy_rows(*cuda, dw, at, 1, all),
                      std::vector<float>(y.begin() + t * n_out, y.begin() + (t + 1) * n_out)));
  }
}

TEST_CASE("cuda axpy_rows: the same bits on every run, for any batch, and zero rows are not read", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const Weights w_t = make_weights(DType::Q8_0, 256, 1000, 600);
  const DeviceWeights dw = to_device(*cuda, w_t);
  auto rows = tc::test::random_tokens(900, 601, 1000);
  auto a = sparse_activations(4 * rows.size(), 602);
  // A bad index whose activation is zero for every token must not be read.
  rows[17] = 1 << 30;
  for (int64_t t = 0; t < 4; ++t) a[static_cast<size_t>(t) * rows.size() + 17] = 0.0f;
  const auto first = run_axpy_rows(*cuda, dw, a, 4, rows);
  for (float v : first) REQUIRE(std::isfinite(v));
  REQUIRE(same_bits(run_axpy_rows(*cuda, dw, a, 4, rows), first));
  for (int64_t t = 0; t < 4; ++t) {
    const std::vector<float> at(a.begin() + t * rows.size(), a.begin() + (t + 1) * rows.size());
    const auto alone = run_axpy_rows(*cuda, dw, at, 1, rows);
    REQUIRE(same_bits(alone, std::vector<float>(first.begin() + t * 256, first.begin() + (t + 1) * 256)));
  }
}
