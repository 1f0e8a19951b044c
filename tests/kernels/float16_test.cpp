// f16 and bf16 scalar conversions: exact special values, rounding ties, all
// 65536 f16 patterns, and f32 -> f16/bf16 rounding checked against a float64
// nearest-value reference on fresh random inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/cpu/quantize.h"

namespace {

using tc::kernels::bf16_to_f32;
using tc::kernels::f16_to_f32;
using tc::kernels::f32_to_bf16;
using tc::kernels::f32_to_f16;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The value of an f16 pattern computed from the format's definition in
// float64 (no bit tricks): (-1)^s * 2^(e-15) * (1 + m/1024), subnormals
// 2^-14 * m/1024.
double f16_reference(uint16_t h) {
  const int s = h >> 15;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const double sign = s ? -1.0 : 1.0;
  if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m / 1024.0, -14);
  return sign * std::ldexp(1.0 + m / 1024.0, e - 15);
}

// Checks that `h` is the round-to-nearest-even f16 of finite x, using the
// float64 values of h and its neighbours.
void check_nearest_even_f16(float x, uint16_t h) {
  INFO("x = " << x << " (bits " << std::hex << bits_of(x) << "), f16 " << h << std::dec);
  const double xd = x;
  const double ax = std::fabs(xd);
  // Overflow: |x| >= 65520 (half way from 65504 to 2^16) is inf.
  if (ax >= 65520.0) {
    REQUIRE((h & 0x7fff) == 0x7c00);
    REQUIRE((h >> 15) == (std::signbit(x) ? 1 : 0));
    return;
  }
  REQUIRE((h & 0x7c00) != 0x7c00);
  REQUIRE((h >> 15) == (std::signbit(x) ? 1 : 0));
  const uint16_t mag = h & 0x7fff;
  const double err = std::fabs(std::fabs(f16_reference(h)) - ax);
  const double below = mag > 0 ? std::fabs(std::fabs(f16_reference(mag - 1)) - ax) : INFINITY;
  const double above = mag < 0x7bff ? std::fabs(std::fabs(f16_reference(mag + 1)) - ax) : INFINITY;
  REQUIRE(err <= below);
  REQUIRE(err <= above);
  if (err == below || err == above) REQUIRE((mag & 1) == 0);  // a tie goes to the even pattern
}

}  // namespace

TEST_CASE("f16 -> f32 equals the format definition for all 65536 patterns", "[f16]") {
  for (uint32_t p = 0; p <= 0xffff; ++p) {
    const auto h = static_cast<uint16_t>(p);
    const float f = f16_to_f32(h);
    const double expected = f16_reference(h);
    INFO("pattern " << std::hex << p);
    if (std::isnan(expected)) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::signbit(f) == ((h >> 15) != 0));
      // Payload kept in the top mantissa bits, quiet bit set.
      REQUIRE((bits_of(f) & 0x003fe000u) == ((static_cast<uint32_t>(h) & 0x1ffu) << 13));
      REQUIRE((bits_of(f) & 0x00400000u) != 0);
    } else {
      REQUIRE(static_cast<double>(f) == expected);
      REQUIRE(std::signbit(f) == ((h >> 15) != 0));  // -0 stays -0
    }
  }
}

TEST_CASE("f16 round trip is exact for every non-NaN pattern", "[f16]") {
  int64_t n_nan = 0;
  for (uint32_t p = 0; p <= 0xffff; ++p) {
    const auto h = static_cast<uint16_t>(p);
    const uint16_t back = f32_to_f16(f16_to_f32(h));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
      ++n_nan;
      // NaN comes back as the canonical quiet NaN with its sign.
      REQUIRE(back == ((h & 0x8000) | 0x7e00));
    } else {
      INFO("pattern " << std::hex << p);
      REQUIRE(back == h);
    }
  }
  CHECK(n_nan == 2 * 1023);
}

TEST_CASE("f32 -> f16 special values", "[f16]") {
  CHECK(f32_to_f16(0.0f) == 0x0000);
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(-2.0f) == 0xc000);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);                 // max finite
  CHECK(f32_to_f16(-65504.0f) == 0xfbff);
  CHECK(f32_to_f16(6.103515625e-05f) == 0x0400);          // min normal 2^-14
  CHECK(f32_to_f16(5.9604644775390625e-08f) == 0x0001);   // min subnormal 2^-24
  CHECK(f32_to_f16(-5.9604644775390625e-08f) == 0x8001);
  CHECK(f32_to_f16(6.097555160522461e-05f) == 0x03ff);    // max subnormal
  CHECK(f32_to_f16(INFINITY) == 0x7c00);
  CHECK(f32_to_f16(-INFINITY) == 0xfc00);
  CHECK(f32_to_f16(std::numeric_limits<float>::max()) == 0x7c00);
  CHECK(f32_to_f16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(f32_to_f16(-std::numeric_limits<float>::denorm_min()) == 0x8000);
  CHECK(f32_to_f16(std::nanf("")) == 0x7e00);
  CHECK(f32_to_f16(-std::nanf("")) == 0xfe00);
  CHECK(f32_to_f16(float_of(0x7f800001u)) == 0x7e00);    // signalling NaN stays NaN
  CHECK(f32_to_f16(float_of(0x7f802000u)) == 0x7e00);    // payload only in dropped bits
}

