// Our quantizers and float converters against llama.cpp's own
// (libggml-base.so, dlopened): bytes and dequantized floats must match bit
// for bit, in both directions. Skips with a warning without the library.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "tests/oracle/ggml_oracle.h"
#include "tests/test_util.h"

namespace {

using tc::kernels::DType;
using tc::kernels::kQK_K;

constexpr DType kBlockTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1,  DType::Q5_0, DType::Q5_1,
                                 DType::IQ4_NL, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                 DType::Q6_K,   DType::IQ4_XS, DType::MXFP4};

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

struct DataCase {
  std::string name;
  std::vector<float> values;  // n_rows * kRowLen
};

constexpr int64_t kRowLen = 4 * kQK_K;  // a multiple of every block size
constexpr int64_t kRows = 12;

// Data shapes that drive the quantizers down their different paths: plain
// and scaled Gaussians, outliers, one-signed rows (the Q4_K min clamp),
// constant and sparse blocks, exact rounding ties, tiny and huge magnitudes.
std::vector<DataCase> data_cases() {
  constexpr size_t n = kRows * kRowLen;
  std::vector<DataCase> out;
  out.push_back({"gaussian", tc::test::random_floats(n, 11, 1.0f)});
  out.push_back({"weights 0.02", tc::test::random_floats(n, 12, 0.02f)});

  auto outliers = tc::test::random_floats(n, 13, 0.05f);
  for (size_t i = 0; i < n; i += 37) outliers[i] *= 60.0f;
  out.push_back({"outliers", outliers});

  auto positive = tc::test::random_floats(n, 14, 1.0f);
  for (auto& v : positive) v = std::fabs(v) + 0.25f;
  out.push_back({"positive", positive});
  auto negative = tc::test::random_floats(n, 15, 1.0f);
  for (auto& v : negative) v = -std::fabs(v) - 0.5f;
  out.push_back({"negative", negative});

  // Each 32-block constant (a different constant per block, some zero).
  std::vector<float> constant(n);
  auto seeds = tc::test::random_floats(n / 32, 16, 2.0f);
  for (size_t i = 0; i < n; ++i) constant[i] = (i / 32) % 7 == 3 ? 0.0f : seeds[i / 32];
  out.push_back({"constant blocks", constant});

  // Mostly zeros with a few spikes; some whole blocks zero.
  std::vector<float> sparse(n, 0.0f);
  auto spikes = tc::test::random_floats(n / 41 + 1, 17, 3.0f);
  for (size_t i = 0, k = 0; i < n; i += 41, ++k) sparse[i] = spikes[k];
  out.push_back({"sparse", sparse});

  // Multiples of 1/2 whose largest magnitude is 127: Q8_0's x/d lands on
  // exact .5 ties (roundf goes away from zero) and Q4_0/K-quants hit
  // exact grid points.
  std::vector<float> ties(n);
  std::mt19937 rng(18);
  std::uniform_int_distribution<int> half_steps(-254, 254);
  for (size_t i = 0; i < n; ++i) ties[i] = i % 32 == 0 ? 127.0f : 0.5f * static_cast<float>(half_steps(rng));
  out.push_back({"half-integer ties", ties});
  std::vector<float> int_grid(n);
  std::uniform_int_distribution<int> nibbles(-8, 7);
  for (size_t i = 0; i < n; ++i) int_grid[i] = i % 32 == 5 ? -8.0f : static_cast<float>(nibbles(rng));
  out.push_back({"integer grid", int_grid});

  // Magnitudes from 1e-7 to 1e4 per 256-block.
  auto mixed = tc::test::random_floats(n, 19, 1.0f);
  std::uniform_real_distribution<float> exponent(-7.0f, 4.0f);
  for (size_t b = 0; b < n / kQK_K; ++b) {
    const float s = std::pow(10.0f, exponent(rng));
    for (size_t i = 0; i < static_cast<size_t>(kQK_K); ++i) mixed[b * kQK_K + i] *= s;
  }
  out.push_back({"mixed magnitudes", mixed});
  out.push_back({"tiny 1e-6", tc::test::random_floats(n, 20, 1e-6f)});
  out.push_back({"tiny 1e-20", tc::test::random_floats(n, 21, 1e-20f)});
  out.push_back({"large 1e4", tc::test::random_floats(n, 22, 1e4f)});
  return out;
}

