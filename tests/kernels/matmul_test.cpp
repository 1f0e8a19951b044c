// matmul for every weight dtype, shape and ISA variant against a float64
// reference over the dequantized weights; bit-identical results for any
// thread count, any token batching and padded rows (batch invariance: a
// row alone equals the same row at any position of batches of 2-64, on
// every kernel path); the activation quantization every variant shares;
// the variant chosen at run time.
#include <atomic>
#include <new>

#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "tests/kernels/weight_fixtures.h"
#include "tests/test_util.h"

// Counts heap allocations (this test binary's operator new) to check that a
// warmed-up matmul allocates nothing.
std::atomic<int64_t> g_allocations{0};

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t al) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using namespace tc::kernels;
namespace detail = tc::kernels::detail;
using tc::test::make_weights;
using tc::test::Weights;

constexpr auto& kDTypes = tc::test::kWeightDTypes;
std::vector<const detail::MatmulIsa*> variants() { return tc::test::matmul_variants("matmul"); }

// Relative f32 rounding slack for any dtype, against sum |w| * |x|.
constexpr double kFloatTolerance = 1e-5;




std::vector<float> make_x(int64_t n_tokens, int64_t n_in, uint64_t seed) {
  return tc::test::random_floats(static_cast<size_t>(n_tokens * n_in), seed);
}

// y = W x in float64, with the error each output may carry: f32 rounding
// (kFloatTolerance * sum |w||x|) plus what preparing the activations may
// cost (activation_error_bound: int8 blocks for quantized weights, f16 for
// F16 weights).
struct Reference {
  std::vector<double> y, tol;
  std::vector<double> float_tol;  // the f32 rounding part of tol
};

Reference reference(const Weights& w, const std::vector<float>& x, int64_t n_tokens) {
  Reference ref;
  ref.y.resize(static_cast<size_t>(n_tokens * w.n_rows));
  ref.tol.resize(ref.y.size());
  ref.float_tol.resize(ref.y.size());
  double max_ratio = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x.data() + t * w.n_cols;
    for (int64_t r = 0; r < w.n_rows; ++r) {
      const double* wr = w.values.data() + r * w.n_cols;
      double y = 0, abs = 0;
      for (int64_t i = 0; i < w.n_cols; ++i) {
        y += wr[i] * xt[i];
        abs += std::fabs(wr[i] * xt[i]);
      }
      const double prepared = tc::test::activation_error_bound(w, r, xt);
      abs += prepared;
      const auto i = static_cast<size_t>(t * w.n_rows + r);
      ref.y[i] = y;
      ref.float_tol[i] = kFloatTolerance * abs + 1e-30;
      ref.tol[i] = prepared * (1 + 1e-4) + ref.float_tol[i];
      // The bound must stay tight enough to catch real mistakes.
      max_ratio = std::fmax(max_ratio, ref.tol[i] / abs);
    }
  }
  // (Rows of one 32-element block spread the ratio wider: q5_1 at n_in 32
  // reached 0.0302 over 300 rows x 64 tokens.)
  REQUIRE(max_ratio < (w.n_cols <= 32 ? 0.04 : 0.03));
  return ref;
}

std::vector<float> run(const detail::MatmulIsa& isa, const Weights& w, const std::vector<float>& x, int64_t n_tokens,
                       ThreadPool* pool = nullptr) {
  std::vector<float> y(static_cast<size_t>(n_tokens * w.n_rows), std::nanf(""));  // poisoned
  detail::matmul_with(isa, w.tensor(), x.data(), n_tokens, y.data(), pool);
  return y;
}

std::vector<int64_t> n_in_values(DType dtype) {
  if (tc::test::is_super_block(dtype)) return {256, 768};
  if (dtype_traits(dtype).is_quantized) return {32, 96, 512};
  return {8, 37, 256, 300};
}

// An n_in whose last chunk is partial: for the 32-element formats 43 blocks
// (a last chunk of 11, its last Q4_0 group of 3 ending in a lone block), for
// the super-block formats 5 super-blocks, for the float types 300 inputs.
int64_t ragged_n_in(DType dtype) {
  if (tc::test::is_super_block(dtype)) return 1280;
  if (dtype_traits(dtype).is_quantized) return 43 * 32;
  return 300;
}

