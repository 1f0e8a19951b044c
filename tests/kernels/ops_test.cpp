// The CPU ops of ops.h other than attention against float64 references:
// get_rows for every weight dtype, rms_norm, rope (long positions, partial
// rotation, scaled frequencies), the three FFN activations, and the f16
// rounding of store_f16. Attention is in ops_attention_test.cpp.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/check.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "kernels/tensor.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;

constexpr double kEpsF32 = 0x1p-23;  // f32 machine epsilon (one ulp at 1.0)

std::vector<float> poisoned(size_t n) { return std::vector<float>(n, std::nanf("")); }

}  // namespace

TEST_CASE("get_rows dequantizes the requested rows of every weight dtype", "[kernels][ops]") {
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K,
                               DType::Q6_K);
  INFO("dtype " << dtype_name(dtype));
  const int64_t n_embd = 512;
  const int64_t n_vocab = 37;
  // Rows padded past their packed size, so the op must step by row_bytes.
  const int64_t packed = row_bytes(dtype, n_embd);
  const int64_t stride = packed + 64;
  std::vector<uint8_t> storage(static_cast<size_t>(stride * n_vocab), 0xA5);
  const auto values = tc::test::random_floats(static_cast<size_t>(n_embd * n_vocab), 11);
  for (int64_t r = 0; r < n_vocab; ++r) {
    quantize_row(dtype, values.data() + r * n_embd, storage.data() + r * stride, n_embd);
  }
  Tensor table;
  table.data = storage.data();
  table.dtype = dtype;
  table.ne = {n_embd, n_vocab, 1, 1};
  table.row_bytes = stride;

  const std::vector<int32_t> ids = {5, 0, 36, 5, 17};  // repeats, first and last row
  const auto n_tokens = static_cast<int64_t>(ids.size());
  auto out = poisoned(static_cast<size_t>(n_tokens * n_embd));
  get_rows(table, ids.data(), n_tokens, out.data());

  // The reference is the row's own dequantization (checked against float64
  // in quantize_test.cpp); a copy must reproduce it bit for bit.
  std::vector<float> expected(static_cast<size_t>(n_embd));
  for (int64_t t = 0; t < n_tokens; ++t) {
    dequantize_row(dtype, storage.data() + ids[t] * stride, expected.data(), n_embd);
    REQUIRE(std::memcmp(out.data() + t * n_embd, expected.data(), expected.size() * sizeof(float)) == 0);
    if (dtype == DType::F32) {
      REQUIRE(std::memcmp(out.data() + t * n_embd, values.data() + ids[t] * n_embd, expected.size() * sizeof(float)) ==
              0);
    }
  }

  const int32_t bad_id = static_cast<int32_t>(n_vocab);
  REQUIRE_THROWS_AS(get_rows(table, &bad_id, 1, out.data()), tc::InvariantError);
}

TEST_CASE("rms_norm matches the float64 formula", "[kernels][ops]") {
  const int64_t n = GENERATE(int64_t{4096}, int64_t{1000}, int64_t{7});
  const float scale = GENERATE(1.0f, 300.0f, 1e-4f);  // 1e-4: mean square far below eps
  const float eps = GENERATE(1e-5f, 1e-6f);
  const bool in_place = GENERATE(false, true);
  INFO("n " << n << " scale " << scale << " eps " << eps << " in_place " << in_place);
  const int64_t n_rows = 3;
  const auto x = tc::test::random_floats(static_cast<size_t>(n_rows * n), 21, scale);
  auto weight = tc::test::random_floats(static_cast<size_t>(n), 22);
  for (auto& w : weight) w += 1.0f;

  auto y = in_place ? x : poisoned(x.size());
  rms_norm(in_place ? y.data() : x.data(), weight.data(), n_rows, n, eps, y.data());

  for (int64_t r = 0; r < n_rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[r * n + i]) * x[r * n + i];
    const double inv_rms = 1.0 / std::sqrt(sum / static_cast<double>(n) + static_cast<double>(eps));
    for (int64_t i = 0; i < n; ++i) {
      const double ref = static_cast<double>(x[r * n + i]) * inv_rms * weight[i];
      // Each f32 step rounds once (half an ulp, 2^-24 relative): the squares
      // and the mean (together ~2, halved by sqrt), mean + eps, sqrt, the
      // reciprocal, x * scale, * weight: under 6 half-ulps; 8 allowed.
      REQUIRE(std::fabs(y[r * n + i] - ref) <= 8 * kEpsF32 / 2 * std::fabs(ref));
    }
  }
}