// Number of `block_bytes`-sized blocks that differ between a and b.
int64_t count_block_mismatches(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                               int64_t block_bytes, int64_t& first) {
  first = -1;
  int64_t n = 0;
  for (size_t off = 0; off < a.size(); off += static_cast<size_t>(block_bytes)) {
    if (std::memcmp(a.data() + off, b.data() + off, static_cast<size_t>(block_bytes)) != 0) {
      if (first < 0) first = static_cast<int64_t>(off) / block_bytes;
      ++n;
    }
  }
  return n;
}

int64_t count_float_bit_mismatches(const std::vector<float>& a, const std::vector<float>& b, int64_t& first) {
  first = -1;
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (bits_of(a[i]) != bits_of(b[i])) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++n;
    }
  }
  return n;
}

std::vector<uint8_t> our_quantize(DType type, const std::vector<float>& values) {
  const int64_t n_rows = static_cast<int64_t>(values.size()) / kRowLen;
  const int64_t row = tc::kernels::row_bytes(type, kRowLen);
  std::vector<uint8_t> out(static_cast<size_t>(row * n_rows), 0xA5);  // poisoned
  for (int64_t r = 0; r < n_rows; ++r) {
    tc::kernels::quantize_row(type, values.data() + r * kRowLen, out.data() + r * row, kRowLen);
  }
  return out;
}

std::vector<float> our_dequantize(DType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), std::nanf("1"));
  tc::kernels::dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

std::vector<float> ggml_dequantize(DType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), std::nanf("2"));
  tc::oracle::ggml_dequantize(type, bytes.data(), out.data(), n);
  return out;
}

// Random block bytes whose f16 scale fields are finite: every quant and
// scale bit pattern gets decoded, not only those our quantizer produces
// (MXFP4's exponent byte has no non-finite pattern: every byte is kept).
std::vector<uint8_t> random_blocks(DType type, int64_t n_blocks, uint64_t seed) {
  const auto& traits = tc::kernels::dtype_traits(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_blocks * traits.block_bytes));
  std::mt19937_64 rng(seed);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  auto finite_f16 = [&]() {
    uint16_t h;
    do h = static_cast<uint16_t>(rng()); while ((h & 0x7c00) == 0x7c00);
    return h;
  };
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = bytes.data() + b * traits.block_bytes;
    std::vector<size_t> f16_offsets;
    using namespace tc::kernels;
    switch (type) {
      case DType::Q8_0:
      case DType::Q4_0:
      case DType::Q5_0:
      case DType::IQ4_NL:
      case DType::IQ4_XS: f16_offsets = {0}; break;
      case DType::Q4_1:
      case DType::Q5_1:
      case DType::Q4_K:
      case DType::Q5_K: f16_offsets = {0, 2}; break;
      case DType::Q2_K: f16_offsets = {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)}; break;
      case DType::Q3_K: f16_offsets = {offsetof(BlockQ3_K, d)}; break;
      case DType::Q6_K: f16_offsets = {offsetof(BlockQ6_K, d)}; break;
      case DType::MXFP4: break;
      default: FAIL("random_blocks: no f16 fields listed for " << dtype_name(type));
    }
    for (size_t off : f16_offsets) {
      const uint16_t h = finite_f16();
      std::memcpy(blk + off, &h, sizeof h);
    }
  }
  return bytes;
}

}  // namespace