std::string label(const detail::MatmulIsa& isa, DType dtype, int64_t n_in, int64_t n_out, int64_t n_tokens) {
  return std::string(isa.name) + " " + std::string(dtype_name(dtype)) + " n_in " + std::to_string(n_in) + " n_out " +
         std::to_string(n_out) + " n_tokens " + std::to_string(n_tokens);
}

void check_against_reference(const Weights& w, int64_t n_tokens, uint64_t seed) {
  INFO(dtype_name(w.dtype) << " n_in " << w.n_cols << " n_out " << w.n_rows << " n_tokens " << n_tokens);
  const auto x = make_x(n_tokens, w.n_cols, seed);
  const Reference ref = reference(w, x, n_tokens);
  std::vector<float> y_portable;
  for (const auto* isa : variants()) {
    INFO(label(*isa, w.dtype, w.n_cols, w.n_rows, n_tokens));
    const auto y = run(*isa, w, x, n_tokens);
    if (y_portable.empty()) y_portable = y;
    // One assertion per run (the first bad output), not one per element.
    size_t bad = y.size();
    for (size_t i = 0; i < y.size() && bad == y.size(); ++i) {
      // Every variant quantizes x to the same bytes, so they differ from the
      // portable path by f32 rounding only.
      if (!std::isfinite(y[i]) || std::fabs(y[i] - ref.y[i]) > ref.tol[i] ||
          std::fabs(static_cast<double>(y[i]) - y_portable[i]) > 2 * ref.float_tol[i]) {
        bad = i;
      }
    }
    if (bad < y.size()) {
      INFO("output " << bad << " got " << y[bad] << " want " << ref.y[bad] << " tolerance " << ref.tol[bad]
                     << " portable " << y_portable[bad] << " float tolerance " << ref.float_tol[bad]);
      REQUIRE(bad == y.size());
    }
  }
}

}  // namespace

TEST_CASE("matmul matches a float64 reference for every dtype, shape and variant", "[kernels][matmul]") {
  uint64_t seed = 1;
  for (DType dtype : kDTypes) {
    for (int64_t n_in : n_in_values(dtype)) {
      for (int64_t n_out : {1, 3, 37, 300}) {
        const Weights w = make_weights(dtype, n_in, n_out, seed++);
        for (int64_t n_tokens : {1, 2, 3, 7, 8, 17, 64}) {
          if (n_out == 300 && n_tokens > 8 && n_in > 300) continue;  // keep the suite fast
          if (n_in > 1000 && (n_out > 37 || (n_tokens > 3 && n_tokens != 64))) continue;
          check_against_reference(w, n_tokens, seed++);
        }
      }
    }
  }
}

TEST_CASE("matmul in GEMM order (many tokens, long rows) matches the reference", "[kernels][matmul]") {
  uint64_t seed = 100;
  for (DType dtype : kDTypes) {
    const Weights w = make_weights(dtype, 4096, 21, seed++);
    check_against_reference(w, 64, seed++);
  }
}

