// The CUDA element and row ops against the CPU ops (themselves tested
// against float64 in tests/kernels/ops_test.cpp): get_rows bit-identical
// for every table dtype and NaN for a bad id; rms_norm, layer_norm and rope
// (both modes, frequency factors) within a few f32 ulps (in place too); the
// FFN activations, add, add_bias, scale, softcap, store_f16, relu and
// threshold_bits (bit-identical where no library function is involved,
// specials included).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;
using tc::test::from_device;
using tc::test::poisoned_device;
using tc::test::same_bits;
using tc::test::to_device;

constexpr double kEpsF32 = 0x1p-23;

// |got - want| <= ulps * eps * max(|want|, floor) for every element.
void require_ulps(const std::vector<float>& got, const std::vector<float>& want, double ulps, double floor = 1e-30) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[i];
    const double tol = ulps * kEpsF32 * std::fmax(std::fabs(w), floor);
    if (!(std::fabs(static_cast<double>(got[i]) - w) <= tol)) {
      INFO("element " << i << " got " << got[i] << " want " << want[i] << " tolerance " << tol);
      REQUIRE(false);
    }
  }
}

}  // namespace

TEST_CASE("cuda get_rows: bit-identical to dequantize_row for every table dtype", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                               DType::Q5_0, DType::Q5_1, DType::IQ4_NL, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                               DType::Q5_K, DType::Q6_K, DType::IQ4_XS, DType::MXFP4);
  INFO("dtype " << dtype_name(dtype));
  const int64_t n_embd = 512;
  const int64_t n_vocab = 37;
  const int64_t stride = row_bytes(dtype, n_embd) + 64;  // padded rows
  std::vector<uint8_t> storage(static_cast<size_t>(stride * n_vocab), 0xA5);
  const auto values = tc::test::random_floats(static_cast<size_t>(n_embd * n_vocab), 11);
  for (int64_t r = 0; r < n_vocab; ++r) {
    quantize_row(dtype, values.data() + r * n_embd, storage.data() + r * stride, n_embd);
  }
  const Buffer dtable = to_device(*cuda, storage);
  Tensor table = Tensor::matrix(dtable.data(), dtype, n_embd, n_vocab, MemoryKind::Device);
  table.row_bytes = stride;

  const std::vector<int32_t> ids = {5, 0, 36, 5, 17, 37, -1};  // repeats, first and last row, two bad ids
  const auto n_tokens = static_cast<int64_t>(ids.size());
  const Buffer dids = to_device(*cuda, ids);
  // Poisoned with a finite value here: the bad ids must write NaN themselves.
  const Buffer dout = to_device(*cuda, std::vector<float>(static_cast<size_t>(n_tokens * n_embd), 7.0f));
  cuda->get_rows(table, dids.as<int32_t>(), n_tokens, dout.as<float>());
  const auto out = from_device<float>(*cuda, dout.data(), static_cast<size_t>(n_tokens * n_embd));

  std::vector<float> expected(static_cast<size_t>(n_embd));
  for (int64_t t = 0; t < 5; ++t) {
    dequantize_row(dtype, storage.data() + ids[static_cast<size_t>(t)] * stride, expected.data(), n_embd);
    REQUIRE(std::memcmp(out.data() + t * n_embd, expected.data(), expected.size() * sizeof(float)) == 0);
  }
  for (int64_t t = 5; t < 7; ++t) {
    for (int64_t i = 0; i < n_embd; ++i) REQUIRE(std::isnan(out[static_cast<size_t>(t * n_embd + i)]));
  }
}

TEST_CASE("cuda rms_norm: within 4 ulps of the CPU op, also in place", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  for (int64_t n : {1, 7, 256, 4096, 5120}) {
    INFO("n " << n);
    const int64_t n_rows = 5;
    auto x = tc::test::random_floats(static_cast<size_t>(n_rows * n), 20 + n, 3.0f);
    x[0] = 1e-20f;  // a tiny value among large ones
    const auto weight = tc::test::random_floats(static_cast<size_t>(n), 21 + n);
    std::vector<float> want(x.size());
    rms_norm(x.data(), weight.data(), n_rows, n, 1e-5f, want.data());

    const Buffer dx = to_device(*cuda, x);
    const Buffer dw = to_device(*cuda, weight);
    const Buffer dy = poisoned_device(*cuda, x.size());
    cuda->rms_norm(dx.as<float>(), dw.as<float>(), n_rows, n, 1e-5f, dy.as<float>());
    require_ulps(from_device<float>(*cuda, dy.data(), x.size()), want, 4);
    cuda->rms_norm(dx.as<float>(), dw.as<float>(), n_rows, n, 1e-5f, dx.as<float>());  // y aliases x
    require_ulps(from_device<float>(*cuda, dx.data(), x.size()), want, 4);
  }
}

