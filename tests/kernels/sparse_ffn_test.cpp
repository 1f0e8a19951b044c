// The sparse FFN kernels (kernels/cpu/sparse_ffn.h) for every weight dtype
// and ISA variant: the row-gathered GEMV against a float64 reference and bit
// for bit against matmul's rows; the axpy down projection against a float64
// reference and a dense matmul of the transposed matrix; exact-zero
// activations skipped (rows not even read); the same bits for any thread
// count, column split and token batch; the CpuBackend entry points.
#include "kernels/cpu/sparse_ffn.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/check.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/sparse_ffn_kernels.h"
#include "kernels/dtype.h"
#include "tests/kernels/weight_fixtures.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;
namespace detail = tc::kernels::detail;
using tc::test::make_weights;
using tc::test::Weights;

constexpr auto& kDTypes = tc::test::kWeightDTypes;
std::vector<const detail::MatmulIsa*> variants() { return tc::test::matmul_variants("sparse FFN"); }

// Relative f32 rounding slack of the GEMV (matmul_test's), against sum |w| * |x|.
constexpr double kGemvTolerance = 1e-5;
constexpr double kF32Epsilon = 1.0 / (1 << 24);  // unit roundoff




// An active set of `count` distinct rows of [0, n_neurons), ascending or
// shuffled.
std::vector<int32_t> active_set(int64_t n_neurons, int64_t count, bool sorted, uint64_t seed) {
  std::vector<int32_t> all(static_cast<size_t>(n_neurons));
  std::iota(all.begin(), all.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(count));
  if (sorted) std::sort(all.begin(), all.end());
  return all;
}

struct RowSet {
  std::string name;
  std::vector<int32_t> rows;
};

// Empty, one row, 10% (not a multiple of any SIMD width here), all rows in
// order, all rows shuffled, and a shuffled 10%.
std::vector<RowSet> row_sets(int64_t n_neurons, uint64_t seed) {
  const int64_t tenth = (n_neurons + 9) / 10;
  return {{"empty", {}},
          {"one row", active_set(n_neurons, 1, true, seed)},
          {"10% sorted", active_set(n_neurons, tenth, true, seed + 1)},
          {"10% unsorted", active_set(n_neurons, tenth, false, seed + 2)},
          {"100% sorted", active_set(n_neurons, n_neurons, true, seed + 3)},
          {"100% unsorted", active_set(n_neurons, n_neurons, false, seed + 4)}};
}

std::vector<float> make_x(int64_t n_tokens, int64_t n_in, uint64_t seed) {
  return tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed);
}

// Activations f32 [n_tokens, n_rows] as after a ReLU: about 40% exact zeros,
// and one row zero for every token (its weights need not be read).
std::vector<float> make_activations(int64_t n_tokens, int64_t n_rows, uint64_t seed) {
  auto a = tc::test::random_floats(static_cast<size_t>(n_tokens * n_rows), seed);
  for (auto& v : a) v = v < -0.25f ? 0.0f : v;
  if (n_rows > 2) {
    for (int64_t t = 0; t < n_tokens; ++t) a[static_cast<size_t>(t * n_rows + n_rows / 2)] = 0.0f;
  }
  return a;
}