TEST_CASE("oracle: block sizes and byte sizes equal ggml's for every dtype", "[oracle][quantize]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto& api = *tc::oracle::ggml();
  std::vector<DType> types = {DType::F32, DType::F16, DType::BF16, DType::I8, DType::I16, DType::I32, DType::I64,
                              DType::F64};
  types.insert(types.end(), std::begin(kBlockTypes), std::end(kBlockTypes));
  for (DType type : types) {
    const auto& traits = tc::kernels::dtype_traits(type);
    INFO(traits.name);
    CHECK(api.ggml_blck_size(static_cast<int>(type)) == traits.block_size);
    CHECK(static_cast<int64_t>(api.ggml_type_size(static_cast<int>(type))) == traits.block_bytes);
    CHECK(static_cast<int64_t>(api.ggml_row_size(static_cast<int>(type), kRowLen)) ==
          tc::kernels::row_bytes(type, kRowLen));
  }
}

TEST_CASE("oracle: our quantize_row writes the same bytes as ggml_quantize_chunk", "[oracle][quantize]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto cases = data_cases();
  std::vector<DType> types = {DType::F32, DType::F16, DType::BF16};
  types.insert(types.end(), std::begin(kBlockTypes), std::end(kBlockTypes));
  for (DType type : types) {
    const auto& traits = tc::kernels::dtype_traits(type);
    for (const auto& c : cases) {
      INFO(traits.name << " on " << c.name);
      const auto ours = our_quantize(type, c.values);
      const auto theirs = tc::oracle::ggml_quantize(type, c.values.data(), kRows, kRowLen);
      REQUIRE(ours.size() == theirs.size());
      // Exact equality: the reference algorithms are followed step for step.
      int64_t first = -1;
      const int64_t bad = count_block_mismatches(ours, theirs, traits.block_bytes, first);
      INFO("first differing block " << first << " of " << ours.size() / traits.block_bytes);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("oracle: dequantize agrees bit for bit with ggml on our bytes and on ggml's bytes",
          "[oracle][quantize]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto cases = data_cases();
  for (DType type : kBlockTypes) {
    const auto& traits = tc::kernels::dtype_traits(type);
    for (const auto& c : cases) {
      INFO(traits.name << " on " << c.name);
      const auto n = static_cast<int64_t>(c.values.size());
      int64_t first = -1;

      const auto ours_q = our_quantize(type, c.values);
      const auto a = our_dequantize(type, ours_q, n);
      const auto b = ggml_dequantize(type, ours_q, n);
      CHECK(count_float_bit_mismatches(a, b, first) == 0);

      const auto ggml_q = tc::oracle::ggml_quantize(type, c.values.data(), kRows, kRowLen);
      const auto c2 = our_dequantize(type, ggml_q, n);
      const auto d2 = ggml_dequantize(type, ggml_q, n);
      CHECK(count_float_bit_mismatches(c2, d2, first) == 0);
    }
  }
}

TEST_CASE("oracle: dequantize of arbitrary block bytes equals ggml's", "[oracle][quantize]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  for (DType type : kBlockTypes) {
    const auto& traits = tc::kernels::dtype_traits(type);
    INFO(traits.name);
    constexpr int64_t kBlocks = 512;
    const auto bytes = random_blocks(type, kBlocks, 1234 + static_cast<uint64_t>(type));
    const int64_t n = kBlocks * traits.block_size;
    int64_t first = -1;
    const int64_t bad = count_float_bit_mismatches(our_dequantize(type, bytes, n), ggml_dequantize(type, bytes, n), first);
    INFO("first differing element " << first);
    CHECK(bad == 0);
  }
}

namespace {

// MXFP4 rows that probe its exponent and level choices: blocks of random
// magnitude over f32's whole normal range, maxima exactly at, just below and
// just above powers of two (where floorf(log2f(amax)) decides the scale),
// every value on a level midpoint (ties), and blocks of subnormals (below
// 2^-125 llama.cpp's exponent cast wraps).
std::vector<float> mxfp4_probe_rows(int64_t n_blocks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> exponent(-125, 125);
  std::uniform_int_distribution<int> kind(0, 4);
  std::uniform_int_distribution<int> code(0, 15);
  auto values = tc::test::random_floats(static_cast<size_t>(n_blocks * 32), seed, 1.0f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    float* x = values.data() + b * 32;
    const int s = exponent(rng);
    switch (kind(rng)) {
      case 0:  // gaussian at 2^s
        for (int j = 0; j < 32; ++j) x[j] = std::ldexp(x[j], s);
        break;
      case 1:  // the maximum at 2^s, one ulp below or one above
        for (int j = 0; j < 32; ++j) x[j] = std::ldexp(x[j] * 0.1f, s);
        x[b % 32] = std::nextafter(std::ldexp(1.0f, s), static_cast<float>(b % 3) - 1.0f);
        break;
      case 2:  // midpoints of the grid 2^s * kMXFP4Values
        for (int j = 0; j < 32; ++j) {
          const int c = code(rng);
          const int c2 = c % 8 == 7 ? c : c + 1;
          x[j] = std::ldexp(0.5f * static_cast<float>(tc::kernels::kMXFP4Values[c] + tc::kernels::kMXFP4Values[c2]),
                            s);
        }
        x[3] = std::ldexp(12.0f, s);
        break;
      case 3:  // subnormals and the smallest normals
        for (int j = 0; j < 32; ++j) x[j] = std::ldexp(x[j], -128 - static_cast<int>(b % 20));
        break;
      default:  // levels exactly on the grid
        for (int j = 0; j < 32; ++j) x[j] = std::ldexp(static_cast<float>(tc::kernels::kMXFP4Values[code(rng)]), s);
        break;
    }
  }
  return values;
}

}  // namespace

TEST_CASE("oracle: MXFP4 quantize_row equals ggml's quantize_row_mxfp4_ref on probing rows",
          "[oracle][quantize][mxfp4]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto& api = *tc::oracle::ggml();
  constexpr int64_t kBlocks = 4096;
  for (uint64_t seed : {31, 32, 33}) {
    INFO("seed " << seed);
    const auto x = mxfp4_probe_rows(kBlocks, seed);
    const int64_t n = kBlocks * 32;
    std::vector<uint8_t> ours(static_cast<size_t>(tc::kernels::row_bytes(DType::MXFP4, n)), 0xA5);
    std::vector<uint8_t> theirs(ours.size(), 0x5A);
    tc::kernels::quantize_row(DType::MXFP4, x.data(), ours.data(), n);
    api.quantize_row_mxfp4_ref(x.data(), theirs.data(), n);
    int64_t first = -1;
    const int64_t bad = count_block_mismatches(ours, theirs, sizeof(tc::kernels::BlockMXFP4), first);
    INFO("first differing block " << first);
    CHECK(bad == 0);
    int64_t first_float = -1;
    CHECK(count_float_bit_mismatches(our_dequantize(DType::MXFP4, ours, n), ggml_dequantize(DType::MXFP4, theirs, n),
                                     first_float) == 0);
  }
}

TEST_CASE("oracle: f16 -> f32 equals ggml_fp16_to_fp32 for all 65536 patterns", "[oracle][f16]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto& api = *tc::oracle::ggml();
  int64_t bad = 0;
  uint32_t first = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint32_t ours = bits_of(tc::kernels::f16_to_f32(static_cast<uint16_t>(h)));
    const uint32_t theirs = bits_of(api.ggml_fp16_to_fp32(static_cast<uint16_t>(h)));
    if (ours != theirs && bad++ == 0) first = h;
  }
  INFO("first differing f16 pattern " << first);
  CHECK(bad == 0);
}

namespace {

// f32 patterns where rounding to a 16-bit format is decided: every f16 value,
// the exact midpoints between neighbours (ties), one ulp either side of
// them, plus a strided sweep of the whole f32 space (NaNs, infs,
// subnormals, overflow included).
template <typename Fn>
void for_rounding_probes(Fn&& fn) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = tc::kernels::f16_to_f32(static_cast<uint16_t>(h));
    const float hi = tc::kernels::f16_to_f32(static_cast<uint16_t>(h + 1));
    const double mid = (static_cast<double>(lo) + static_cast<double>(hi)) / 2.0;
    const auto mid_f = static_cast<float>(mid);  // exact: f16 midpoints fit in f32
    for (float v : {lo, mid_f, std::nextafter(mid_f, 0.0f), std::nextafter(mid_f, 1e9f)}) {
      fn(bits_of(v));
      fn(bits_of(v) | 0x80000000u);
    }
  }
  // bf16 midpoints: the low 16 bits 0x8000 with either parity, +-1.
  for (uint32_t hi = 0; hi <= 0xffff; ++hi) {
    for (uint32_t lo : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) fn((hi << 16) | lo);
  }
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) fn(static_cast<uint32_t>(u));
}

}  // namespace