TEST_CASE("cuda rope: within an ulp of the CPU op (long positions, partial rotation, scaled frequencies)",
          "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  struct Case {
    int64_t n_head, head_dim;
    RopeParams params;
  };
  for (const Case& c : {Case{4, 64, {64, 10000.0, 1.0}}, Case{3, 128, {64, 500000.0, 0.25}},
                        Case{2, 80, {32, 10000.0, 1.0}}, Case{2, 64, {0, 10000.0, 1.0}}}) {
    INFO("heads " << c.n_head << " head_dim " << c.head_dim << " n_rot " << c.params.n_rot);
    const std::vector<int32_t> positions = {0, 1, 17, 4095, 32767, 7};
    const auto n_tokens = static_cast<int64_t>(positions.size());
    const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * c.n_head * c.head_dim), 30);
    auto want = x;
    rope(want.data(), n_tokens, c.n_head, c.head_dim, positions.data(), c.params);

    const Buffer dx = to_device(*cuda, x);
    const Buffer dpos = to_device(*cuda, positions);
    cuda->rope(dx.as<float>(), n_tokens, c.n_head, c.head_dim, dpos.as<int32_t>(), c.params);
    const auto got = from_device<float>(*cuda, dx.data(), x.size());
    // The angles and rotation are double on both sides; CUDA's pow/sincos
    // may differ from glibc's by a double ulp, which moves a result by about
    // |x| * position * 2^-52 (1e-11 at 32767): an ulp of f32 for ordinary
    // results, and the floor (1e-2 * 2^-23 absolute) for results near 0.
    require_ulps(got, want, 1, 1e-2);
    if (c.params.n_rot == 0) REQUIRE(same_bits(got, x));
  }
}

TEST_CASE("cuda ffn_activation: every Activation against the CPU op, also in place", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const Activation act = GENERATE(Activation::SwiGLU, Activation::ReGLU, Activation::DReLU, Activation::GeGLU,
                                  Activation::Gelu, Activation::Relu, Activation::ReluSquared, Activation::SwiGluOai);
  const int64_t n = 10000;
  auto gate = tc::test::random_floats(static_cast<size_t>(n), 40, 4.0f);
  gate[0] = -100.0f;  // exp overflows: silu is -0
  gate[1] = 100.0f;
  gate[2] = 0.0f;
  const auto up = tc::test::random_floats(static_cast<size_t>(n), 41);
  std::vector<float> want(static_cast<size_t>(n));
  ffn_activation(act, gate.data(), up.data(), n, want.data());

  const Buffer dgate = to_device(*cuda, gate);
  const Buffer dup = to_device(*cuda, up);
  const Buffer dout = poisoned_device(*cuda, static_cast<size_t>(n));
  cuda->ffn_activation(act, dgate.as<float>(), dup.as<float>(), n, dout.as<float>());
  const auto got = from_device<float>(*cuda, dout.data(), static_cast<size_t>(n));
  if (act == Activation::SwiGLU || act == Activation::SwiGluOai) {
    // CUDA's expf is within 2 ulps, glibc's within 1, and exp's error passes
    // through 1 + exp(-g) almost whole; three more roundings on each side.
    require_ulps(got, want, 8);
  } else if (act == Activation::GeGLU || act == Activation::Gelu) {
    // tanhf differs by an ulp or two between CUDA and glibc; 1 + tanh
    // cancels for strongly negative inputs, so the bound is absolute there
    // (gate values reach ~16: 16 * 8 ulps of 1).
    require_ulps(got, want, 8, 16.0);
  } else {
    REQUIRE(same_bits(got, want));  // max and one product (or square): exact
  }
  cuda->ffn_activation(act, dgate.as<float>(), dup.as<float>(), n, dgate.as<float>());  // out aliases gate
  REQUIRE(same_bits(from_device<float>(*cuda, dgate.data(), static_cast<size_t>(n)), got));
}