std::string label(const char* isa, DType dtype, int64_t n_cols, const std::string& set, int64_t n_tokens) {
  return std::string(isa) + " " + std::string(dtype_name(dtype)) + " n_cols " + std::to_string(n_cols) + " rows " +
         set + " n_tokens " + std::to_string(n_tokens);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> run_matmul_rows(const detail::MatmulIsa& isa, const Weights& w, const std::vector<float>& x,
                                   int64_t n_tokens, const std::vector<int32_t>& rows, ThreadPool* pool = nullptr) {
  const auto n_rows = static_cast<int64_t>(rows.size());
  std::vector<float> y(static_cast<size_t>(n_tokens * n_rows), std::nanf(""));  // poisoned
  detail::matmul_rows_with(isa, w.tensor(), x.data(), n_tokens, rows.data(), n_rows, y.data(), pool);
  return y;
}

std::vector<float> run_axpy(const detail::AxpyIsa& isa, const Weights& w_t, const std::vector<float>& a,
                            int64_t n_tokens, const std::vector<int32_t>& rows, ThreadPool* pool = nullptr) {
  std::vector<float> y(static_cast<size_t>(n_tokens * w_t.n_cols), std::nanf(""));  // poisoned
  detail::axpy_rows_with(isa, w_t.tensor(), a.data(), n_tokens, rows.data(), static_cast<int64_t>(rows.size()),
                         y.data(), pool);
  return y;
}

// The first output outside want +- tol (or not finite), or y.size().
size_t first_bad(const std::vector<float>& y, const std::vector<double>& want, const std::vector<double>& tol) {
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i]) || std::fabs(y[i] - want[i]) > tol[i]) return i;
  }
  return y.size();
}

// GEMV reference over the gathered rows, with matmul_test's error model:
// f32 rounding plus what preparing the activations may cost
// (activation_error_bound).
void gemv_reference(const Weights& w, const std::vector<float>& x, int64_t n_tokens, const std::vector<int32_t>& rows,
                    std::vector<double>& want, std::vector<double>& tol) {
  const auto n_rows = static_cast<int64_t>(rows.size());
  want.assign(static_cast<size_t>(n_tokens * n_rows), 0.0);
  tol.assign(want.size(), 0.0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x.data() + t * w.n_cols;
    for (int64_t k = 0; k < n_rows; ++k) {
      double y = 0, abs = 0;
      for (int64_t c = 0; c < w.n_cols; ++c) {
        y += w.at(rows[k], c) * xt[c];
        abs += std::fabs(w.at(rows[k], c) * xt[c]);
      }
      const double prepared = tc::test::activation_error_bound(w, rows[k], xt);
      const auto i = static_cast<size_t>(t * n_rows + k);
      want[i] = y;
      tol[i] = prepared * (1 + 1e-4) + kGemvTolerance * (abs + prepared) + 1e-30;
    }
  }
}

// axpy reference: y[t, j] = sum_k a[t, k] * Wt[rows[k], j] in float64. A
// sum of n f32 terms, each rounded once and added in some fixed order, is
// off by at most (n + 1) u sum |terms| (u = 2^-24). abs: sum |terms|.
void axpy_reference(const Weights& w_t, const std::vector<float>& a, int64_t n_tokens, const std::vector<int32_t>& rows,
                    std::vector<double>& want, std::vector<double>& tol, std::vector<double>* abs_sums = nullptr) {
  const auto n_rows = static_cast<int64_t>(rows.size());
  const int64_t n_out = w_t.n_cols;
  want.assign(static_cast<size_t>(n_tokens * n_out), 0.0);
  tol.assign(want.size(), 0.0);
  if (abs_sums != nullptr) abs_sums->assign(want.size(), 0.0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    int64_t n_terms = 0;
    for (int64_t k = 0; k < n_rows; ++k) n_terms += a[static_cast<size_t>(t * n_rows + k)] != 0.0f;
    for (int64_t j = 0; j < n_out; ++j) {
      double y = 0, abs = 0;
      for (int64_t k = 0; k < n_rows; ++k) {
        const double term = static_cast<double>(a[static_cast<size_t>(t * n_rows + k)]) * w_t.at(rows[k], j);
        y += term;
        abs += std::fabs(term);
      }
      const auto i = static_cast<size_t>(t * n_out + j);
      want[i] = y;
      tol[i] = static_cast<double>(n_terms + 2) * kF32Epsilon * abs + 1e-30;
      if (abs_sums != nullptr) (*abs_sums)[i] = abs;
    }
  }
}