TEST_CASE("oracle: f32 -> f16 equals ggml_fp32_to_fp16 on ties, boundaries and a sweep", "[oracle][f16]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto& api = *tc::oracle::ggml();
  int64_t bad = 0;
  int64_t n = 0;
  uint32_t first = 0;
  for_rounding_probes([&](uint32_t u) {
    ++n;
    const float f = float_of(u);
    if (tc::kernels::f32_to_f16(f) != api.ggml_fp32_to_fp16(f) && bad++ == 0) first = u;
  });
  INFO("probed " << n << " patterns; first differing f32 pattern " << first);
  CHECK(bad == 0);
}

TEST_CASE("oracle: bf16 conversions equal ggml's on all bf16 patterns and on f32 ties and a sweep", "[oracle][bf16]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto& api = *tc::oracle::ggml();
  int64_t bad_to_f32 = 0;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    if (bits_of(tc::kernels::bf16_to_f32(bits)) != bits_of(api.ggml_bf16_to_fp32({bits}))) ++bad_to_f32;
  }
  CHECK(bad_to_f32 == 0);
  int64_t bad_from_f32 = 0;
  uint32_t first = 0;
  for_rounding_probes([&](uint32_t u) {
    const float f = float_of(u);
    if (tc::kernels::f32_to_bf16(f) != api.ggml_fp32_to_bf16(f).bits && bad_from_f32++ == 0) first = u;
  });
  INFO("first differing f32 pattern " << first);
  CHECK(bad_from_f32 == 0);
}

