// CUDA attention over the f16 KV cache against a float64 reference: GQA
// layouts, decode, prefill and a prefill chunk after a cached prefix, head
// sizes 64, 128, 256 and 72 (not a multiple of the warp); scores in the
// hundreds; nothing read past a token's position; a token's bits alone equal
// its bits within the prefill; a position outside the cache gives NaN.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/backend.h"
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

struct Shape {
  int64_t n_head, n_head_kv, head_dim;
};

struct Problem {
  Shape shape;
  int64_t n_kv;
  std::vector<int32_t> positions;
  std::vector<float> q;     // f32 [n_tokens, n_head, head_dim]
  std::vector<uint16_t> k;  // f16 [n_kv, n_head_kv, head_dim]
  std::vector<uint16_t> v;  // f16 [n_kv, n_head_kv, head_dim]
  AttentionParams params;   // scale, soft-cap, window

  int64_t n_tokens() const { return static_cast<int64_t>(positions.size()); }
  size_t out_size() const { return static_cast<size_t>(n_tokens() * shape.n_head * shape.head_dim); }
};

std::vector<uint16_t> to_f16(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_f16(x[i]);
  return h;
}

std::vector<int32_t> iota_positions(int32_t first, int32_t n) {
  std::vector<int32_t> pos(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = first + i;
  return pos;
}

Problem make_problem(Shape shape, int64_t n_kv, std::vector<int32_t> positions, uint64_t seed, float q_scale = 1.0f) {
  Problem p{shape, n_kv, std::move(positions), {}, {}, {}, {}};
  const auto kv_size = static_cast<size_t>(n_kv * shape.n_head_kv * shape.head_dim);
  p.q = tc::test::random_floats(p.out_size(), seed, q_scale);
  p.k = to_f16(tc::test::random_floats(kv_size, seed + 1));
  p.v = to_f16(tc::test::random_floats(kv_size, seed + 2));
  return p;
}

// Runs the op on the device for tokens [offset, offset + n_tokens) of p
// (all of them by default), output poisoned with NaN first.
std::vector<float> run_attention(Backend& cuda, const Problem& p, int64_t offset = 0,
                                 int64_t n_tokens = -1) {
  if (n_tokens < 0) n_tokens = p.n_tokens();
  const auto [n_head, n_head_kv, head_dim] = p.shape;
  const std::vector<float> q(p.q.begin() + offset * n_head * head_dim,
                             p.q.begin() + (offset + n_tokens) * n_head * head_dim);
  const std::vector<int32_t> pos(p.positions.begin() + offset,
                                 p.positions.begin() + offset + n_tokens);
  const Buffer dq = to_device(cuda, q);
  const Buffer dk = to_device(cuda, p.k);
  const Buffer dv = to_device(cuda, p.v);
  const Buffer dpos = to_device(cuda, pos);
  const size_t n_out = static_cast<size_t>(n_tokens * n_head * head_dim);
  const Buffer dout = poisoned_device(cuda, n_out);
  cuda.attention(dq.as<float>(), dk.as<uint16_t>(), dv.as<uint16_t>(), n_tokens, p.n_kv, n_head, n_head_kv, head_dim,
                 dpos.as<int32_t>(), dout.as<float>(), p.params);
  return from_device<float>(cuda, dout.data(), n_out);
}

// softmax(score(q, k)) v over each token's causal window in float64 from
// the same f16 K/V (score = q.k * scale, soft-capped and windowed as
// p.params says); the tolerance of ops_attention_test.cpp (score error up to
// ~head_dim/8 ulps of the scores' condition, plus a few ulps of the weighted
// sum).
void check_against_reference(const Problem& p, const std::vector<float>& out) {
  const auto [n_head, n_head_kv, head_dim] = p.shape;
  const int64_t n_group = n_head / n_head_kv;
  const double scale = p.params.scale > 0.0f ? p.params.scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  const double cap = p.params.softcap;
  for (int64_t t = 0; t < p.n_tokens(); ++t) {
    const int64_t n_ctx = p.positions[static_cast<size_t>(t)] + 1;
    const int64_t first = p.params.window > 0 ? std::max<int64_t>(0, n_ctx - p.params.window) : 0;
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t kv_idx = h / n_group;
      const float* q = p.q.data() + (t * n_head + h) * head_dim;
      std::vector<double> s(static_cast<size_t>(n_ctx), 0.0);
      double max_s = -INFINITY, max_abs_dot = 0;
      for (int64_t j = first; j < n_ctx; ++j) {
        const uint16_t* k = p.k.data() + (j * n_head_kv + kv_idx) * head_dim;
        double dot = 0, abs_dot = 0;
        for (int64_t d = 0; d < head_dim; ++d) {
          dot += static_cast<double>(q[d]) * f16_to_f32(k[d]);
          abs_dot += std::fabs(static_cast<double>(q[d]) * f16_to_f32(k[d]));
        }
        double score = dot * scale;
        if (cap > 0) score = cap * std::tanh(score / cap);
        s[static_cast<size_t>(j)] = score;
        max_s = std::max(max_s, score);
        max_abs_dot = std::max(max_abs_dot, abs_dot * scale);
      }
      double sum = 0;
      for (int64_t j = first; j < n_ctx; ++j) {
        double& x = s[static_cast<size_t>(j)];
        sum += (x = std::exp(x - max_s));
      }
      for (int64_t d = 0; d < head_dim; ++d) {
        double ref = 0, mag = 0;
        for (int64_t j = first; j < n_ctx; ++j) {
          const double vd = f16_to_f32(p.v[static_cast<size_t>((j * n_head_kv + kv_idx) * head_dim + d)]);
          ref += s[static_cast<size_t>(j)] / sum * vd;
          mag += s[static_cast<size_t>(j)] / sum * std::fabs(vd);
        }
        const double tol = mag * (2e-6 + (static_cast<double>(head_dim) / 8 + 4) * kEpsF32 * max_abs_dot);
        const double got = out[static_cast<size_t>((t * n_head + h) * head_dim + d)];
        INFO("token " << t << " head " << h << " dim " << d << " got " << got << " ref " << ref << " tol " << tol);
        REQUIRE(std::isfinite(got));
        REQUIRE(std::fabs(got - ref) <= tol);
      }
    }
  }
}

}  // namespace