// Column counts per dtype: whole blocks, not multiples of 256 (or of the
// 64-column tile) where the dtype allows.
std::vector<int64_t> n_cols_values(DType dtype) {
  if (tc::test::is_super_block(dtype)) return {256, 768};
  if (dtype_traits(dtype).is_quantized) return {32, 96, 544};
  return {8, 37, 300};
}

constexpr int64_t kNeurons = 83;  // prime: neither it nor its 10% (9) is a multiple of a SIMD width

}  // namespace

TEST_CASE("sparse FFN: matmul_rows equals matmul's rows bit for bit and a float64 reference", "[kernels][sparse]") {
  uint64_t seed = 1;
  for (DType dtype : kDTypes) {
    for (int64_t n_in : n_cols_values(dtype)) {
      const Weights w = make_weights(dtype, n_in, kNeurons, seed++);
      const auto sets = row_sets(kNeurons, seed++);
      for (int64_t n_tokens = 1; n_tokens <= 8; ++n_tokens) {
        const auto x = make_x(n_tokens, n_in, seed++);
        for (const auto* isa : variants()) {
          std::vector<float> dense(static_cast<size_t>(n_tokens * kNeurons), std::nanf(""));
          detail::matmul_with(*isa, w.tensor(), x.data(), n_tokens, dense.data(), nullptr);
          for (const auto& set : sets) {
            INFO(label(isa->name, dtype, n_in, set.name, n_tokens));
            const auto y = run_matmul_rows(*isa, w, x, n_tokens, set.rows);
            const auto n_rows = static_cast<int64_t>(set.rows.size());
            for (int64_t t = 0; t < n_tokens; ++t) {
              for (int64_t k = 0; k < n_rows; ++k) {
                const float got = y[static_cast<size_t>(t * n_rows + k)];
                const float want = dense[static_cast<size_t>(t * kNeurons + set.rows[static_cast<size_t>(k)])];
                if (std::memcmp(&got, &want, sizeof got) != 0) {
                  INFO("token " << t << " k " << k << " got " << got << " matmul " << want);
                  REQUIRE(false);
                }
              }
            }
            std::vector<double> want, tol;
            gemv_reference(w, x, n_tokens, set.rows, want, tol);
            const size_t bad = first_bad(y, want, tol);
            if (bad < y.size()) {
              INFO("output " << bad << " got " << y[bad] << " want " << want[bad] << " tolerance " << tol[bad]);
              REQUIRE(bad == y.size());
            }
          }
        }
      }
    }
  }
}

