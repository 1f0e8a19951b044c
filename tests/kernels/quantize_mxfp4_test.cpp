// MXFP4 quantize_row / dequantize_row against float64 references: the
// block layout decoded from hand-built blocks (every exponent byte), the
// power-of-two scale and nearest-level choice on fresh random data of many
// magnitudes, exact grid values and ties. The checks every block type
// shares are in quantize_test.cpp; the byte-exact comparison with ggml in
// tests/oracle/quantize_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;

// The E2M1 values (not doubled) of codes 0-15: sign bit 3, then 2 exponent
// bits and 1 mantissa bit, as the OCP MX spec defines them.
double e2m1_value(int code) {
  const int exponent = (code >> 1) & 3;
  const int mantissa = code & 1;
  const double magnitude = exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
  return (code & 8) != 0 ? -magnitude : magnitude;
}

std::vector<BlockMXFP4> quantize_blocks(const std::vector<float>& x) {
  std::vector<BlockMXFP4> q(x.size() / kQK_MXFP4);
  std::memset(q.data(), 0xA5, q.size() * sizeof(BlockMXFP4));  // poisoned
  quantize_row(DType::MXFP4, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> dequantize_blocks(const std::vector<BlockMXFP4>& q) {
  std::vector<float> y(q.size() * kQK_MXFP4, std::nanf(""));  // poisoned
  dequantize_row(DType::MXFP4, q.data(), y.data(), static_cast<int64_t>(y.size()));
  return y;
}

int code_of(const BlockMXFP4& blk, int j) { return j < 16 ? blk.qs[j] & 0x0f : blk.qs[j - 16] >> 4; }

// Each block's exponent is floor(log2 amax) + 125 (amax in [4, 8) times the
// E8M0 scale 2^(e - 127)), and each element decodes to a level of the
// block's grid 2^(e - 127) * E2M1 nearest to it (float64 brute force).
void check_nearest_on_grid(const std::vector<float>& x) {
  const auto q = quantize_blocks(x);
  const auto y = dequantize_blocks(q);
  for (size_t b = 0; b < q.size(); ++b) {
    double amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(static_cast<double>(x[b * 32 + j])));
    INFO("block " << b << " amax " << amax << " e " << int{q[b].e});
    REQUIRE(amax > 0);
    const int k = static_cast<int>(std::floor(std::log2(amax)));
    // f32 log2 may round an amax just below 2^(k + 1) up to k + 1.
    const bool near_power = amax >= std::ldexp(1.0 - 0x1p-20, k + 1);
    REQUIRE((q[b].e == k + 125 || (near_power && q[b].e == k + 126)));
    const double scale = std::ldexp(1.0, q[b].e - 127);
    for (int j = 0; j < 32; ++j) {
      const double xi = x[b * 32 + j];
      double nearest = INFINITY;
      for (int c = 0; c < 16; ++c) nearest = std::fmin(nearest, std::fabs(scale * e2m1_value(c) - xi));
      INFO("element " << j << " x " << xi << " y " << y[b * 32 + j]);
      REQUIRE(static_cast<double>(y[b * 32 + j]) == scale * e2m1_value(code_of(q[b], j)));
      REQUIRE(std::fabs(y[b * 32 + j] - xi) <= nearest + 1e-6 * std::fabs(xi));
    }
  }
}

}  // namespace

TEST_CASE("MXFP4 blocks decode as 2^(e - 127) times the E2M1 value of each nibble", "[quantize][mxfp4]") {
  CHECK(sizeof(BlockMXFP4) == 17);
  CHECK(offsetof(BlockMXFP4, qs) == 1);
  CHECK(row_bytes(DType::MXFP4, 256) == 8 * 17);
  CHECK(dtype_name(DType::MXFP4) == "mxfp4");
  CHECK(dtype_from_id(39) == DType::MXFP4);
  CHECK(dtype_from_name("MXFP4") == DType::MXFP4);
  for (int c = 0; c < 16; ++c) CHECK(kMXFP4Values[c] == 2 * e2m1_value(c));
  // Every exponent byte (255 included: 2^128 / 2, no NaN), random nibbles;
  // from e = 252 the larger levels overflow f32 to +-inf, as in ggml.
  std::mt19937 rng(41);
  std::vector<BlockMXFP4> blocks(256);
  for (int b = 0; b < 256; ++b) {
    blocks[b].e = static_cast<uint8_t>(b);
    for (auto& v : blocks[b].qs) v = static_cast<uint8_t>(rng());
  }
  const auto y = dequantize_blocks(blocks);
  for (int b = 0; b < 256; ++b) {
    INFO("e " << b);
    REQUIRE(static_cast<double>(e8m0_to_f32_half(static_cast<uint8_t>(b))) == std::ldexp(1.0, b - 128));
    for (int j = 0; j < 32; ++j) {
      double expected = std::ldexp(e2m1_value(code_of(blocks[b], j)), b - 127);
      if (std::fabs(expected) > std::numeric_limits<float>::max()) expected = std::copysign(INFINITY, expected);
      INFO("element " << j);
      REQUIRE(static_cast<double>(y[b * 32 + j]) == expected);
    }
  }
}