TEST_CASE("cuda add and store_f16: bit-identical to the CPU, f16 specials included", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  auto x = tc::test::random_floats(5000, 50, 100.0f);
  const float inf = std::numeric_limits<float>::infinity();
  // f16 edge cases: max, overflow, a tie, subnormals, zero signs, inf, NaN.
  const std::vector<float> specials = {65504.0f, 65520.0f, 1e6f,   -1e6f, 1.0f + 0x1p-11f, 0x1p-24f, 0x1p-25f,
                                       3e-8f,    -0.0f,    0.0f,   inf,   -inf,            std::nanf(""),
                                       -std::nanf(""), 6.1e-5f, 2049.0f};
  std::copy(specials.begin(), specials.end(), x.begin());
  const auto y0 = tc::test::random_floats(5000, 51);

  std::vector<uint16_t> want_f16(x.size());
  store_f16(x.data(), static_cast<int64_t>(x.size()), want_f16.data());
  const Buffer dx = to_device(*cuda, x);
  const Buffer dh = to_device(*cuda, std::vector<uint16_t>(x.size(), 0x1234));
  cuda->store_f16(dx.as<float>(), static_cast<int64_t>(x.size()), dh.as<uint16_t>());
  REQUIRE(from_device<uint16_t>(*cuda, dh.data(), x.size()) == want_f16);

  const std::vector<float> xs(x.begin() + 20, x.end());  // finite values only
  auto want_sum = std::vector<float>(y0.begin(), y0.begin() + static_cast<int64_t>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) want_sum[i] += xs[i];
  const Buffer dy = to_device(*cuda, std::vector<float>(y0.begin(), y0.begin() + static_cast<int64_t>(xs.size())));
  const Buffer dxs = to_device(*cuda, xs);
  cuda->add(dy.as<float>(), dxs.as<float>(), static_cast<int64_t>(xs.size()));
  REQUIRE(same_bits(from_device<float>(*cuda, dy.data(), xs.size()), want_sum));
}

TEST_CASE("cuda relu and threshold_bits: the CPU's bits", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  auto cpu = create_backend(DeviceKind::Cpu, {1});
  auto x = tc::test::random_floats(3 * 1000, 60);
  x[7] = -0.0f;
  x[8] = std::nanf("");
  x[9] = 0.0f;
  // relu, in place.
  auto want = x;
  cpu->relu(want.data(), static_cast<int64_t>(want.size()));
  const Buffer dx = to_device(*cuda, x);
  cuda->relu(dx.as<float>(), static_cast<int64_t>(x.size()));
  REQUIRE(same_bits(from_device<float>(*cuda, dx.data(), x.size()), want));
  // threshold_bits: 3 rows of 1000 scores (31 full words and a partial one each).
  const int64_t n_words = (1000 + 31) / 32;
  std::vector<uint32_t> want_bits(static_cast<size_t>(3 * n_words));
  cpu->threshold_bits(x.data(), 3, 1000, 0.5f, want_bits.data());
  const Buffer dscores = to_device(*cuda, x);
  const Buffer dbits = to_device(*cuda, std::vector<uint32_t>(want_bits.size(), 0xdeadbeefu));
  cuda->threshold_bits(dscores.as<float>(), 3, 1000, 0.5f, dbits.as<uint32_t>());
  REQUIRE(from_device<uint32_t>(*cuda, dbits.data(), want_bits.size()) == want_bits);
}

TEST_CASE("cuda layer_norm: within 8 ulps of the CPU op, also in place and without a bias", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  for (int64_t n : {1, 7, 256, 5120}) {
    INFO("n " << n);
    {  // no bias (Cohere): a null pointer on both sides
      const auto x = tc::test::random_floats(static_cast<size_t>(3 * n), 70 + n, 3.0f);
      const auto weight = tc::test::random_floats(static_cast<size_t>(n), 71 + n);
      std::vector<float> want(x.size());
      layer_norm(x.data(), weight.data(), nullptr, 3, n, 1e-5f, want.data());
      const Buffer dx = to_device(*cuda, x);
      const Buffer dw = to_device(*cuda, weight);
      const Buffer dy = poisoned_device(*cuda, x.size());
      cuda->layer_norm(dx.as<float>(), dw.as<float>(), nullptr, 3, n, 1e-5f, dy.as<float>());
      require_ulps(from_device<float>(*cuda, dy.data(), x.size()), want, 8, 1.0);
    }
    const int64_t n_rows = 5;
    const auto x = tc::test::random_floats(static_cast<size_t>(n_rows * n), 60 + n, 3.0f);
    const auto weight = tc::test::random_floats(static_cast<size_t>(n), 61 + n);
    const auto bias = tc::test::random_floats(static_cast<size_t>(n), 62 + n);
    std::vector<float> want(x.size());
    layer_norm(x.data(), weight.data(), bias.data(), n_rows, n, 1e-5f, want.data());
    const Buffer dx = to_device(*cuda, x);
    const Buffer dw = to_device(*cuda, weight);
    const Buffer db = to_device(*cuda, bias);
    const Buffer dy = poisoned_device(*cuda, x.size());
    cuda->layer_norm(dx.as<float>(), dw.as<float>(), db.as<float>(), n_rows, n, 1e-5f, dy.as<float>());
    // The bias add cancels where the normed value is near -bias: an absolute
    // floor of a few ulps of the operands' size (~1).
    require_ulps(from_device<float>(*cuda, dy.data(), x.size()), want, 8, 1.0);
    cuda->layer_norm(dx.as<float>(), dw.as<float>(), db.as<float>(), n_rows, n, 1e-5f, dx.as<float>());
    require_ulps(from_device<float>(*cuda, dx.data(), x.size()), want, 8, 1.0);
  }
}