TEST_CASE("sparse FFN: matmul_rows on 4096-wide rows (decode, small batch) equals matmul's rows", "[kernels][sparse]") {
  // Long rows run the prefetching decode loops across gathered rows.
  uint64_t seed = 100;
  ThreadPool pool(2);
  for (DType dtype : kDTypes) {
    const Weights w = make_weights(dtype, 4096, 40, seed++, 64 + 6);
    const auto rows = active_set(40, 13, false, seed++);
    for (int64_t n_tokens : {1, 3, 8}) {
      const auto x = make_x(n_tokens, 4096, seed++);
      for (const auto* isa : variants()) {
        if (isa == &detail::isa_portable() && n_tokens > 1) continue;  // keep the suite fast
        INFO(label(isa->name, dtype, 4096, "13 of 40 unsorted", n_tokens));
        std::vector<float> dense(static_cast<size_t>(n_tokens * 40));
        detail::matmul_with(*isa, w.tensor(), x.data(), n_tokens, dense.data(), &pool);
        const auto y = run_matmul_rows(*isa, w, x, n_tokens, rows, &pool);
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (size_t k = 0; k < rows.size(); ++k) {
            REQUIRE(std::memcmp(&y[t * rows.size() + k], &dense[static_cast<size_t>(t * 40 + rows[k])],
                                sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("sparse FFN: axpy_rows matches a float64 reference for every dtype, row set and token count",
          "[kernels][sparse]") {
  uint64_t seed = 200;
  for (DType dtype : kDTypes) {
    for (int64_t n_out : n_cols_values(dtype)) {
      const Weights w_t = make_weights(dtype, n_out, kNeurons, seed++);
      const auto sets = row_sets(kNeurons, seed++);
      for (int64_t n_tokens = 1; n_tokens <= 8; ++n_tokens) {
        for (const auto& set : sets) {
          const auto a = make_activations(n_tokens, static_cast<int64_t>(set.rows.size()), seed++);
          std::vector<double> want, tol;
          axpy_reference(w_t, a, n_tokens, set.rows, want, tol);
          std::vector<float> y_portable;
          for (const auto* isa : variants()) {
            INFO(label(isa->name, dtype, n_out, set.name, n_tokens));
            const auto y = run_axpy(detail::axpy_isa_for(*isa), w_t, a, n_tokens, set.rows);
            if (y_portable.empty()) y_portable = y;
            const size_t bad = first_bad(y, want, tol);
            if (bad < y.size()) {
              INFO("output " << bad << " got " << y[bad] << " want " << want[bad] << " tolerance " << tol[bad]
                             << " portable " << y_portable[bad]);
              REQUIRE(bad == y.size());
            }
          }
        }
      }
    }
  }
}

TEST_CASE("sparse FFN: axpy_rows over every neuron matches a dense matmul of the transposed matrix",
          "[kernels][sparse]") {
  // W_t [n_neurons][n_out] transposed into f32 W [n_out][n_neurons] (the
  // exact dequantized values), so matmul(W, a) computes the same sums with
  // exact f32 activations, in another order.
  uint64_t seed = 300;
  ThreadPool pool(2);
  for (DType dtype : kDTypes) {
    const int64_t n_out = tc::test::is_super_block(dtype) ? 512 : 288;
    const int64_t n_neurons = 203;
    const Weights w_t = make_weights(dtype, n_out, n_neurons, seed++);
    std::vector<float> w(static_cast<size_t>(n_out * n_neurons));
    for (int64_t i = 0; i < n_neurons; ++i) {
      for (int64_t j = 0; j < n_out; ++j) w[static_cast<size_t>(j * n_neurons + i)] = static_cast<float>(w_t.at(i, j));
    }
    const Tensor dense = Tensor::matrix(w.data(), DType::F32, n_neurons, n_out);
    const auto all = active_set(n_neurons, n_neurons, true, seed++);
    for (int64_t n_tokens : {1, 4}) {
      const auto a = make_activations(n_tokens, n_neurons, seed++);
      std::vector<float> y_dense(static_cast<size_t>(n_tokens * n_out));
      matmul(dense, a.data(), n_tokens, y_dense.data(), pool);
      std::vector<double> want, tol, abs;
      axpy_reference(w_t, a, n_tokens, all, want, tol, &abs);
      for (const auto* isa : variants()) {
        INFO(label(isa->name, dtype, n_out, "100% sorted", n_tokens));
        const auto y = run_axpy(detail::axpy_isa_for(*isa), w_t, a, n_tokens, all, &pool);
        // axpy is within tol of the exact sum, matmul within its f32
        // tolerance (matmul_test's).
        size_t bad = y.size();
        for (size_t i = 0; i < y.size() && bad == y.size(); ++i) {
          if (!(std::fabs(static_cast<double>(y[i]) - y_dense[i]) <= tol[i] + kGemvTolerance * abs[i])) bad = i;
        }
        if (bad < y.size()) {
          INFO("output " << bad << " axpy " << y[bad] << " dense matmul " << y_dense[bad] << " exact " << want[bad]);
          REQUIRE(bad == y.size());
        }
      }
    }
  }
}

TEST_CASE("sparse FFN: axpy_rows skips exact-zero activations: the same bits as leaving the rows out",
          "[kernels][sparse]") {
  uint64_t seed = 400;
  for (DType dtype : kDTypes) {
    const int64_t n_out = tc::test::is_super_block(dtype) ? 512 : 96;
    const Weights clean = make_weights(dtype, n_out, kNeurons, seed++);
    for (int64_t n_tokens : {1, 3}) {
      const auto rows = active_set(kNeurons, 40, false, seed++);
      const auto a = make_activations(n_tokens, 40, seed++);
      // The rows that are zero for every token, left out of the set.
      std::vector<int32_t> kept_rows;
      std::vector<float> kept_a;
      std::vector<int32_t> zero_rows;
      for (size_t k = 0; k < rows.size(); ++k) {
        bool any = false;
        for (int64_t t = 0; t < n_tokens; ++t) any = any || a[t * rows.size() + k] != 0.0f;
        (any ? kept_rows : zero_rows).push_back(rows[k]);
      }
      REQUIRE(!zero_rows.empty());
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (size_t k = 0; k < rows.size(); ++k) {
          if (std::find(kept_rows.begin(), kept_rows.end(), rows[k]) != kept_rows.end()) {
            kept_a.push_back(a[t * rows.size() + k]);
          }
        }
      }
      // The weights of those rows poisoned with NaN bytes: reading them
      // would show.
      Weights poisoned = clean;
      for (int32_t r : zero_rows) {
        std::fill_n(poisoned.bytes.begin() + r * poisoned.row_bytes, poisoned.row_bytes, std::byte{0xff});
      }
      for (const auto* isa : variants()) {
        INFO(label(isa->name, dtype, n_out, "40 of 83", n_tokens) << ", " << zero_rows.size() << " zero rows");
        const auto& axpy = detail::axpy_isa_for(*isa);
        const auto y = run_axpy(axpy, clean, a, n_tokens, rows);
        REQUIRE(same_bits(y, run_axpy(axpy, clean, kept_a, n_tokens, kept_rows)));
        REQUIRE(same_bits(y, run_axpy(axpy, poisoned, a, n_tokens, rows)));
      }
    }
  }
}

TEST_CASE("sparse FFN: axpy_rows does not touch the memory of a row whose activation is zero", "[kernels][sparse]") {
  // Row 1 of three lies on a page with no access: any read of it faults.
  const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  for (DType dtype : {DType::F16, DType::Q4_0}) {
    const int64_t n_out = dtype == DType::F16 ? 1024 : 2048;
    REQUIRE(row_bytes(dtype, n_out) <= page);
    void* mem =
        mmap(nullptr, static_cast<size_t>(3 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    auto* bytes = static_cast<std::byte*>(mem);
    const auto src = tc::test::random_floats(static_cast<size_t>(n_out), 500);
    quantize_row(dtype, src.data(), bytes, n_out);
    quantize_row(dtype, src.data(), bytes + 2 * page, n_out);
    REQUIRE(mprotect(bytes + page, static_cast<size_t>(page), PROT_NONE) == 0);
    Tensor w_t = Tensor::matrix(bytes, dtype, n_out, 3);
    w_t.row_bytes = page;
    const std::vector<int32_t> rows = {0, 1, 2};
    ThreadPool pool(2);
    for (int64_t n_tokens : {1, 2}) {
      std::vector<float> a(static_cast<size_t>(3 * n_tokens), 0.5f);
      for (int64_t t = 0; t < n_tokens; ++t) a[static_cast<size_t>(t * 3 + 1)] = 0.0f;
      for (const auto* isa : variants()) {
        INFO(isa->name << " " << dtype_name(dtype) << " n_tokens " << n_tokens);
        std::vector<float> y(static_cast<size_t>(n_tokens * n_out), std::nanf(""));
        detail::axpy_rows_with(detail::axpy_isa_for(*isa), w_t, a.data(), n_tokens, rows.data(), 3, y.data(), &pool);
        std::vector<float> row(static_cast<size_t>(n_out));
        dequantize_row(dtype, bytes, row.data(), n_out);
        for (int64_t j = 0; j < n_out; ++j) REQUIRE(y[static_cast<size_t>(j)] == row[static_cast<size_t>(j)]);
      }
    }
    munmap(mem, static_cast<size_t>(3 * page));
  }
}

TEST_CASE("sparse FFN: the same bits for 1, 2 and 3 threads and any column split", "[kernels][sparse]") {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  std::mt19937_64 rng(600);
  uint64_t seed = 600;
  for (DType dtype : kDTypes) {
    const int64_t n_cols = tc::test::is_super_block(dtype) ? 1280 : 1312;
    const Weights w = make_weights(dtype, n_cols, 150, seed++);
    const auto rows = active_set(150, 47, false, seed++);
    for (int64_t n_tokens : {1, 5}) {
      const auto x = make_x(n_tokens, n_cols, seed++);
      const auto a = make_activations(n_tokens, 47, seed++);
      for (const auto* isa : variants()) {
        INFO(label(isa->name, dtype, n_cols, "47 of 150 unsorted", n_tokens));
        const auto& axpy = detail::axpy_isa_for(*isa);
        const auto gemv1 = run_matmul_rows(*isa, w, x, n_tokens, rows, &pools[0]);
        const auto axpy1 = run_axpy(axpy, w, a, n_tokens, rows, &pools[0]);
        for (int p = 1; p < 3; ++p) {
          INFO("threads " << pools[p].n_threads());
          REQUIRE(same_bits(gemv1, run_matmul_rows(*isa, w, x, n_tokens, rows, &pools[p])));
          REQUIRE(same_bits(axpy1, run_axpy(axpy, w, a, n_tokens, rows, &pools[p])));
        }
        // Random splits of the columns at multiples of the grain, each
        // piece computed on its own.
        detail::AxpyArgs args;
        args.dtype = dtype;
        args.w = w.bytes.data();
        args.row_bytes = w.row_bytes;
        args.n_out = n_cols;
        args.rows = rows.data();
        args.n_rows = 47;
        args.a = a.data();
        args.n_tokens = n_tokens;
        const int64_t grain = detail::axpy_column_grain(dtype);
        for (int split = 0; split < 4; ++split) {
          std::vector<float> y(axpy1.size(), std::nanf(""));
          args.y = y.data();
          for (int64_t j0 = 0; j0 < n_cols;) {
            const int64_t n_grains = 1 + static_cast<int64_t>(rng() % 6);
            const int64_t j1 = std::min(n_cols, j0 + n_grains * grain);
            axpy.compute_columns(args, j0, j1);
            j0 = j1;
          }
          REQUIRE(same_bits(axpy1, y));
        }
      }
    }
  }
}

TEST_CASE("sparse FFN: axpy_rows batch invariance: a token's outputs do not depend on the batch",
          "[kernels][sparse][batch]") {
  // Also past 8 tokens, where the rows are walked once per block of tokens.
  uint64_t seed = 700;
  ThreadPool pool(2);
  for (DType dtype : kDTypes) {
    const int64_t n_out = tc::test::is_super_block(dtype) ? 512 : 160;
    const Weights w_t = make_weights(dtype, n_out, kNeurons, seed++);
    const auto rows = active_set(kNeurons, 30, false, seed++);
    for (int64_t n_tokens : {2, 7, 11}) {
      const auto a = make_activations(n_tokens, 30, seed++);
      for (const auto* isa : variants()) {
        INFO(label(isa->name, dtype, n_out, "30 of 83", n_tokens));
        const auto& axpy = detail::axpy_isa_for(*isa);
        const auto batch = run_axpy(axpy, w_t, a, n_tokens, rows, &pool);
        for (int64_t t = 0; t < n_tokens; ++t) {
          const std::vector<float> at(a.begin() + t * 30, a.begin() + (t + 1) * 30);
          const auto one = run_axpy(axpy, w_t, at, 1, rows);
          INFO("token " << t);
          REQUIRE(std::memcmp(one.data(), batch.data() + t * n_out, one.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("sparse FFN: the avx512 variant gives the same bits as avx2", "[kernels][sparse]") {
  if (!detail::isa_supported("avx512")) {
    WARN("this CPU has no AVX-512 (F/BW/VL/VNNI): avx512 vs avx2 sparse FFN not checked");
    return;
  }
  uint64_t seed = 800;
  for (DType dtype : kDTypes) {
    // 608: four zmm tiles, a ymm tile, a tail. 8800 (the types with zmm
    // tiles): the block scales of a one-token group are converted per chunk
    // of 8192 columns, so a second chunk of 4 tiles follows.
    std::vector<int64_t> widths = {tc::test::is_super_block(dtype) ? 768 : 608};
    for (DType zmm : {DType::F16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1}) {
      if (dtype == zmm) widths.push_back(8800);
    }
    for (int64_t n_cols : widths) {
      const Weights w = make_weights(dtype, n_cols, kNeurons, seed++);
      const auto rows = active_set(kNeurons, 20, false, seed++);
      for (int64_t n_tokens : {1, 6}) {
        const auto x = make_x(n_tokens, n_cols, seed++);
        const auto a = make_activations(n_tokens, 20, seed++);
        INFO(label("avx512", dtype, n_cols, "20 of 83", n_tokens));
        REQUIRE(same_bits(run_matmul_rows(*detail::isa_avx512(), w, x, n_tokens, rows),
                          run_matmul_rows(*detail::isa_avx2(), w, x, n_tokens, rows)));
        REQUIRE(same_bits(run_axpy(*detail::axpy_isa_avx512(), w, a, n_tokens, rows),
                          run_axpy(*detail::axpy_isa_avx2(), w, a, n_tokens, rows)));
      }
    }
  }
}

TEST_CASE("sparse FFN: CpuBackend runs it with matmul's variant and catches bad row indices", "[kernels][sparse]") {
  CpuBackend backend(2);
  const auto& isa = detail::isa_for_request(matmul_isa().c_str());
  const Weights w = make_weights(DType::Q4_0, 256, 40, 900);
  const auto rows = active_set(40, 9, false, 901);
  const auto x = make_x(3, 256, 902);
  const auto a = make_activations(3, 9, 903);
  std::vector<float> y(3 * 9, std::nanf(""));
  backend.matmul_rows(w.tensor(), x.data(), 3, rows.data(), 9, y.data());
  REQUIRE(same_bits(y, run_matmul_rows(isa, w, x, 3, rows)));
  std::vector<float> y_down(3 * 256, std::nanf(""));
  backend.axpy_rows(w.tensor(), a.data(), 3, rows.data(), 9, y_down.data());
  REQUIRE(same_bits(y_down, run_axpy(detail::axpy_isa_for(isa), w, a, 3, rows)));

  std::vector<float> y_ref(3 * 9, std::nanf(""));
  matmul_rows_reference(w.tensor(), x.data(), 3, rows.data(), 9, y_ref.data());
  REQUIRE(same_bits(y_ref, run_matmul_rows(detail::isa_portable(), w, x, 3, rows)));
  std::vector<float> y_down_ref(3 * 256, std::nanf(""));
  axpy_rows_reference(w.tensor(), a.data(), 3, rows.data(), 9, y_down_ref.data());
  REQUIRE(same_bits(y_down_ref, run_axpy(detail::axpy_isa_portable(), w, a, 3, rows)));

  const std::vector<int32_t> bad = {3, 40};
  REQUIRE_THROWS_AS(backend.matmul_rows(w.tensor(), x.data(), 1, bad.data(), 2, y.data()), tc::InvariantError);
  REQUIRE_THROWS_AS(backend.axpy_rows(w.tensor(), a.data(), 1, bad.data(), 2, y_down.data()), tc::InvariantError);
}
