// The CPU ops other architectures than llama need, against float64
// references on fresh random data: layer_norm, rope in Neox mode with
// frequency factors and attn_factor, YaRN, the GeGLU/GELU/ReLU and gpt-oss activations,
// add_bias, scale and softcap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;

constexpr double kEpsF32 = 0x1p-23;  // f32 machine epsilon (one ulp at 1.0)

std::vector<float> poisoned(size_t n) { return std::vector<float>(n, std::nanf("")); }

// gelu's tanh approximation's argument u, and the function 0.5 x (1 +
// tanh(u)) written as x / (1 + exp(-2u)): the same value, without the
// cancellation of 1 + tanh(u) for x << 0 (where the result is tiny).
double gelu_u64(double x) { return std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x); }
double gelu64(double x) { return x / (1.0 + std::exp(-2.0 * gelu_u64(x))); }

}  // namespace

TEST_CASE("layer_norm matches the float64 formula", "[kernels][ops]") {
  const int64_t n = GENERATE(int64_t{4096}, int64_t{1000}, int64_t{7});
  const float offset = GENERATE(0.0f, 50.0f);  // a large mean: the centring must not lose the spread
  const bool in_place = GENERATE(false, true);
  const bool with_bias = GENERATE(true, false);  // Cohere's LayerNorms have none (a null bias)
  INFO("n " << n << " offset " << offset << " in_place " << in_place << " with_bias " << with_bias);
  const int64_t n_rows = 3;
  auto x = tc::test::random_floats(static_cast<size_t>(n_rows * n), 121, 2.0f);
  for (auto& v : x) v += offset;
  auto weight = tc::test::random_floats(static_cast<size_t>(n), 122);
  for (auto& w : weight) w += 1.0f;
  auto bias = tc::test::random_floats(static_cast<size_t>(n), 123);
  if (!with_bias) std::fill(bias.begin(), bias.end(), 0.0f);
  const float eps = 1e-5f;

  auto y = in_place ? x : poisoned(x.size());
  layer_norm(in_place ? y.data() : x.data(), weight.data(), with_bias ? bias.data() : nullptr, n_rows, n, eps, y.data());

  for (int64_t r = 0; r < n_rows; ++r) {
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean /= static_cast<double>(n);
    double var = 0;
    for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    var /= static_cast<double>(n);
    const double inv_sd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double normed = (x[r * n + i] - mean) * inv_sd * weight[i];
      const double ref = normed + bias[i];
      // The f32 mean is off by half an ulp of |mean| (amplified by inv_sd
      // when the mean is large against the spread), each f32 step rounds
      // once; the bias add rounds once more on the scale of |normed| + |bias|.
      const double tol = 8 * kEpsF32 / 2 * (std::fabs(normed) + std::fabs(bias[i])) +
                         2 * kEpsF32 * std::fabs(mean) * inv_sd * std::fabs(weight[i]);
      INFO("row " << r << " i " << i << " got " << y[r * n + i] << " ref " << ref);
      REQUIRE(std::fabs(y[r * n + i] - ref) <= tol);
    }
  }
}

TEST_CASE("rope in Neox mode with frequency factors and attn_factor as the float64 formula", "[kernels][ops]") {
  const RopeMode mode = GENERATE(RopeMode::Normal, RopeMode::Neox);
  const bool with_factors = GENERATE(false, true);
  const double attn_factor = GENERATE(1.0, 1.19);
  INFO("neox " << (mode == RopeMode::Neox) << " factors " << with_factors << " attn_factor " << attn_factor);
  const int64_t n_head = 3, head_dim = 80, n_rot = 64;
  std::vector<float> factors(static_cast<size_t>(n_rot / 2));
  const auto noise = tc::test::random_floats(factors.size(), 131);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 4.0f * std::fabs(noise[i]);  // Llama-3.1-like: 1..~12
  const std::vector<int32_t> positions = {0, 1, 7, 513, 4000, 32767};
  const auto n_tokens = static_cast<int64_t>(positions.size());
  const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_head * head_dim), 132);
  auto y = x;
  RopeParams params{n_rot, 500000.0, 0.5, mode, with_factors ? factors.data() : nullptr, attn_factor};
  rope(y.data(), n_tokens, n_head, head_dim, positions.data(), params);

  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t base = (t * n_head + h) * head_dim;
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        double theta = positions[t] * 0.5 / std::pow(500000.0, static_cast<double>(2 * i) / static_cast<double>(n_rot));
        if (with_factors) theta /= factors[static_cast<size_t>(i)];
        const int64_t d0 = mode == RopeMode::Neox ? i : 2 * i;
        const int64_t d1 = mode == RopeMode::Neox ? i + n_rot / 2 : 2 * i + 1;
        const double x0 = x[base + d0], x1 = x[base + d1];
        const double ref0 = (x0 * std::cos(theta) - x1 * std::sin(theta)) * attn_factor;
        const double ref1 = (x0 * std::sin(theta) + x1 * std::cos(theta)) * attn_factor;
        const double tol = 2 * kEpsF32 * std::hypot(x0, x1) * attn_factor;
        INFO("t " << t << " h " << h << " pair " << i);
        REQUIRE(std::fabs(y[base + d0] - ref0) <= tol);
        REQUIRE(std::fabs(y[base + d1] - ref1) <= tol);
      }
      for (int64_t d = n_rot; d < head_dim; ++d) REQUIRE(y[base + d] == x[base + d]);  // pass through
    }
  }
}