TEST_CASE("cuda rope: Neox pairs, frequency factors and attn_factor within an ulp of the CPU op", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const int64_t n_head = 3, head_dim = 64, n_rot = 64;
  std::vector<float> factors(static_cast<size_t>(n_rot / 2));
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.25f * static_cast<float>(i);
  const Buffer dfactors = to_device(*cuda, factors);
  for (const RopeMode mode : {RopeMode::Normal, RopeMode::Neox}) {
    for (const bool with_factors : {false, true}) {
      INFO("neox " << (mode == RopeMode::Neox) << " factors " << with_factors);
      const std::vector<int32_t> positions = {0, 3, 4095, 32767};
      const auto n_tokens = static_cast<int64_t>(positions.size());
      const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_head * head_dim), 70);
      RopeParams params{n_rot, 1000000.0, 0.5, mode, with_factors ? factors.data() : nullptr, 1.19};
      auto want = x;
      rope(want.data(), n_tokens, n_head, head_dim, positions.data(), params);
      params.freq_factors = with_factors ? dfactors.as<float>() : nullptr;
      const Buffer dx = to_device(*cuda, x);
      const Buffer dpos = to_device(*cuda, positions);
      cuda->rope(dx.as<float>(), n_tokens, n_head, head_dim, dpos.as<int32_t>(), params);
      require_ulps(from_device<float>(*cuda, dx.data(), x.size()), want, 1, 1e-2);
    }
  }
}

TEST_CASE("cuda rope with YaRN within an ulp of the CPU op", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const int64_t n_head = 2, head_dim = 64, n_rot = 64;
  for (const RopeMode mode : {RopeMode::Normal, RopeMode::Neox}) {
    INFO("neox " << (mode == RopeMode::Neox));
    const std::vector<int32_t> positions = {0, 5, 4095, 60000};
    const auto n_tokens = static_cast<int64_t>(positions.size());
    const auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n_head * head_dim), 71);
    RopeParams params{n_rot, 150000.0, 1.0 / 32.0, mode, nullptr, 1.0};
    params.ext_factor = 1.0;
    yarn_corr_dims(n_rot, 4096, params.freq_base, 32.0, 1.0, params.corr_low, params.corr_high);
    auto want = x;
    rope(want.data(), n_tokens, n_head, head_dim, positions.data(), params);
    const Buffer dx = to_device(*cuda, x);
    const Buffer dpos = to_device(*cuda, positions);
    cuda->rope(dx.as<float>(), n_tokens, n_head, head_dim, dpos.as<int32_t>(), params);
    require_ulps(from_device<float>(*cuda, dx.data(), x.size()), want, 1, 1e-2);
  }
}

TEST_CASE("cuda add_bias, scale and softcap against the CPU ops", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const int64_t n_rows = 7, n = 1000;
  const auto y = tc::test::random_floats(static_cast<size_t>(n_rows * n), 80, 20.0f);
  const auto bias = tc::test::random_floats(static_cast<size_t>(n), 81);
  auto want_bias = y, want_scale = y, want_cap = y;
  add_bias(want_bias.data(), bias.data(), n_rows, n);
  scale(want_scale.data(), n_rows * n, 0.37f);
  softcap(want_cap.data(), n_rows * n, 5.0f);
  const Buffer db = to_device(*cuda, bias);
  Buffer dy = to_device(*cuda, y);
  cuda->add_bias(dy.as<float>(), db.as<float>(), n_rows, n);
  REQUIRE(same_bits(from_device<float>(*cuda, dy.data(), y.size()), want_bias));
  dy = to_device(*cuda, y);
  cuda->scale(dy.as<float>(), n_rows * n, 0.37f);
  REQUIRE(same_bits(from_device<float>(*cuda, dy.data(), y.size()), want_scale));
  dy = to_device(*cuda, y);
  cuda->softcap(dy.as<float>(), n_rows * n, 5.0f);
  require_ulps(from_device<float>(*cuda, dy.data(), y.size()), want_cap, 4, 1.0);
}