TEST_CASE("f32 -> f16 rounds ties to even", "[f16]") {
  // 1 + 2^-11 is half way between 1 and 1 + 2^-10: even (1.0) wins.
  CHECK(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);
  // 1 + 3 * 2^-11 is half way between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  CHECK(f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);
  // Just above a tie rounds up, just below rounds down.
  CHECK(f32_to_f16(std::nextafter(1.0f + 0x1p-11f, 2.0f)) == 0x3c01);
  CHECK(f32_to_f16(std::nextafter(1.0f + 3 * 0x1p-11f, 0.0f)) == 0x3c01);
  // 65520 is half way from 65504 (odd mantissa) to 2^16: rounds to inf.
  CHECK(f32_to_f16(65520.0f) == 0x7c00);
  CHECK(f32_to_f16(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  // Subnormal ties: 2^-25 (between 0 and the min subnormal) goes to 0,
  // 3 * 2^-25 (between subnormals 1 and 2) goes to 2.
  CHECK(f32_to_f16(0x1p-25f) == 0x0000);
  CHECK(f32_to_f16(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(f32_to_f16(3 * 0x1p-25f) == 0x0002);
  CHECK(f32_to_f16(5 * 0x1p-25f) == 0x0002);
  // A carry out of the subnormal mantissa gives the smallest normal.
  CHECK(f32_to_f16(0x1p-14f - 0x1p-26f) == 0x0400);
  // Carry out of a normal mantissa bumps the exponent.
  CHECK(f32_to_f16(2.0f - 0x1p-12f) == 0x4000);
}

TEST_CASE("f32 -> f16 is round-to-nearest-even on random inputs (float64 reference)", "[f16]") {
  std::mt19937_64 rng(4242);
  // Random bit patterns cover every exponent; restrict to finite values.
  for (int i = 0; i < 200000; ++i) {
    const float x = float_of(static_cast<uint32_t>(rng()));
    if (!std::isfinite(x)) continue;
    check_nearest_even_f16(x, f32_to_f16(x));
  }
  // And values in the f16 range, where the mantissa rounding matters.
  std::uniform_real_distribution<float> in_range(-70000.0f, 70000.0f);
  std::uniform_real_distribution<float> exponent(-26.0f, 16.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = i % 2 ? in_range(rng) : std::copysign(std::exp2(exponent(rng)), in_range(rng));
    check_nearest_even_f16(x, f32_to_f16(x));
  }
}

TEST_CASE("bf16 conversions: specials, ties to even, NaN stays NaN", "[bf16]") {
  CHECK(f32_to_bf16(0.0f) == 0x0000);
  CHECK(f32_to_bf16(-0.0f) == 0x8000);
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(INFINITY) == 0x7f80);
  CHECK(f32_to_bf16(-INFINITY) == 0xff80);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  CHECK(f32_to_bf16(std::nextafter(float_of(0x7f7f8000u), 0.0f)) == 0x7f7f);
  // Ties: 0x3f808000 is half way between 0x3f80 (even) and 0x3f81.
  CHECK(f32_to_bf16(float_of(0x3f808000u)) == 0x3f80);
  CHECK(f32_to_bf16(float_of(0x3f818000u)) == 0x3f82);
  CHECK(f32_to_bf16(float_of(0x3f808001u)) == 0x3f81);
  CHECK(f32_to_bf16(float_of(0x3f807fffu)) == 0x3f80);
  // Subnormals are rounded, not flushed.
  CHECK(f32_to_bf16(float_of(0x00018000u)) == 0x0002);
  CHECK(f32_to_bf16(float_of(0x00010000u)) == 0x0001);
  // NaN: a payload only in the low 16 bits must not turn into inf.
  CHECK(f32_to_bf16(float_of(0x7f800001u)) == 0x7fc0);
  CHECK(f32_to_bf16(float_of(0xff800001u)) == 0xffc0);
  CHECK(f32_to_bf16(std::nanf("")) == 0x7fc0);
  CHECK(std::isnan(bf16_to_f32(0x7fc0)));
  CHECK(std::isnan(bf16_to_f32(0x7f81)));
  CHECK(bf16_to_f32(0xff80) == -INFINITY);
  CHECK(bits_of(bf16_to_f32(0x8000)) == 0x80000000u);
}

TEST_CASE("bf16 is exact widening and round-to-nearest-even narrowing", "[bf16]") {
  // Every bf16 pattern is the top half of its f32 and survives the round trip.
  for (uint32_t p = 0; p <= 0xffff; ++p) {
    const auto h = static_cast<uint16_t>(p);
    const float f = bf16_to_f32(h);
    REQUIRE(bits_of(f) == p << 16);
    if (!std::isnan(f)) REQUIRE(f32_to_bf16(f) == h);
  }
  // Random finite f32: the result is one of the two neighbours, the nearer
  // one (float64 distances), the even one on ties.
  std::mt19937_64 rng(77);
  for (int i = 0; i < 300000; ++i) {
    const uint32_t u = static_cast<uint32_t>(rng());
    const float x = float_of(u);
    if (!std::isfinite(x)) continue;
    const uint16_t h = f32_to_bf16(x);
    const uint16_t down = static_cast<uint16_t>(u >> 16);
    const uint16_t up = static_cast<uint16_t>(down + 1);
    REQUIRE((h == down || h == up));
    const double d_down = std::fabs(static_cast<double>(bf16_to_f32(down)) - x);
    const double d_up = std::isinf(bf16_to_f32(up)) ? INFINITY : std::fabs(static_cast<double>(bf16_to_f32(up)) - x);
    if ((u & 0xffff) == 0x8000) {
      REQUIRE((h & 1) == 0);
    } else if (std::isinf(bf16_to_f32(up)) && (u & 0xffff) > 0x8000) {
      REQUIRE(h == up);  // past the half-way point to inf
    } else {
      REQUIRE(h == (d_down <= d_up ? down : up));
    }
  }
}