TEST_CASE("yarn_corr_dims gives the pairs where the rotation counts over the original context cross beta", "[kernels][ops]") {
  // gpt-oss's: 64 rotated dims, 4096 original positions, base 150000.
  double low = -1, high = -1;
  yarn_corr_dims(64, 4096, 150000.0, 32.0, 1.0, low, high);
  // The pair i whose wavelength 2 pi base^(2i/n_rot) fits n_ctx_orig / beta times.
  const auto dim = [](double beta) { return 64.0 * std::log(4096.0 / (beta * 2.0 * std::numbers::pi)) / (2.0 * std::log(150000.0)); };
  CHECK(low == std::floor(dim(32.0)));
  CHECK(high == std::ceil(dim(1.0)));
  CHECK(low == 8.0);
  CHECK(high == 18.0);
  // Clamped to [0, n_rot - 1]: a tiny original context and a huge one.
  yarn_corr_dims(64, 2, 10000.0, 32.0, 1.0, low, high);
  CHECK(low == 0.0);
  yarn_corr_dims(16, 1 << 24, 10.0, 32.0, 1.0, low, high);
  CHECK(high == 15.0);
}

TEST_CASE("rope with YaRN as the float64 formula", "[kernels][ops]") {
  const RopeMode mode = GENERATE(RopeMode::Normal, RopeMode::Neox);
  const double ext_factor = GENERATE(1.0, 0.5);
  const double freq_scale = GENERATE(1.0 / 32.0, 0.25);
  INFO("neox " << (mode == RopeMode::Neox) << " ext_factor " << ext_factor << " freq_scale " << freq_scale);
  const int64_t n_head = 2, head_dim = 64, n_rot = 64;
  const double base = 150000.0, attn_factor = 1.1;
  const std::vector<int32_t> positions = {0, 3, 100, 4095, 60000};
  const auto n_tokens = static_cast<int64_t>(positions.size());
  const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_head * head_dim), 133);
  auto y = x;
  RopeParams params{n_rot, base, freq_scale, mode, nullptr, attn_factor};
  params.ext_factor = ext_factor;
  params.corr_low = 8.0;
  params.corr_high = 18.0;
  rope(y.data(), n_tokens, n_head, head_dim, positions.data(), params);

  // YaRN: pairs below corr_low keep their unscaled angle (extrapolate), pairs
  // above corr_high are interpolated by freq_scale, a linear ramp between; the
  // magnitude grows by 0.1 ln(1 / freq_scale).
  const double magnitude = attn_factor * (1.0 + 0.1 * std::log(1.0 / freq_scale));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t row = (t * n_head + h) * head_dim;
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        const double unscaled = positions[t] / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(n_rot));
        const double ramp = 1.0 - std::clamp((static_cast<double>(i) - 8.0) / 10.0, 0.0, 1.0);
        const double mix = ramp * ext_factor;
        const double theta = unscaled * freq_scale * (1.0 - mix) + unscaled * mix;
        const int64_t d0 = mode == RopeMode::Neox ? i : 2 * i;
        const int64_t d1 = mode == RopeMode::Neox ? i + n_rot / 2 : 2 * i + 1;
        const double x0 = x[row + d0], x1 = x[row + d1];
        const double ref0 = (x0 * std::cos(theta) - x1 * std::sin(theta)) * magnitude;
        const double ref1 = (x0 * std::sin(theta) + x1 * std::cos(theta)) * magnitude;
        // An angle of up to 6e4 rad is exact to ~1e-11 in double: f32 rounding only.
        const double tol = 2 * kEpsF32 * std::hypot(x0, x1) * magnitude;
        INFO("t " << t << " h " << h << " pair " << i);
        REQUIRE(std::fabs(y[row + d0] - ref0) <= tol);
        REQUIRE(std::fabs(y[row + d1] - ref1) <= tol);
      }
    }
  }
}