namespace {

struct RopeCase {
  int64_t head_dim;
  int64_t n_rot;
  double freq_base;
  double freq_scale;
};

}  // namespace

TEST_CASE("rope rotates adjacent pairs as the float64 rotation formula", "[kernels][ops]") {
  const RopeCase c = GENERATE(RopeCase{128, 128, 10000.0, 1.0}, RopeCase{128, 64, 10000.0, 1.0},
                              RopeCase{128, 128, 500000.0, 0.25}, RopeCase{64, 64, 500000.0, 1.0},
                              RopeCase{80, 32, 1000000.0, 0.25});
  INFO("head_dim " << c.head_dim << " n_rot " << c.n_rot << " base " << c.freq_base << " scale " << c.freq_scale);
  const int64_t n_head = 3;
  const std::vector<int32_t> positions = {0, 1, 7, 513, 4000, 4001, 32767};
  const auto n_tokens = static_cast<int64_t>(positions.size());
  const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_head * c.head_dim), 31);
  auto y = x;
  RopeParams params;
  params.n_rot = c.n_rot;
  params.freq_base = c.freq_base;
  params.freq_scale = c.freq_scale;
  rope(y.data(), n_tokens, n_head, c.head_dim, positions.data(), params);

  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t base = (t * n_head + h) * c.head_dim;
      for (int64_t i = 0; i < c.n_rot / 2; ++i) {
        // theta_i = p * freq_scale / base^(2i / n_rot), the angle of pair i.
        const double theta = positions[t] * c.freq_scale /
                             std::pow(c.freq_base, static_cast<double>(2 * i) / static_cast<double>(c.n_rot));
        const double x0 = x[base + 2 * i];
        const double x1 = x[base + 2 * i + 1];
        const double ref0 = x0 * std::cos(theta) - x1 * std::sin(theta);
        const double ref1 = x0 * std::sin(theta) + x1 * std::cos(theta);
        // The op rotates in double and rounds each output once (half an ulp
        // of the output); the angles agree to ~1e-12 rad even at 32767, so
        // 2 ulps of the pair's length is ample. f32 angles as llama.cpp's
        // (off by ~1e-4 rad at 4000) would not pass.
        const double tol = 2 * kEpsF32 * std::hypot(x0, x1);
        INFO("t " << t << " h " << h << " pair " << i);
        REQUIRE(std::fabs(y[base + 2 * i] - ref0) <= tol);
        REQUIRE(std::fabs(y[base + 2 * i + 1] - ref1) <= tol);
      }
      for (int64_t d = c.n_rot; d < c.head_dim; ++d) REQUIRE(y[base + d] == x[base + d]);  // pass through
      if (positions[t] == 0) {
        for (int64_t d = 0; d < c.head_dim; ++d) REQUIRE(y[base + d] == x[base + d]);  // angle 0: identity
      }
    }
  }
}

TEST_CASE("ffn_activation: SwiGLU, ReGLU and DReLU against float64", "[kernels][ops]") {
  auto gate = tc::test::random_floats(2048, 41, 3.0f);
  const auto up = tc::test::random_floats(gate.size(), 42, 2.0f);
  // Large magnitudes: exp(-g) overflowing f32 (g < -88.7), saturated silu.
  const float specials[] = {-1e4f, -1000.0f, -104.0f, -89.0f, -88.0f, -30.0f, -1e-30f,
                            1e-30f, 20.0f, 88.0f,      100.0f,  1e4f,   -0.5f,  0.5f};
  for (size_t i = 0; i < std::size(specials); ++i) gate[i * 7] = specials[i];
  const auto n = static_cast<int64_t>(gate.size());

  SECTION("SwiGLU") {
    const bool in_place = GENERATE(false, true);
    auto out = in_place ? gate : poisoned(gate.size());
    ffn_activation(Activation::SwiGLU, in_place ? out.data() : gate.data(), up.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      const double g = gate[i];
      const double ref = g / (1.0 + std::exp(-g)) * up[i];
      INFO("gate " << gate[i] << " up " << up[i]);
      // expf within 1 ulp, then three rounded f32 steps (+, /, *): 5 ulps
      // relative. Below g = -88.73 exp(-g) overflows f32 and the formula (as
      // ggml's) gives -0 where the true |silu(g)| <= 88.73 e^-88.73 < 3e-37:
      // allowed as an absolute error of 3e-37 * |up|.
      REQUIRE(std::fabs(out[i] - ref) <= 5 * kEpsF32 * std::fabs(ref) + 3e-37 * std::fabs(up[i]));
    }
  }
  SECTION("SwiGLU: a value's bits do not depend on where it sits (vector body or padded tail)") {
    auto whole = poisoned(gate.size());
    ffn_activation(Activation::SwiGLU, gate.data(), up.data(), n, whole.data());
    for (const int64_t offset : {1, 3, 7, 13}) {
      for (const int64_t len : {1, 5, 8, 13, 29}) {
        auto part = poisoned(static_cast<size_t>(len));
        ffn_activation(Activation::SwiGLU, gate.data() + offset, up.data() + offset, len, part.data());
        for (int64_t i = 0; i < len; ++i) {
          INFO("offset " << offset << " len " << len << " i " << i);
          REQUIRE(std::bit_cast<uint32_t>(part[i]) == std::bit_cast<uint32_t>(whole[offset + i]));
        }
      }
    }
  }
  SECTION("ReGLU") {
    auto out = poisoned(gate.size());
    ffn_activation(Activation::ReGLU, gate.data(), up.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      // One rounding of an exact double product: equal to the f32 product.
      const double ref = std::max(0.0, static_cast<double>(gate[i])) * up[i];
      REQUIRE(out[i] == static_cast<float>(ref));
    }
  }
  SECTION("DReLU") {
    auto out = poisoned(gate.size());
    ffn_activation(Activation::DReLU, gate.data(), up.data(), n, out.data());
    int n_nonzero = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::max(0.0, static_cast<double>(gate[i])) * std::max(0.0, static_cast<double>(up[i]));
      REQUIRE(out[i] == static_cast<float>(ref));
      n_nonzero += out[i] != 0.0f;
    }
    REQUIRE(n_nonzero > n / 8);  // both positive about a quarter of the time
  }
}