TEST_CASE("MXFP4 picks the power-of-two scale of the block maximum and the nearest level", "[quantize][mxfp4]") {
  SECTION("gaussian rows of several blocks") { check_nearest_on_grid(tc::test::random_floats(64 * 32, 42, 1.0f)); }
  SECTION("weight-sized values") { check_nearest_on_grid(tc::test::random_floats(64 * 32, 43, 0.02f)); }
  SECTION("outliers") {
    auto x = tc::test::random_floats(64 * 32, 44, 0.1f);
    for (size_t i = 3; i < x.size(); i += 29) x[i] *= -200.0f;
    check_nearest_on_grid(x);
  }
  SECTION("one-signed blocks") {
    auto x = tc::test::random_floats(64 * 32, 45, 1.0f);
    for (auto& v : x) v = std::fabs(v);
    check_nearest_on_grid(x);
    for (auto& v : x) v = -v;
    check_nearest_on_grid(x);
  }
  SECTION("magnitudes far outside f16's range") {
    check_nearest_on_grid(tc::test::random_floats(64 * 32, 46, 1e-30f));
    check_nearest_on_grid(tc::test::random_floats(64 * 32, 47, 1e30f));
  }
  SECTION("constant blocks") {
    std::vector<float> x;
    for (float c : {0.75f, -0.3f, 12.5f, -2.0f, -1e-3f, 4e-5f, 5.0f, -7.5f}) x.insert(x.end(), 32, c);
    check_nearest_on_grid(x);
  }
}

TEST_CASE("MXFP4 reproduces values on its grid exactly and breaks ties toward the smaller magnitude",
          "[quantize][mxfp4]") {
  std::mt19937 rng(48);
  std::uniform_int_distribution<int> code(0, 15);
  std::uniform_int_distribution<int> exponent(-100, 100);
  // Each block holds +-6 * 2^s (the top level, which fixes the scale at
  // 2^s) and random levels times 2^s.
  std::vector<float> x(16 * 32);
  for (size_t b = 0; b < 16; ++b) {
    const int s = exponent(rng);
    for (size_t j = 0; j < 32; ++j) {
      const int c = j == b % 32 ? (b % 2 == 0 ? 7 : 15) : code(rng);
      x[b * 32 + j] = static_cast<float>(std::ldexp(e2m1_value(c), s));
    }
  }
  CHECK(dequantize_blocks(quantize_blocks(x)) == x);

  // max 6: the scale is 1, the levels 0, 0.5, 1, 1.5, 2, 3, 4, 6. Midpoints
  // go to the level of smaller magnitude, -0.25 to +0 (code 0, not 8).
  std::vector<float> ties(32, 0.0f);
  const float in[] = {6.0f, 0.25f, -0.25f, 1.25f, -1.75f, 2.5f, -3.5f, 5.0f, -5.0f, -0.0f, 5.9f, -6.0f};
  const float out[] = {6.0f, 0.0f, 0.0f, 1.0f, -1.5f, 2.0f, -3.0f, 4.0f, -4.0f, 0.0f, 6.0f, -6.0f};
  std::copy(std::begin(in), std::end(in), ties.begin());
  const auto q = quantize_blocks(ties);
  CHECK(int{q[0].e} == 127);  // floor(log2 6) - 2 + 127
  const auto y = dequantize_blocks(q);
  for (size_t j = 0; j < std::size(in); ++j) {
    INFO("x " << in[j]);
    CHECK(y[j] == out[j]);
    if (out[j] == 0.0f) CHECK(!std::signbit(y[j]));
  }
  CHECK(code_of(q[0], 2) == 0);
  CHECK(code_of(q[0], 9) == 0);
}