TEST_CASE("ffn_activation: GeGLU, GELU, ReLU and ReLU squared against float64", "[kernels][ops]") {
  auto gate = tc::test::random_floats(2048, 141, 3.0f);
  const float specials[] = {-1e4f, -30.0f, -9.0f, -1e-30f, 0.0f, 1e-30f, 9.0f, 30.0f, 1e4f};
  for (size_t i = 0; i < std::size(specials); ++i) gate[i * 11] = specials[i];
  const auto up = tc::test::random_floats(gate.size(), 142, 2.0f);
  const auto n = static_cast<int64_t>(gate.size());
  for (const Activation act : {Activation::GeGLU, Activation::Gelu, Activation::Relu, Activation::ReluSquared}) {
    INFO("activation " << static_cast<int>(act));
    auto out = poisoned(gate.size());
    // The ungated ones must not read up: null.
    ffn_activation(act, gate.data(), is_gated(act) ? up.data() : nullptr, n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      const double g = gate[i];
      INFO("gate " << g);
      if (act == Activation::Relu) {
        REQUIRE(out[i] == (gate[i] > 0.0f ? gate[i] : 0.0f));
        continue;
      }
      if (act == Activation::ReluSquared) {
        // One rounded product of the relu: the float64 square rounded once
        // (1e4 squared and 1e-30 squared included: 1e8 and 0 after rounding).
        REQUIRE(out[i] == (g > 0.0 ? static_cast<float>(g * g) : 0.0f));
        continue;
      }
      const double ref = gelu64(g) * (act == Activation::GeGLU ? up[i] : 1.0);
      // Relative to the value: exp's argument -2u is rounded a few times
      // (a relative error of a few ulps, so an error in exp(-2u) of a few
      // ulps times |2u|), then exp, the quotient and the gate's product.
      // Results under f32's normal range keep only an absolute 2^-126.
      const double two_u = std::fabs(2.0 * gelu_u64(g));
      REQUIRE(std::fabs(out[i] - ref) <= (4 * two_u + 8) * kEpsF32 * std::fabs(ref) + 0x1p-126);
    }
  }
  CHECK(is_gated(Activation::GeGLU));
  CHECK_FALSE(is_gated(Activation::Gelu));
  CHECK_FALSE(is_gated(Activation::ReluSquared));
}

TEST_CASE("ffn_activation: gpt-oss's clamped SwiGLU against float64", "[kernels][ops]") {
  // Gates and ups of sd 6: many beyond the clamp at 7 (and -7 for up).
  auto gate = tc::test::random_floats(4096, 143, 6.0f);
  auto up = tc::test::random_floats(gate.size(), 144, 6.0f);
  const float specials[] = {-1e4f, -90.0f, -7.0f, -1e-30f, 0.0f, 6.999f, 7.0f, 7.001f, 1e4f};
  for (size_t i = 0; i < std::size(specials); ++i) gate[i * 13] = up[i * 13 + 1] = specials[i];
  const auto n = static_cast<int64_t>(gate.size());
  auto out = poisoned(gate.size());
  ffn_activation(Activation::SwiGluOai, gate.data(), up.data(), n, out.data());
  int n_clamped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = std::min(static_cast<double>(gate[i]), 7.0);
    const double u = std::clamp(static_cast<double>(up[i]), -7.0, 7.0);
    n_clamped += gate[i] > 7.0f || std::fabs(up[i]) > 7.0f ? 1 : 0;
    const double ref = g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
    INFO("gate " << gate[i] << " up " << up[i] << " got " << out[i] << " ref " << ref);
    // expf, the quotient, (u + 1) (absolute error of an ulp of |u| + 1) and
    // the product: a few ulps of |g| (|u| + 1), the size of the terms.
    REQUIRE(std::fabs(out[i] - ref) <= 8 * kEpsF32 * std::fabs(g) * (std::fabs(u) + 1.0));
  }
  CHECK(n_clamped > 100);
  CHECK(is_gated(Activation::SwiGluOai));
}

TEST_CASE("add_bias, scale and softcap against float64", "[kernels][ops]") {
  const int64_t n_rows = 5, n = 333;
  const auto y0 = tc::test::random_floats(static_cast<size_t>(n_rows * n), 151, 40.0f);
  const auto bias = tc::test::random_floats(static_cast<size_t>(n), 152);

  auto y = y0;
  add_bias(y.data(), bias.data(), n_rows, n);
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t i = 0; i < n; ++i) REQUIRE(y[r * n + i] == static_cast<float>(static_cast<double>(y0[r * n + i]) + bias[i]));
  }

  y = y0;
  scale(y.data(), n_rows * n, 0.37f);
  for (size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == static_cast<float>(static_cast<double>(y0[i]) * 0.37f));

  for (const float cap : {30.0f, 5.0f}) {
    y = y0;
    softcap(y.data(), n_rows * n, cap);
    int n_bent = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double ref = cap * std::tanh(static_cast<double>(y0[i]) / cap);
      INFO("x " << y0[i] << " cap " << cap);
      REQUIRE(std::fabs(y[i] - ref) <= 4 * kEpsF32 * std::fabs(ref) + 1e-30);
      REQUIRE(std::fabs(y[i]) <= cap);
      n_bent += std::fabs(y0[i]) > cap;
    }
    if (cap == 5.0f) REQUIRE(n_bent > static_cast<int>(y.size()) / 2);  // most values saturate: the cap is exercised
  }
}