namespace {

// Nearest f16 to x with ties to even, computed in double: the f16 grid near
// x has spacing 2^(e-10) (e = exponent of x, at least -14 for subnormals);
// nearbyint rounds half to even in the default rounding mode. Returns the
// f16 value as a double (inf when it rounds past 65504).
double nearest_f16(float x) {
  const double ax = std::fabs(static_cast<double>(x));
  const int e = ax == 0 ? -14 : std::max(-14, std::ilogb(ax));
  const double ulp = std::ldexp(1.0, e - 10);
  double r = std::nearbyint(ax / ulp) * ulp;
  if (r > 65504.0) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, static_cast<double>(x));
}

}  // namespace

TEST_CASE("store_f16 rounds to the nearest f16, ties to even", "[kernels][ops]") {
  SECTION("hand-picked values") {
    struct Case {
      float in;
      uint16_t bits;
    };
    const Case cases[] = {
        {1.0f, 0x3C00},
        {1.0f + 0x1p-11f, 0x3C00},         // tie between 0x3C00 and 0x3C01: even
        {1.0f + 3 * 0x1p-11f, 0x3C02},     // tie between 0x3C01 and 0x3C02: even
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3C01},  // just above the tie
        {-2.5f, 0xC100},
        {65504.0f, 0x7BFF},
        {65519.0f, 0x7BFF},
        {65520.0f, 0x7C00},                // halfway to 65536: rounds to even, which overflows
        {-1e6f, 0xFC00},
        {0x1p-24f, 0x0001},                // smallest subnormal
        {0x1p-25f, 0x0000},                // tie between 0 and 0x0001: even
        {3 * 0x1p-25f, 0x0002},            // tie between 0x0001 and 0x0002: even
        {0x1p-14f, 0x0400},                // smallest normal
        {-0.0f, 0x8000},
    };
    std::vector<float> src;
    for (const auto& c : cases) src.push_back(c.in);
    std::vector<uint16_t> dst(src.size() + 1, 0xFFFF);  // poisoned; the extra slot must survive
    store_f16(src.data(), static_cast<int64_t>(src.size()), dst.data());
    for (size_t i = 0; i < src.size(); ++i) {
      INFO("input " << src[i]);
      REQUIRE(dst[i] == cases[i].bits);
    }
    REQUIRE(dst.back() == 0xFFFF);
  }
  SECTION("random values across the f16 range") {
    const float scale = GENERATE(1.0f, 1e-5f, 3e4f);  // normal, subnormal, overflowing
    const auto src = tc::test::random_floats(4096, 51, scale);
    std::vector<uint16_t> dst(src.size(), 0xFFFF);
    store_f16(src.data(), static_cast<int64_t>(src.size()), dst.data());
    for (size_t i = 0; i < src.size(); ++i) {
      INFO("input " << src[i] << " bits " << dst[i]);
      const double got = f16_to_f32(dst[i]);
      REQUIRE(got == nearest_f16(src[i]));
      REQUIRE(std::signbit(got) == std::signbit(src[i]));
    }
  }
}