TEST_CASE("oracle: f32 -> f16 and bf16 equal ggml's for all 2^32 patterns", "[oracle][f16][.slow]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto& api = *tc::oracle::ggml();
  int64_t bad_f16 = 0;
  int64_t bad_bf16 = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; ++u) {
    const float f = float_of(static_cast<uint32_t>(u));
    bad_f16 += tc::kernels::f32_to_f16(f) != api.ggml_fp32_to_fp16(f);
    bad_bf16 += tc::kernels::f32_to_bf16(f) != api.ggml_fp32_to_bf16(f).bits;
  }
  CHECK(bad_f16 == 0);
  CHECK(bad_bf16 == 0);
}

TEST_CASE("oracle: quantize_row equals ggml on 6M values per format", "[oracle][quantize][.slow]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  constexpr int64_t kBigRows = 1536;
  for (DType type : kBlockTypes) {
    const auto& traits = tc::kernels::dtype_traits(type);
    for (uint64_t seed = 0; seed < 4; ++seed) {
      // Gaussians of varying scale with heavy tails mixed in.
      auto values = tc::test::random_floats(static_cast<size_t>(kBigRows * kRowLen), 900 + seed,
                                            seed % 2 == 0 ? 1.0f : 0.01f);
      for (size_t i = seed; i < values.size(); i += 97) values[i] *= 8.0f;
      if (seed == 3) {
        for (auto& v : values) v = std::fabs(v);
      }
      std::vector<uint8_t> ours(static_cast<size_t>(tc::kernels::row_bytes(type, kRowLen) * kBigRows));
      const int64_t row = tc::kernels::row_bytes(type, kRowLen);
      for (int64_t r = 0; r < kBigRows; ++r) {
        tc::kernels::quantize_row(type, values.data() + r * kRowLen, ours.data() + r * row, kRowLen);
      }
      const auto theirs = tc::oracle::ggml_quantize(type, values.data(), kBigRows, kRowLen);
      int64_t first = -1;
      INFO(traits.name << " seed " << seed);
      CHECK(count_block_mismatches(ours, theirs, traits.block_bytes, first) == 0);
    }
  }
}