TEST_CASE("cuda attention: matches float64 for GQA decode, prefill and chunked prefill", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  uint64_t seed = 1;
  for (const Shape shape : {Shape{8, 8, 64}, Shape{8, 2, 128}, Shape{6, 3, 72}, Shape{4, 1, 256}, Shape{2, 2, 16}}) {
    INFO("heads " << shape.n_head << "/" << shape.n_head_kv << " head_dim " << shape.head_dim);
    SECTION("decode at several cache lengths") {
      for (int32_t pos : {0, 1, 2, 3, 4, 37, 300}) {
        INFO("position " << pos);
        const Problem p = make_problem(shape, pos + 1, {pos}, seed++);
        check_against_reference(p, run_attention(*cuda, p));
      }
    }
    SECTION("prefill from 0 and a chunk after a cached prefix, in a longer cache") {
      const Problem full = make_problem(shape, 80, iota_positions(0, 40), seed++);
      check_against_reference(full, run_attention(*cuda, full));
      const Problem chunk = make_problem(shape, 80, iota_positions(50, 17), seed++);
      check_against_reference(chunk, run_attention(*cuda, chunk));
    }
  }
}

TEST_CASE("cuda attention: stable for scores far beyond exp's f32 range", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  // q scaled by 60: scores in the hundreds, exp(score) overflows f32.
  const Problem p = make_problem(Shape{4, 2, 64}, 200, iota_positions(190, 10), 7, 60.0f);
  check_against_reference(p, run_attention(*cuda, p));
}

TEST_CASE("cuda attention: reads nothing past a token's position, and a bad position gives NaN", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  Problem p = make_problem(Shape{4, 2, 64}, 64, iota_positions(10, 5), 9);
  // Rows 15.. are beyond every window: NaN there must not reach the output.
  const size_t row = static_cast<size_t>(p.shape.n_head_kv * p.shape.head_dim);
  std::fill(p.k.begin() + 15 * row, p.k.end(), uint16_t{0x7e00});
  std::fill(p.v.begin() + 15 * row, p.v.end(), uint16_t{0x7e00});
  check_against_reference(p, run_attention(*cuda, p));

  Problem bad = make_problem(Shape{4, 2, 64}, 16, {3, 16, -1}, 10);
  const auto out = run_attention(*cuda, bad);
  const size_t per_token = static_cast<size_t>(4 * 64);
  for (size_t i = 0; i < per_token; ++i) REQUIRE(std::isfinite(out[i]));
  for (size_t i = per_token; i < out.size(); ++i) REQUIRE(std::isnan(out[i]));
}

TEST_CASE("cuda attention: a token gives the same bits alone as among a prefill's tokens", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const Problem p = make_problem(Shape{8, 2, 128}, 64, iota_positions(0, 33), 11);
  const auto all = run_attention(*cuda, p);
  const size_t per_token = static_cast<size_t>(8 * 128);
  for (int64_t t : {0, 7, 32}) {
    const auto alone = run_attention(*cuda, p, t, 1);
    REQUIRE(same_bits(alone, std::vector<float>(all.begin() + t * per_token, all.begin() + (t + 1) * per_token)));
  }
}

TEST_CASE("cuda attention: sliding window, soft-cap and a given scale match float64", "[cuda]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  for (const AttentionParams params : {AttentionParams{0.0f, 0.0f, 7}, AttentionParams{0.0f, 5.0f, 0},
                                       AttentionParams{0.0625f, 2.0f, 33}}) {
    INFO("scale " << params.scale << " softcap " << params.softcap << " window " << params.window);
    for (const auto& positions : {iota_positions(0, 50), iota_positions(299, 1)}) {
      auto p = make_problem(Shape{8, 2, 64}, 300, positions, 1100, 10.0f);
      p.params = params;
      check_against_reference(p, run_attention(*cuda, p));
    }
  }
}