TEST_CASE("matmul gives the same bits for 1, 2, 3 and 4 threads", "[kernels][matmul]") {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3), ThreadPool(4)};
  uint64_t seed = 200;
  for (DType dtype : kDTypes) {
    for (auto [n_in, n_out, n_tokens] :
         {std::tuple<int64_t, int64_t, int64_t>{512, 300, 1}, {512, 300, 7}, {4096, 75, 64}}) {
      const Weights w = make_weights(dtype, n_in, n_out, seed++);
      const auto x = make_x(n_tokens, n_in, seed++);
      for (const auto* isa : variants()) {
        INFO(label(*isa, dtype, n_in, n_out, n_tokens));
        const auto y1 = run(*isa, w, x, n_tokens, &pools[0]);
        for (int p = 1; p < 4; ++p) {
          INFO("threads " << pools[p].n_threads());
          const auto yp = run(*isa, w, x, n_tokens, &pools[p]);
          REQUIRE(std::memcmp(y1.data(), yp.data(), y1.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("matmul of a batch gives the same bits as one token at a time", "[kernels][matmul]") {
  // GEMV (one token), small batches and GEMM order (64 tokens of 4096, and
  // 160 of 1280: a last chunk shorter than the others) all sum each output in
  // the same order.
  uint64_t seed = 300;
  for (DType dtype : kDTypes) {
    for (auto [n_in, n_tokens] : {std::pair<int64_t, int64_t>{512, 7}, {4096, 64}, {1280, 160}}) {
      const Weights w = make_weights(dtype, n_in, 19, seed++);
      const auto x = make_x(n_tokens, n_in, seed++);
      for (const auto* isa : variants()) {
        INFO(label(*isa, dtype, n_in, w.n_rows, n_tokens));
        const auto batch = run(*isa, w, x, n_tokens);
        for (int64_t t = 0; t < n_tokens; ++t) {
          const std::vector<float> xt(x.begin() + t * n_in, x.begin() + (t + 1) * n_in);
          const auto one = run(*isa, w, xt, 1);
          INFO("token " << t);
          REQUIRE(std::memcmp(one.data(), batch.data() + t * w.n_rows, one.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("float and bf16 weights: rows over several tile blocks with a partial last step, in GEMM order", "[kernels][matmul]") {
  // 4100 inputs: 513 steps of 8, the last one partial and even; 4092: 512,
  // the last one partial and odd. F16 sums whole rows in one chain
  // (matmul_x86_f16.h) that the partial step ends; decode takes rows in
  // pairs, so 5 and 7 rows leave a row alone, and partial row tiles,
  // 40 tokens a partial token tile and several token blocks. BF16 (chunks of
  // 512, steps of 32): a last chunk of 4 inputs, one partial step (4100), or
  // of 508, a partial 16th step (4092), in AVX2's 5 x 2 panel tiles.
  uint64_t seed = 1700;
  for (DType dtype : {DType::F16, DType::F32, DType::BF16}) {
    for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{4100, 5}, {4100, 7}, {4092, 7}}) {
      const Weights w = make_weights(dtype, n_in, n_out, seed++);
      check_against_reference(w, 40, seed++);
      const int64_t n_tokens = 40;
      const auto x = make_x(n_tokens, w.n_cols, seed++);
      for (const auto* isa : variants()) {
        INFO(label(*isa, dtype, w.n_cols, n_out, n_tokens));
        const auto batch = run(*isa, w, x, n_tokens);
        for (int64_t t : {int64_t{0}, int64_t{20}, n_tokens - 1}) {
          const std::vector<float> xt(x.begin() + t * w.n_cols, x.begin() + (t + 1) * w.n_cols);
          const auto one = run(*isa, w, xt, 1);
          INFO("token " << t);
          REQUIRE(std::memcmp(one.data(), batch.data() + t * n_out, one.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("matmul reads padded rows (row_bytes above the packed size)", "[kernels][matmul]") {
  uint64_t seed = 400;
  for (DType dtype : kDTypes) {
    const int64_t n_in = tc::test::is_super_block(dtype) ? 512 : 96;
    const Weights packed = make_weights(dtype, n_in, 37, seed);
    const Weights padded = make_weights(dtype, n_in, 37, seed, 64 + 6);
    seed++;
    for (int64_t n_tokens : {1, 5}) {
      const auto x = make_x(n_tokens, n_in, seed++);
      for (const auto* isa : variants()) {
        INFO(label(*isa, dtype, n_in, 37, n_tokens));
        const auto a = run(*isa, packed, x, n_tokens);
        const auto b = run(*isa, padded, x, n_tokens);
        REQUIRE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("every variant quantizes activations to the same bytes", "[kernels][matmul]") {
  // Q8_0 stands for every Q8_32 weight type, Q4_K for every Q8_256 one.
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K}) {
    // An odd block count: Q4_0's nibble order leaves the last block alone.
    // F16, BF16: not a multiple of 8 or 32 (the SIMD loop's tail, a partial step).
    const int64_t n_in = dtype == DType::Q4_K                             ? 1280
                         : dtype == DType::F16 || dtype == DType::BF16 ? 1024 + 35
                                                                       : 1024 + 32;
    const detail::XLayout xl = detail::x_layout(dtype, n_in);
    auto x = make_x(3, n_in, 500);
    // An all-zero block, a tiny block and one huge value among small ones.
    for (int64_t i = 0; i < 256; ++i) x[static_cast<size_t>(i)] = 0.0f;
    for (int64_t i = 256; i < 512; ++i) x[static_cast<size_t>(i)] *= 1e-35f;
    x[600] = 3e4f;
    // F16: beyond its range (clamped to 65504), halfway cases and f16
    // subnormals; the last element sits in the SIMD tail.
    x[601] = -1e6f;
    x[602] = 1.0f + 0x1p-11f;
    x[603] = 1.0f + 3 * 0x1p-11f;
    x[604] = 3e-6f;
    x[605] = -0x1p-25f;
    // BF16: f32 subnormals (+-0 in bf16) and bf16's smallest normal.
    x[606] = 1e-39f;
    x[607] = -3e-39f;
    x[608] = 0x1p-126f;
    x[static_cast<size_t>(n_in - 1)] = 70000.0f;
    // The kernels want the 64-byte alignment of matmul's scratch buffer.
    const auto n_bytes = static_cast<size_t>(xl.stride * 3);
    std::vector<std::byte> want_buf(n_bytes + 64, std::byte{0x5a}), got_buf(n_bytes + 64);
    auto aligned = [](std::vector<std::byte>& v) {
      return v.data() + (64 - reinterpret_cast<uintptr_t>(v.data()) % 64) % 64;
    };
    std::byte* want = aligned(want_buf);
    detail::isa_portable().quantize_x(xl, x.data(), 0, 3, want);
    if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16) {
      CHECK(reinterpret_cast<const float*>(want + xl.d_offset)[0] == 0.0f);
    }
    if (dtype == DType::F16) {
      // The f16 copy is round-to-nearest-even of the clamped value; the f32
      // copy holds the same numbers.
      const auto* h = reinterpret_cast<const uint16_t*>(want);
      const auto* xf = reinterpret_cast<const float*>(want + xl.f32_offset);
      CHECK(h[600] == f32_to_f16(3e4f));
      CHECK(xf[601] == -65504.0f);
      CHECK(xf[602] == 1.0f);                  // a tie rounds to the even neighbour
      CHECK(xf[603] == 1.0f + 4 * 0x1p-11f);  // ... which is up here
      CHECK(h[604] == f32_to_f16(3e-6f));
      CHECK(xf[static_cast<size_t>(n_in - 1)] == 65504.0f);
      for (int64_t i = 0; i < n_in; ++i) REQUIRE(xf[i] == f16_to_f32(h[i]));
    }
    if (dtype == DType::BF16) {
      // Round-to-nearest-even bf16 of x, +-0 below bf16's normal range,
      // zeros up to the step; xs holds the same values, each step's odd
      // inputs first.
      const auto* hb = reinterpret_cast<const uint16_t*>(want);
      const auto* xs = reinterpret_cast<const float*>(want + xl.f32_offset);
      CHECK(hb[600] == f32_to_bf16(3e4f));
      CHECK(bf16_to_f32(hb[602]) == 1.0f);  // 1 + 2^-11 is below half a bf16 ulp
      CHECK(hb[606] == 0);       // an f32 subnormal: +0
      CHECK(hb[607] == 0x8000);  // ... negative: -0
      CHECK(hb[608] == 0x0080);  // bf16's smallest normal stays
      CHECK(detail::bf16_for_matmul(3.4e38f) == 0x7f7f);  // rounds past the largest finite bf16: clamped
      CHECK(detail::bf16_for_matmul(-3.4e38f) == 0xff7f);
      const int64_t n32 = (n_in + 31) / 32 * 32;
      for (int64_t i = 0; i < n32; ++i) {
        INFO("input " << i);
        REQUIRE(hb[i] == (i < n_in ? detail::bf16_for_matmul(x[static_cast<size_t>(i)]) : 0));
        const int64_t step = i / 32, e = i % 32;
        REQUIRE(xs[32 * step + (e % 2 == 1 ? e / 2 : 16 + e / 2)] == bf16_to_f32(hb[i]));
      }
    }
    for (const auto* isa : variants()) {
      INFO(isa->name << " " << dtype_name(dtype));
      std::fill(got_buf.begin(), got_buf.end(), std::byte{0x5a});
      std::byte* got = aligned(got_buf);
      isa->quantize_x(xl, x.data(), 0, 3, got);
      REQUIRE(std::memcmp(got, want, n_bytes) == 0);
    }
  }
}

TEST_CASE("matmul runs the best variant this CPU supports unless told a lower one", "[kernels][matmul]") {
  const std::string best = detail::isa_for_request(nullptr).name;
  INFO("best variant " << best);
  CHECK(detail::isa_supported("portable"));
  CHECK_FALSE(detail::isa_supported("sse9"));
  CHECK(std::string(detail::isa_for_request("portable").name) == "portable");
  CHECK(std::string(detail::isa_for_request("").name) == best);
  if (detail::isa_supported("avx2")) CHECK(std::string(detail::isa_for_request("avx2").name) == "avx2");
  if (!detail::isa_supported("avx512")) CHECK(std::string(detail::isa_for_request("avx512").name) == best);
  // matmul() uses the variant matmul_isa() names.
  const std::string chosen = matmul_isa();
  REQUIRE(detail::isa_supported(chosen.c_str()));
  const Weights w = make_weights(DType::Q4_0, 256, 40, 600);
  const auto x = make_x(3, 256, 601);
  ThreadPool pool(2);
  std::vector<float> y(3 * 40, std::nanf(""));
  matmul(w.tensor(), x.data(), 3, y.data(), pool);
  REQUIRE(y == run(detail::isa_for_request(chosen.c_str()), w, x, 3));
  std::vector<float> y_ref(3 * 40, std::nanf(""));
  matmul_reference(w.tensor(), x.data(), 3, y_ref.data());
  REQUIRE(y_ref == run(detail::isa_portable(), w, x, 3));
}

TEST_CASE("the avx512, avx512bf16 and amx variants give the same bits as avx2", "[kernels][matmul]") {
  // Same summation order and the same exact int32 lanes (vpdpbusd instead of
  // vpmaddubsw + vpmaddwd, or an AMX tile's block sums); for BF16 the same
  // FMA steps, one vdpbf16ps each in avx512bf16: no tolerance.
  if (!detail::isa_supported("avx512")) {
    WARN("this CPU has no AVX-512 (F/BW/VL/VNNI): avx512 vs avx2 not checked");
    return;
  }
  // (An array, not a vector: GCC 12 misreads this file's operator new
  // override around a push_back.)
  const detail::MatmulIsa* wide[3] = {detail::isa_avx512(), nullptr, nullptr};
  if (detail::isa_supported("avx512bf16")) {
    wide[1] = detail::isa_avx512bf16();
  } else {
    WARN("this CPU has no AVX512_BF16: avx512bf16 vs avx2 not checked");
  }
  if (detail::isa_supported("amx")) {
    wide[2] = detail::isa_amx();
  } else {
    WARN("this CPU (or OS) has no AMX int8 tiles: amx vs avx2 not checked");
  }
  // n_out 37 = two 16-row lane tiles (avx512's Q4_0 GEMM) + 5 rows; 29 =
  // one 16-row tile + one 8-row tile + 5 rows: every tile kind of both.
  // n_in 300 (BF16 and the float types): a partial last chunk and step;
  // with 120 tokens in GEMM order (avx512's F16 row-pair tiles), else in
  // the small-batch tiles. amx's Q8_0 tiles take 16 tokens: 64 is 4 whole
  // groups, 20, 120 and 200 end in 4 or 8 left over (200: two 128-token
  // blocks; 20 in GEMV order). The super-block types' rows of 512, 1280
  // and 1792 end in a chunk of 2, 1 and 3 super-blocks.
  uint64_t seed = 700;
  for (DType dtype : kDTypes) {
    for (int64_t n_out : {37, 29}) {
      for (auto [n_in, n_tokens] : {std::pair<int64_t, int64_t>{512, 1}, {512, 7}, {512, 20}, {4096, 64}, {ragged_n_in(dtype), 1},
                                    {ragged_n_in(dtype), 5}, {ragged_n_in(dtype), 120}, {ragged_n_in(dtype), 200},
                                    {ragged_n_in(dtype) + 512, 1}, {ragged_n_in(dtype) + 512, 33}}) {
        const Weights w = make_weights(dtype, n_in, n_out, seed++);
        const auto x = make_x(n_tokens, n_in, seed++);
        const auto want = run(*detail::isa_avx2(), w, x, n_tokens);
        for (const auto* isa : wide) {
          if (isa == nullptr) continue;
          INFO(label(*isa, dtype, n_in, n_out, n_tokens));
          REQUIRE(run(*isa, w, x, n_tokens) == want);
        }
      }
    }
  }
}

TEST_CASE("BF16 weights: subnormal weights and activations count as zero in every x86 variant", "[kernels][matmul]") {
  // vdpbf16ps reads bf16 subnormals as zero and flushes subnormal results;
  // the FMA variants run with MXCSR's DAZ and FTZ to match. Weights and x
  // near the bottom of the range make subnormal inputs, products and sums.
  std::vector<const detail::MatmulIsa*> x86;
  for (const auto* isa : variants()) {
    if (isa != &detail::isa_portable()) x86.push_back(isa);
  }
  if (x86.size() < 2) {
    WARN("fewer than two x86 variants here: BF16 subnormal handling not compared");
    return;
  }
  constexpr int64_t n_in = 96, n_out = 19;
  Weights w = make_weights(DType::BF16, n_in, n_out, 900);
  for (int64_t r = 0; r < n_out; ++r) {
    auto* row = reinterpret_cast<uint16_t*>(w.bytes.data() + r * w.row_bytes);
    // Every third weight a bf16 subnormal (exponent field 0), the rest about
    // +-2^-63, mixed signs.
    for (int64_t c = 0; c < n_in; ++c) {
      const auto mantissa = static_cast<uint16_t>((7 * c + r) % 127 + 1);
      const auto exponent = static_cast<uint16_t>(c % 3 == 0 ? 0 : 127 - 63);
      row[c] = static_cast<uint16_t>((c + r) % 2 == 1 ? 0x8000 : 0) | static_cast<uint16_t>(exponent << 7) | mantissa;
    }
  }
  for (int64_t n_tokens : {1, 3, 40}) {
    // x about 2^-63 (products and sums near f32's smallest normal 2^-126,
    // some below it), every fourth an f32 subnormal (+-0 in bf16).
    auto x = make_x(n_tokens, n_in, 901);
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 4 == 0 ? x[i] * 1e-39f : x[i] * 0x1p-63f;
    const auto want = run(*x86.front(), w, x, n_tokens);
    bool any_nonzero = false;
    for (float v : want) any_nonzero = any_nonzero || v != 0.0f;
    for (const auto* isa : x86) {
      INFO(isa->name << " n_tokens " << n_tokens);
      REQUIRE(run(*isa, w, x, n_tokens) == want);
    }
    INFO("some outputs must survive the flushing, or the comparison is vacuous");
    CHECK(any_nonzero);
  }
}

TEST_CASE("matmul allocates nothing once its scratch has grown", "[kernels][matmul]") {
  ThreadPool pool(2);
  for (DType dtype : kDTypes) {
    const Weights w = make_weights(dtype, 512, 64, 800);
    const auto x = make_x(64, 512, 801);
    std::vector<float> y(64 * 64);
    for (int64_t n_tokens : {64, 1, 7}) {
      INFO(dtype_name(dtype) << " n_tokens " << n_tokens);
      matmul(w.tensor(), x.data(), n_tokens, y.data(), pool);  // grows the scratch
      const int64_t before = g_allocations.load();
      matmul(w.tensor(), x.data(), n_tokens, y.data(), pool);
      const int64_t after = g_allocations.load();
      REQUIRE(after == before);
    }
  }
}

TEST_CASE("matmul batch invariance: a row's bits do not depend on the batch around it", "[kernels][matmul][batch]") {
  // The server batches sequences: row i's output must be bit-identical
  // whether it runs alone or at any position inside batches of any size,
  // with other (fresh random) rows beside it, on any kernel path (GEMV,
  // small batch, GEMM order) and thread count.
  ThreadPool pool(2);
  uint64_t seed = 900;
  for (DType dtype : kDTypes) {
    for (int64_t n_in : {int64_t{512}, int64_t{4096}, ragged_n_in(dtype)}) {
      const Weights w = make_weights(dtype, n_in, 45, seed++);
      const auto row = make_x(1, n_in, seed++);
      for (const auto* isa : variants()) {
        const auto alone = run(*isa, w, row, 1);
        const auto alone_pool = run(*isa, w, row, 1, &pool);
        INFO(label(*isa, dtype, n_in, w.n_rows, 1));
        REQUIRE(std::memcmp(alone.data(), alone_pool.data(), alone.size() * sizeof(float)) == 0);
        for (int64_t n_tokens : {2, 3, 4, 5, 8, 9, 16, 33, 64}) {
          if (isa == &detail::isa_portable() && n_in > 512 && n_tokens > 9) continue;  // keep the suite fast
          for (int64_t pos : {int64_t{0}, n_tokens / 2, n_tokens - 1}) {
            auto x = make_x(n_tokens, n_in, seed++);
            std::copy(row.begin(), row.end(), x.begin() + pos * n_in);
            const auto y = run(*isa, w, x, n_tokens, n_tokens % 2 == 0 ? &pool : nullptr);
            INFO(label(*isa, dtype, n_in, w.n_rows, n_tokens) << " position " << pos);
            REQUIRE(std::memcmp(alone.data(), y.data() + pos * w.n_rows, alone.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}
