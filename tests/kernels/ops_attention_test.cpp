// CPU attention (ops.h) against a float64 reference: GQA layouts, decode,
// prefill and a prefill chunk after a cached prefix, head sizes 64/128 and
// one that is not a multiple of 8; bit-identical results for 1..4 threads;
// sharp softmax (scores in the hundreds) and no reads past the causal window;
// sliding windows, soft-capped scores, a given scale and attention sinks;
// an encoder's bidirectional attention, whole or in a symmetric window, with ALiBi; attention_batch (a
// decode step's sequences in one job) against single calls; the AVX-512
// loops against the AVX2 ones, bit for bit; q8_0 keys and/or values
// (store_kv's blocks) against float64 of their dequantized values.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cpu/attention_avx512.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/test_util.h"

namespace {

using namespace tc::kernels;

constexpr double kEpsF32 = 0x1p-23;

struct Shape {
  int64_t n_head;
  int64_t n_head_kv;
  int64_t head_dim;
};

std::vector<uint16_t> to_f16(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_f16(x[i]);
  return h;
}

// One pool per thread count, shared by the test cases of this file.
ThreadPool& pool(int n_threads) {
  static std::unique_ptr<ThreadPool> pools[5];
  if (!pools[n_threads]) pools[n_threads] = std::make_unique<ThreadPool>(n_threads);
  return *pools[n_threads];
}

struct Problem {
  Shape shape;
  int64_t n_kv;
  std::vector<int32_t> positions;
  std::vector<float> q;     // [n_tokens, n_head, head_dim]
  std::vector<uint16_t> k;  // f16 [n_kv, n_head_kv, head_dim]
  std::vector<uint16_t> v;
  AttentionParams params;   // scale, soft-cap, window; k_type and v_type
  // The same K (V) values stored as q8_0 rows by store_kv, read where
  // params.k_type (v_type) is Q8_0: [n_kv, n_head_kv * head_dim / 32] blocks.
  std::vector<BlockQ8_0> k8, v8;

  const void* k_data() const { return params.k_type == DType::Q8_0 ? static_cast<const void*>(k8.data()) : k.data(); }
  const void* v_data() const { return params.v_type == DType::Q8_0 ? static_cast<const void*>(v8.data()) : v.data(); }
  // Element i of K (V) as the cache holds it.
  double k_at(int64_t i) const { return value_at(k, k8, params.k_type, i); }
  double v_at(int64_t i) const { return value_at(v, v8, params.v_type, i); }

  int64_t n_tokens() const { return static_cast<int64_t>(positions.size()); }
  size_t out_size() const { return static_cast<size_t>(n_tokens() * shape.n_head * shape.head_dim); }

 private:
  static double value_at(const std::vector<uint16_t>& h, const std::vector<BlockQ8_0>& q, DType type, int64_t i) {
    if (type != DType::Q8_0) return f16_to_f32(h[static_cast<size_t>(i)]);
    const BlockQ8_0& b = q[static_cast<size_t>(i / 32)];
    return static_cast<double>(b.qs[i % 32]) * static_cast<double>(f16_to_f32(b.d));
  }
};

// The problem's K and/or V values (f32 of its f16 ones) stored as q8_0 by
// store_kv, and read from there.
Problem with_q8_0(Problem p, bool keys, bool values) {
  const int64_t row = p.shape.n_head_kv * p.shape.head_dim;
  auto quantize = [&](const std::vector<uint16_t>& h, std::vector<BlockQ8_0>& out) {
    std::vector<float> f(h.size());
    for (size_t i = 0; i < h.size(); ++i) f[i] = f16_to_f32(h[i]);
    out.resize(h.size() / 32);
    store_kv(f.data(), p.n_kv, row, DType::Q8_0, out.data());
  };
  if (keys) quantize(p.k, p.k8), p.params.k_type = DType::Q8_0;
  if (values) quantize(p.v, p.v8), p.params.v_type = DType::Q8_0;
  return p;
}

Problem make_problem(Shape shape, int64_t n_kv, std::vector<int32_t> positions, uint64_t seed, float q_scale = 1.0f) {
  Problem p{shape, n_kv, std::move(positions), {}, {}, {}, {}, {}, {}};
  const auto kv_size = static_cast<size_t>(n_kv * shape.n_head_kv * shape.head_dim);
  p.q = tc::test::random_floats(p.out_size(), seed, q_scale);
  p.k = to_f16(tc::test::random_floats(kv_size, seed + 1));
  p.v = to_f16(tc::test::random_floats(kv_size, seed + 2));
  return p;
}

std::vector<float> run_attention(const Problem& p, int n_threads) {
  std::vector<float> out(p.out_size(), std::nanf(""));  // poisoned
  attention(p.q.data(), p.k_data(), p.v_data(), p.n_tokens(), p.n_kv, p.shape.n_head, p.shape.n_head_kv,
            p.shape.head_dim, p.positions.data(), out.data(), p.params, pool(n_threads));
  return out;
}

// attention_batch over the problems (one shape), one output each (poisoned first).
std::vector<std::vector<float>> run_attention_batch(const std::vector<Problem>& problems, int n_threads) {
  std::vector<std::vector<float>> outs;
  std::vector<AttentionSequence> seqs;
  for (const Problem& p : problems) outs.emplace_back(p.out_size(), std::nanf(""));
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    seqs.push_back({p.q.data(), p.k_data(), p.v_data(), p.n_tokens(), p.n_kv, p.positions.data(), outs[i].data()});
  }
  const Shape& shape = problems.front().shape;
  attention_batch(seqs, shape.n_head, shape.n_head_kv, shape.head_dim, problems.front().params, pool(n_threads));
  return outs;
}

// ALiBi's slope of head h in float64, written as 2^-(max_bias (h + 1) / n2)
// for the first n2 = 2^floor(log2 n_head) heads, 2^-(max_bias (2 (h - n2) + 1) / (2 n2)) after; 0 without.
double alibi_slope_f64(float max_bias, int64_t n_head, int64_t h) {
  if (max_bias <= 0.0f) return 0.0;
  int64_t n2 = 1;
  while (n2 * 2 <= n_head) n2 *= 2;
  const double b = max_bias;
  return h < n2 ? std::exp2(-b * static_cast<double>(h + 1) / static_cast<double>(n2))
                : std::exp2(-b * static_cast<double>(2 * (h - n2) + 1) / (2.0 * static_cast<double>(n2)));
}

// Compares `out` with softmax(score(q, k)) v over each token's causal
// window, all in float64 from the same K/V values: score = q.k * scale
// (1 / sqrt(head_dim) unless p.params says), soft-capped, ALiBi-biased and windowed as
// p.params says, with each head's sink in the denominator where it has one.
void check_against_reference(const Problem& p, const std::vector<float>& out) {
  const auto [n_head, n_head_kv, head_dim] = p.shape;
  const int64_t n_group = n_head / n_head_kv;
  const double scale = p.params.scale > 0.0f ? p.params.scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  const double cap = p.params.softcap;
  double worst = 0;  // largest error / tolerance seen
  for (int64_t t = 0; t < p.n_tokens(); ++t) {
    // [first, n_ctx): causal, or an encoder's whole cache or symmetric window.
    const int64_t pos = p.positions[t], window = p.params.window;
    const int64_t n_ctx = !p.params.bidirectional ? pos + 1
                          : window > 0            ? std::min(p.n_kv, pos + window / 2 + 1)
                                                  : p.n_kv;
    const int64_t first = window <= 0                ? 0
                          : p.params.bidirectional ? std::max<int64_t>(0, pos - window / 2)
                                                   : std::max<int64_t>(0, n_ctx - window);
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t kv_idx = h / n_group;
      const float* q = p.q.data() + (t * n_head + h) * head_dim;
      std::vector<double> s(static_cast<size_t>(n_ctx), 0.0);
      double max_s = -INFINITY;
      double max_abs_dot = 0;  // largest sum_d |q_d k_d| * scale: the scores' condition
      double max_bias_term = 0;  // largest |score| once ALiBi's bias is added (an f32 add's error)
      for (int64_t j = first; j < n_ctx; ++j) {
        const int64_t k0 = (j * n_head_kv + kv_idx) * head_dim;
        double dot = 0, abs_dot = 0;
        for (int64_t d = 0; d < head_dim; ++d) {
          dot += static_cast<double>(q[d]) * p.k_at(k0 + d);
          abs_dot += std::fabs(static_cast<double>(q[d]) * p.k_at(k0 + d));
        }
        s[j] = dot * scale;
        if (cap > 0) s[j] = cap * std::tanh(s[j] / cap);
        s[j] -= alibi_slope_f64(p.params.alibi_max_bias, n_head, h) * static_cast<double>(std::abs(pos - j));
        max_bias_term = std::max(max_bias_term, std::fabs(s[j]));
        max_s = std::max(max_s, s[j]);
        max_abs_dot = std::max(max_abs_dot, abs_dot * scale);
      }
      // A sink: one more score in the softmax, with no value row.
      const double sink = p.params.sinks != nullptr ? p.params.sinks[h] : -INFINITY;
      max_s = std::max(max_s, sink);
      double sum = p.params.sinks != nullptr ? std::exp(sink - max_s) : 0.0;
      for (int64_t j = first; j < n_ctx; ++j) sum += (s[j] = std::exp(s[j] - max_s));
      for (int64_t d = 0; d < head_dim; ++d) {
        double ref = 0, mag = 0;
        for (int64_t j = first; j < n_ctx; ++j) {
          const double vd = p.v_at((j * n_head_kv + kv_idx) * head_dim + d);
          ref += s[j] / sum * vd;
          mag += s[j] / sum * std::fabs(vd);
        }
        // Error sources, relative to mag = sum_j p_j |v_jd|: each score is an
        // f32 dot with error up to ~head_dim/8 ulps of max_abs_dot (8 lanes),
        // which exp turns into the same relative error of p_j; expf, the
        // normalization and the f32 weighted sum over n_ctx rows add a few
        // ulps times sqrt(n_ctx) in practice: 2e-6 for n_ctx in the hundreds.
        // Observed: under 5e-7 * mag with scores ~N(0,1), 1e-5 * mag with
        // scores in the hundreds (the score term then allows ~5e-4).
        const double tol = mag * (2e-6 + (static_cast<double>(head_dim) / 8 + 4) * kEpsF32 * max_abs_dot +
                                  (p.params.alibi_max_bias > 0.0f ? 4 * kEpsF32 * max_bias_term : 0.0));
        const double got = out[static_cast<size_t>((t * n_head + h) * head_dim + d)];
        INFO("token " << t << " head " << h << " dim " << d << " ref " << ref << " tol " << tol);
        REQUIRE(std::isfinite(got));
        REQUIRE(std::fabs(got - ref) <= tol);
        worst = std::max(worst, std::fabs(got - ref) / tol);
      }
    }
  }
  INFO("worst error / tolerance " << worst);
  CHECK(worst < 1.0);
}

// Same bits for 2..4 threads as for 1.
void check_thread_counts(const Problem& p, const std::vector<float>& out_1) {
  for (int n_threads = 2; n_threads <= 4; ++n_threads) {
    const auto out_n = run_attention(p, n_threads);
    INFO("threads " << n_threads);
    REQUIRE(std::memcmp(out_n.data(), out_1.data(), out_1.size() * sizeof(float)) == 0);
  }
}

std::vector<int32_t> iota_positions(int32_t first, int32_t n) {
  std::vector<int32_t> pos(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = first + i;
  return pos;
}

}  // namespace

TEST_CASE("attention matches float64 for GQA decode, prefill and chunked prefill", "[kernels][ops][attention]") {
  const Shape shape = GENERATE(Shape{8, 2, 64}, Shape{8, 2, 128}, Shape{8, 8, 64}, Shape{8, 8, 128}, Shape{4, 1, 64},
                               Shape{4, 1, 128}, Shape{12, 4, 20}, Shape{10, 10, 32},
                               // Gemma 2-4's 256 and Gemma 4's global layers' 512
                               Shape{4, 2, 256}, Shape{4, 1, 512});
  INFO("n_head " << shape.n_head << " n_head_kv " << shape.n_head_kv << " head_dim " << shape.head_dim);

  SECTION("decode: one token at the last cache position") {
    const int64_t n_kv = 300;
    const auto p = make_problem(shape, n_kv, {static_cast<int32_t>(n_kv - 1)}, 100);
    const auto out = run_attention(p, 1);
    check_against_reference(p, out);
    check_thread_counts(p, out);
  }
  SECTION("prefill: every position of the cache, causally masked") {
    const int64_t n_kv = 37;
    const auto p = make_problem(shape, n_kv, iota_positions(0, static_cast<int32_t>(n_kv)), 200);
    const auto out = run_attention(p, 1);
    check_against_reference(p, out);
    check_thread_counts(p, out);
  }
  SECTION("prefill chunk after a cached prefix: positions n_kv-3..n_kv-1") {
    const int64_t n_kv = 50;
    const auto p = make_problem(shape, n_kv, iota_positions(static_cast<int32_t>(n_kv - 3), 3), 300);
    const auto out = run_attention(p, 1);
    check_against_reference(p, out);
    check_thread_counts(p, out);
  }
}

TEST_CASE("attention is stable for scores far beyond exp's f32 range", "[kernels][ops][attention]") {
  // q ~ N(0, 30^2): scores have sd ~30 and reach the hundreds; exp without
  // max subtraction would overflow to inf and give NaN.
  const auto p = make_problem(Shape{8, 2, 128}, 64, iota_positions(54, 10), 400, 30.0f);
  const auto out = run_attention(p, 1);
  check_against_reference(p, out);
  check_thread_counts(p, out);
}

TEST_CASE("attention reads nothing past a token's position", "[kernels][ops][attention]") {
  // Cache rows after the last query position hold NaN: any read of them
  // (even with weight 0) would show up as NaN in the output.
  auto p = make_problem(Shape{8, 2, 64}, 40, iota_positions(10, 6), 500);
  const int64_t row = p.shape.n_head_kv * p.shape.head_dim;
  for (int64_t j = 16; j < p.n_kv; ++j) {
    std::fill(p.k.begin() + j * row, p.k.begin() + (j + 1) * row, uint16_t{0x7E00});
    std::fill(p.v.begin() + j * row, p.v.begin() + (j + 1) * row, uint16_t{0x7E00});
  }
  const auto out = run_attention(p, 1);
  check_against_reference(p, out);
  check_thread_counts(p, out);
}

namespace {

// Each token of a prefill over `positions`, run alone (as a decode step
// runs it), gives the bits it got among all of them.
void check_alone_as_in_prefill(const Shape& shape, int64_t n_kv, const std::vector<int32_t>& positions,
                               uint64_t seed, bool q8_0 = false) {
  INFO("n_head " << shape.n_head << " n_head_kv " << shape.n_head_kv << " head_dim " << shape.head_dim
                 << (q8_0 ? " q8_0 cache" : ""));
  const auto all = q8_0 ? with_q8_0(make_problem(shape, n_kv, positions, seed), true, true)
                        : make_problem(shape, n_kv, positions, seed);
  const auto out_all = run_attention(all, 2);
  check_against_reference(all, out_all);
  const int64_t per_token = shape.n_head * shape.head_dim;
  for (size_t t = 0; t < positions.size(); ++t) {
    Problem one = all;
    one.positions = {positions[t]};
    one.q.assign(all.q.begin() + static_cast<std::ptrdiff_t>(t) * per_token,
                 all.q.begin() + static_cast<std::ptrdiff_t>(t + 1) * per_token);
    const auto out_one = run_attention(one, 2);
    INFO("token " << t << " position " << positions[t]);
    REQUIRE(std::memcmp(out_one.data(), out_all.data() + t * per_token, per_token * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("attention gives a token the same bits alone as among a prefill's tokens", "[kernels][ops][attention]") {
  // Prefill runs tokens in blocks that share each K/V row's conversion; a
  // decode step runs one token. A token's output must not depend on which.
  // Positions out of order and repeated, across several blocks (of 32
  // tokens: 75 tokens make two full ones and a short one).
  std::vector<int32_t> positions = {5, 0, 29, 30, 17, 17, 3, 22, 9, 31, 1, 12, 26, 8, 19, 2, 30, 14, 6};
  for (int32_t i = 0; i < 56; ++i) positions.push_back((i * 37 + 11) % 96);
  // Head sizes of 72, 80 and 96 (SigLIP's, Phi-2's, Phi-3's) leave a part
  // of 8, 16 or 32 values past the 64s.
  for (const Shape shape : {Shape{8, 2, 64}, Shape{4, 4, 128}, Shape{4, 4, 72}, Shape{6, 2, 80}, Shape{3, 3, 96}}) {
    check_alone_as_in_prefill(shape, 96, positions, 600);
  }
}

TEST_CASE("attention gives a token the same bits alone as in a prefill over several context chunks",
          "[kernels][ops][attention]") {
  // Contexts past 256 positions are cut into chunks whose partial softmaxes
  // are folded: a prefill run folds them as it goes, a decode token's chunks
  // are separate work items folded at the end. Positions at and around the
  // chunk edges (256, 512), out of order.
  const std::vector<int32_t> positions = {255, 0, 256, 699, 257, 511, 3, 512, 300, 513, 128, 650, 255, 767};
  for (const Shape shape : {Shape{8, 2, 64}, Shape{8, 8, 32}, Shape{4, 4, 128}, Shape{6, 3, 20}, Shape{4, 4, 72}}) {
    check_alone_as_in_prefill(shape, 768, positions, 650);
  }
}

TEST_CASE("attention_batch gives each sequence the bits of its own attention call", "[kernels][ops][attention]") {
  // A decode step's mix: one-token sequences at different positions, a
  // prompt chunk after a cached prefix, an empty sequence; 1B-like GQA and
  // 7B-like MHA heads; 2 and 3 threads against single calls on 1 thread.
  for (const Shape shape : {Shape{8, 2, 64}, Shape{8, 8, 32}}) {
    INFO("n_head " << shape.n_head << " n_head_kv " << shape.n_head_kv);
    std::vector<Problem> problems = {
        make_problem(shape, 40, {39}, 700), make_problem(shape, 7, {6}, 710), make_problem(shape, 900, {899}, 715),
        make_problem(shape, 60, iota_positions(48, 12), 720), make_problem(shape, 5, {}, 730),
        make_problem(shape, 1, {0}, 740)};
    std::vector<std::vector<float>> single;
    for (const Problem& p : problems) single.push_back(run_attention(p, 1));
    for (int n_threads : {2, 3}) {
      INFO("threads " << n_threads);
      const auto outs = run_attention_batch(problems, n_threads);
      for (size_t i = 0; i < problems.size(); ++i) {
        INFO("sequence " << i);
        check_against_reference(problems[i], outs[i]);
        REQUIRE(outs[i].size() == single[i].size());
        // (An empty sequence's outputs are empty vectors: no memcmp of their null data.)
        if (!single[i].empty()) REQUIRE(std::memcmp(outs[i].data(), single[i].data(), single[i].size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("attention_batch rejects a position outside a sequence's cache", "[kernels][ops][attention]") {
  const Problem ok = make_problem(Shape{4, 2, 16}, 8, {7}, 800);
  const Problem bad = make_problem(Shape{4, 2, 16}, 8, {8}, 810);
  std::vector<float> out_ok(ok.out_size()), out_bad(bad.out_size());
  const AttentionSequence seqs[] = {
      {ok.q.data(), ok.k.data(), ok.v.data(), 1, ok.n_kv, ok.positions.data(), out_ok.data()},
      {bad.q.data(), bad.k.data(), bad.v.data(), 1, bad.n_kv, bad.positions.data(), out_bad.data()}};
  CHECK_THROWS_WITH(attention_batch(seqs, 4, 2, 16, {}, pool(2)), Catch::Contains("outside the KV cache"));
}

TEST_CASE("attention_batch over more sequences than its inline arrays hold", "[kernels][ops][attention]") {
  const Shape shape{4, 2, 16};
  std::vector<Problem> problems;
  for (int i = 0; i < 40; ++i) problems.push_back(make_problem(shape, 3 + i, {2 + i}, 900 + 10 * i));
  const auto outs = run_attention_batch(problems, 2);
  for (size_t i = 0; i < problems.size(); ++i) {
    INFO("sequence " << i);
    const auto single = run_attention(problems[i], 1);
    REQUIRE(std::memcmp(outs[i].data(), single.data(), single.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("attention with a sliding window matches float64 and reads nothing before the window",
          "[kernels][ops][attention]") {
  // Windows inside one chunk, across the chunk edges (256, 512) and wider
  // than the context; prefill, a chunk after a prefix and decode. Cache rows
  // before every token's window hold NaN: a read of them would show.
  struct Case {
    int64_t window, n_kv;
    std::vector<int32_t> positions;
  };
  const std::vector<Case> cases = {{7, 40, iota_positions(0, 40)},
                                   {300, 700, iota_positions(640, 60)},
                                   {257, 600, {599}},
                                   {1, 20, iota_positions(10, 10)},
                                   {5000, 300, iota_positions(290, 10)}};
  for (const Shape shape : {Shape{8, 2, 64}, Shape{4, 4, 128}, Shape{6, 3, 20}}) {
    for (const Case& c : cases) {
      INFO("n_head " << shape.n_head << " head_dim " << shape.head_dim << " window " << c.window << " n_kv " << c.n_kv);
      auto p = make_problem(shape, c.n_kv, c.positions, 1000 + static_cast<uint64_t>(c.window));
      p.params.window = c.window;
      const int64_t row = shape.n_head_kv * shape.head_dim;
      int64_t first_seen = c.n_kv;
      for (int32_t pos : c.positions) first_seen = std::min<int64_t>(first_seen, std::max<int64_t>(0, pos + 1 - c.window));
      for (int64_t j = 0; j < first_seen; ++j) {
        std::fill(p.k.begin() + j * row, p.k.begin() + (j + 1) * row, uint16_t{0x7E00});
        std::fill(p.v.begin() + j * row, p.v.begin() + (j + 1) * row, uint16_t{0x7E00});
      }
      const auto out = run_attention(p, 1);
      check_against_reference(p, out);
      check_thread_counts(p, out);
    }
  }
}

TEST_CASE("bidirectional attention matches float64, whole or in a symmetric window, reading nothing outside",
          "[kernels][ops][attention]") {
  // An encoder's prompt: every token over the whole cache (positions ahead
  // of it too), or over [p - w/2, p + w/2]; windows inside one chunk and
  // across the chunk edges, a single token (the decode path's chunks), and
  // rows outside every token's window poisoned with NaN.
  struct Case {
    int64_t window, n_kv;
    std::vector<int32_t> positions;
  };
  const std::vector<Case> cases = {{0, 40, iota_positions(0, 40)},
                                   {8, 40, iota_positions(0, 40)},
                                   {0, 600, iota_positions(0, 600)},
                                   {300, 700, iota_positions(200, 60)},
                                   {0, 530, {3}},
                                   {100, 530, {300}}};
  for (const Shape shape : {Shape{8, 2, 64}, Shape{6, 3, 20}}) {
    for (const Case& c : cases) {
      INFO("head_dim " << shape.head_dim << " window " << c.window << " n_kv " << c.n_kv << " tokens "
                       << c.positions.size());
      auto p = make_problem(shape, c.n_kv, c.positions, 3000 + static_cast<uint64_t>(c.window + c.n_kv));
      p.params.window = c.window;
      p.params.bidirectional = true;
      const int64_t row = shape.n_head_kv * shape.head_dim;
      int64_t first_seen = c.n_kv, end_seen = 0;
      for (const int32_t pos : c.positions) {
        first_seen = std::min<int64_t>(first_seen, c.window > 0 ? std::max<int64_t>(0, pos - c.window / 2) : 0);
        const int64_t end = c.window > 0 ? std::min<int64_t>(c.n_kv, pos + c.window / 2 + 1) : c.n_kv;
        end_seen = std::max<int64_t>(end_seen, end);
      }
      for (int64_t j = 0; j < c.n_kv; ++j) {
        if (j >= first_seen && j < end_seen) continue;
        std::fill(p.k.begin() + j * row, p.k.begin() + (j + 1) * row, uint16_t{0x7E00});
        std::fill(p.v.begin() + j * row, p.v.begin() + (j + 1) * row, uint16_t{0x7E00});
      }
      const auto out = run_attention(p, 1);
      check_against_reference(p, out);
      check_thread_counts(p, out);
    }
  }
}

TEST_CASE("attention with soft-capped scores and a given scale matches float64", "[kernels][ops][attention]") {
  // q ~ N(0, 10^2): raw scores reach tens, so a cap of 5 bends most of them;
  // Gemma's pre-scaled query (scale 1/16 for head_dim 64) and a window too.
  for (const AttentionParams params : {AttentionParams{0.0f, 5.0f, 0}, AttentionParams{0.0625f, 0.0f, 0},
                                       AttentionParams{0.0625f, 2.0f, 33}}) {
    INFO("scale " << params.scale << " softcap " << params.softcap << " window " << params.window);
    for (const auto& positions : {iota_positions(0, 50), iota_positions(299, 1)}) {
      auto p = make_problem(Shape{8, 2, 64}, 300, positions, 1100, 10.0f);
      p.params = params;
      const auto out = run_attention(p, 1);
      check_against_reference(p, out);
      check_thread_counts(p, out);
    }
  }
}

TEST_CASE("attention_batch with a sliding window gives each sequence the bits of its own call",
          "[kernels][ops][attention]") {
  std::vector<Problem> problems = {make_problem(Shape{8, 2, 64}, 900, {899}, 1200),
                                   make_problem(Shape{8, 2, 64}, 60, iota_positions(40, 20), 1210),
                                   make_problem(Shape{8, 2, 64}, 5, {4}, 1220)};
  for (Problem& p : problems) p.params = {0.0f, 0.0f, 16};
  const auto outs = run_attention_batch(problems, 3);
  for (size_t i = 0; i < problems.size(); ++i) {
    INFO("sequence " << i);
    check_against_reference(problems[i], outs[i]);
    const auto single = run_attention(problems[i], 1);
    REQUIRE(std::memcmp(outs[i].data(), single.data(), single.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("attention with sinks matches float64", "[kernels][ops][attention]") {
  // gpt-oss's sinks: one logit per head joins the softmax. Sinks from well
  // below the scores (almost no effect) to far above them (most of the
  // weight goes nowhere: small outputs), with and without a window, decode,
  // prefill and prefill over several chunks; attention_batch the same.
  const Shape shape{8, 2, 64};
  std::vector<float> sinks = tc::test::random_floats(static_cast<size_t>(shape.n_head), 1200, 4.0f);
  sinks[0] = -30.0f;
  sinks[1] = 12.0f;
  for (const int64_t window : {int64_t{0}, int64_t{33}}) {
    for (const auto& positions : {iota_positions(0, 50), iota_positions(299, 1), iota_positions(500, 40)}) {
      INFO("window " << window << " first position " << positions[0] << " tokens " << positions.size());
      auto p = make_problem(shape, 600, positions, 1201);
      p.params.window = window;
      p.params.sinks = sinks.data();
      const auto out = run_attention(p, 1);
      check_against_reference(p, out);
      check_thread_counts(p, out);
      const auto batched = run_attention_batch({p}, 2);
      REQUIRE(std::memcmp(batched[0].data(), out.data(), out.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("attention's AVX-512 loops give the AVX2 loops' bits", "[kernels][ops][attention]") {
  if (!detail::attention_zmm_enabled()) {
    WARN("this CPU has no AVX-512 (F/VL) attention loops: zmm vs ymm attention not checked");
    return;
  }
  // Grouped and ungrouped heads, head sizes with and without a 64-multiple
  // (80 and 96 leave their last values to the 8-lane code), decode (one token, several chunks),
  // prefill and a chunk after a prefix; windows cut blocks; one problem
  // with scores in the hundreds. The first block of a window and the last
  // block of a context are partial (fewer than 8 positions).
  const std::vector<Shape> shapes = {{32, 4, 64}, {8, 8, 128}, {12, 4, 80}, {6, 2, 96}, {4, 1, 8}, {2, 2, 256}};
  uint64_t seed = 1300;
  for (const Shape& shape : shapes) {
    for (const auto& positions : {iota_positions(700, 1), iota_positions(0, 37), iota_positions(300, 21)}) {
      for (const int64_t window : {int64_t{0}, int64_t{45}}) {
        INFO("shape " << shape.n_head << "x" << shape.n_head_kv << "x" << shape.head_dim << " first position "
                      << positions[0] << " tokens " << positions.size() << " window " << window);
        const uint64_t s = seed++;
        auto p = make_problem(shape, 701, positions, s, s % 5 == 0 ? 40.0f : 1.0f);
        p.params.window = window;
        detail::set_attention_zmm_for_testing(false);
        const auto ymm = run_attention(p, 2);
        detail::set_attention_zmm_for_testing(true);
        const auto zmm = run_attention(p, 2);
        REQUIRE(detail::attention_zmm_enabled());
        REQUIRE(std::memcmp(zmm.data(), ymm.data(), ymm.size() * sizeof(float)) == 0);
        check_against_reference(p, zmm);
      }
    }
  }
}

TEST_CASE("attention over q8_0 keys and values matches float64 of their dequantized values",
          "[kernels][ops][attention][kv_q8_0]") {
  const Shape shape = GENERATE(Shape{8, 2, 64}, Shape{8, 8, 128}, Shape{4, 1, 64}, Shape{10, 10, 32}, Shape{6, 2, 96});
  const auto [keys, values] = GENERATE(std::pair{true, true}, std::pair{true, false}, std::pair{false, true});
  INFO("n_head " << shape.n_head << " n_head_kv " << shape.n_head_kv << " head_dim " << shape.head_dim
                 << " q8_0 keys " << keys << " q8_0 values " << values);
  SECTION("decode: one token over three context chunks") {
    const auto p = with_q8_0(make_problem(shape, 700, {699}, 2100), keys, values);
    const auto out = run_attention(p, 1);
    check_against_reference(p, out);
    check_thread_counts(p, out);
  }
  SECTION("prefill, and a chunk after a cached prefix") {
    for (const auto& positions : {iota_positions(0, 37), iota_positions(290, 11)}) {
      const auto p = with_q8_0(make_problem(shape, 301, positions, 2200), keys, values);
      const auto out = run_attention(p, 1);
      check_against_reference(p, out);
      check_thread_counts(p, out);
    }
  }
  SECTION("a sliding window and soft-capped scores") {
    auto p = with_q8_0(make_problem(shape, 301, iota_positions(250, 9), 2300, 4.0f), keys, values);
    p.params.window = 45;
    p.params.softcap = 5.0f;
    const auto out = run_attention(p, 2);
    check_against_reference(p, out);
  }
}

TEST_CASE("attention over a q8_0 cache gives a token the same bits alone as in a prefill",
          "[kernels][ops][attention][kv_q8_0]") {
  // Around the chunk edges, then more to fill a second block of 32 tokens.
  std::vector<int32_t> positions = {255, 0, 256, 699, 257, 511, 3, 512, 300, 513, 128, 650, 255, 767};
  for (int32_t i = 0; i < 26; ++i) positions.push_back((i * 293 + 40) % 768);
  for (const Shape shape : {Shape{8, 2, 64}, Shape{4, 4, 128}, Shape{6, 3, 32}}) {
    check_alone_as_in_prefill(shape, 768, positions, 2400, true);
  }
}

TEST_CASE("attention over a q8_0 cache reads nothing past a token's position", "[kernels][ops][attention][kv_q8_0]") {
  // Rows after the last query position are blocks whose scale is NaN: any
  // read of them would show up as NaN in the output.
  auto p = with_q8_0(make_problem(Shape{8, 2, 64}, 40, iota_positions(10, 6), 2500), true, true);
  const int64_t blocks_per_row = p.shape.n_head_kv * p.shape.head_dim / 32;
  for (auto* blocks : {&p.k8, &p.v8}) {
    for (auto b = static_cast<size_t>(16 * blocks_per_row); b < blocks->size(); ++b) (*blocks)[b].d = 0x7E00;
  }
  const auto out = run_attention(p, 1);
  check_against_reference(p, out);
  check_thread_counts(p, out);
}

TEST_CASE("attention refuses a q8_0 cache whose heads are not whole blocks", "[kernels][ops][attention][kv_q8_0]") {
  auto p = make_problem(Shape{4, 2, 48}, 8, {7}, 2600);
  p.params.k_type = DType::Q8_0;
  p.k8.resize(p.k.size() / 32);
  CHECK_THROWS_WITH(run_attention(p, 1), Catch::Contains("multiple of 32"));
  p.params.k_type = DType::Q4_0;
  CHECK_THROWS_WITH(run_attention(p, 1), Catch::Contains("f16 or q8_0"));
}

TEST_CASE("attention's AVX-512 loops give the AVX2 loops' bits over a q8_0 cache", "[kernels][ops][attention][kv_q8_0]") {
  if (!detail::attention_zmm_enabled()) {
    WARN("this CPU has no AVX-512 (F/VL) attention loops: zmm vs ymm attention not checked");
    return;
  }
  uint64_t seed = 2700;
  for (const Shape& shape : std::vector<Shape>{{32, 4, 64}, {8, 8, 128}, {6, 2, 96}, {2, 2, 256}}) {
    for (const auto& positions : {iota_positions(700, 1), iota_positions(0, 37), iota_positions(300, 21)}) {
      for (const auto& [keys, values] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
        INFO("shape " << shape.n_head << "x" << shape.n_head_kv << "x" << shape.head_dim << " first position "
                      << positions[0] << " tokens " << positions.size() << " q8_0 keys " << keys << " values "
                      << values);
        const auto p = with_q8_0(make_problem(shape, 701, positions, seed++), keys, values);
        detail::set_attention_zmm_for_testing(false);
        const auto ymm = run_attention(p, 2);
        detail::set_attention_zmm_for_testing(true);
        const auto zmm = run_attention(p, 2);
        REQUIRE(std::memcmp(zmm.data(), ymm.data(), ymm.size() * sizeof(float)) == 0);
        check_against_reference(p, zmm);
      }
    }
  }
}

TEST_CASE("store_kv writes f16 as store_f16 and q8_0 as quantize_row, and keeps NaN", "[kernels][ops][kv_q8_0]") {
  const int64_t n_rows = 3, row_len = 96;
  auto x = tc::test::random_floats(static_cast<size_t>(n_rows * row_len), 2800, 3.0f);
  std::vector<uint16_t> f16(x.size()), f16_want(x.size());
  store_kv(x.data(), n_rows, row_len, DType::F16, f16.data());
  store_f16(x.data(), n_rows * row_len, f16_want.data());
  CHECK(f16 == f16_want);

  std::vector<BlockQ8_0> q(x.size() / 32), q_want(x.size() / 32);
  store_kv(x.data(), n_rows, row_len, DType::Q8_0, q.data());
  quantize_row(DType::Q8_0, x.data(), q_want.data(), n_rows * row_len);
  CHECK(std::memcmp(q.data(), q_want.data(), q.size() * sizeof(BlockQ8_0)) == 0);

  // A NaN or an infinity makes its block read back as NaN; the others are untouched.
  x[40] = std::nanf("");
  x[200] = INFINITY;
  store_kv(x.data(), n_rows, row_len, DType::Q8_0, q.data());
  std::vector<float> back(x.size());
  dequantize_row(DType::Q8_0, q.data(), back.data(), n_rows * row_len);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t block = i / 32;
    INFO("value " << i);
    if (block == 1 || block == 6) {
      CHECK(std::isnan(back[i]));
    } else {
      CHECK(std::memcmp(&q[block], &q_want[block], sizeof(BlockQ8_0)) == 0);
    }
  }
  CHECK_THROWS_WITH(store_kv(x.data(), 1, 48, DType::Q8_0, q.data()), Catch::Contains("whole blocks"));
}

TEST_CASE("alibi_slope gives ggml's slopes for power-of-two and other head counts", "[kernels][ops][attention]") {
  // max_bias 8: 8 heads take 2^-1 .. 2^-8; 12 heads take those, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
  for (int64_t h = 0; h < 8; ++h) CHECK(alibi_slope(8.0f, 8, h) == std::ldexp(1.0f, -static_cast<int>(h + 1)));
  for (int64_t h = 0; h < 8; ++h) CHECK(alibi_slope(8.0f, 12, h) == alibi_slope(8.0f, 8, h));
  for (const int64_t n_head : {1, 3, 5, 6, 12, 16, 24}) {
    for (int64_t h = 0; h < n_head; ++h) {
      INFO("n_head " << n_head << " head " << h);
      const double want = alibi_slope_f64(8.0f, n_head, h);
      CHECK(std::fabs(alibi_slope(8.0f, n_head, h) - want) <= 4 * kEpsF32 * want);
    }
  }
  CHECK(alibi_slope(8.0f, 12, 9) == Approx(std::exp2(-1.5)).epsilon(1e-6));
}

TEST_CASE("attention with ALiBi matches float64 for bidirectional and causal attention and any split",
          "[kernels][ops][attention]") {
  // jina-bert-v2's slope_h * -|p - j| on every score: head counts a power of
  // two and not (12 = 8 + 4, 6, 5), contexts over several chunks, in a
  // symmetric window, a single token (a decode's chunks), causal prefill;
  // 1..4 threads the same bits, and each token alone the bits it had among all.
  struct Case {
    bool bidirectional;
    int64_t window, n_kv;
    std::vector<int32_t> positions;
  };
  const std::vector<Case> cases = {{true, 0, 40, iota_positions(0, 40)},     {true, 0, 600, iota_positions(0, 600)},
                                   {true, 100, 530, iota_positions(200, 90)}, {true, 0, 530, {300}},
                                   {false, 0, 300, iota_positions(0, 300)},   {false, 0, 530, {529}}};
  for (const Shape shape : {Shape{8, 2, 64}, Shape{12, 12, 32}, Shape{6, 3, 20}, Shape{5, 1, 64}}) {
    for (const Case& c : cases) {
      INFO("n_head " << shape.n_head << " bidirectional " << c.bidirectional << " window " << c.window << " n_kv "
                     << c.n_kv << " tokens " << c.positions.size());
      auto p = make_problem(shape, c.n_kv, c.positions, 4100 + static_cast<uint64_t>(c.n_kv + shape.n_head));
      p.params.bidirectional = c.bidirectional;
      p.params.window = c.window;
      p.params.alibi_max_bias = 8.0f;
      const auto out = run_attention(p, 1);
      check_against_reference(p, out);
      check_thread_counts(p, out);
      const int64_t per_token = shape.n_head * shape.head_dim;
      for (size_t t = 0; t < c.positions.size() && c.positions.size() > 1; t += 37) {
        Problem one = p;
        one.positions = {c.positions[t]};
        one.q.assign(p.q.begin() + static_cast<std::ptrdiff_t>(t) * per_token,
                     p.q.begin() + static_cast<std::ptrdiff_t>(t + 1) * per_token);
        const auto out_one = run_attention(one, 2);
        INFO("token " << t);
        REQUIRE(std::memcmp(out_one.data(), out.data() + t * per_token, per_token * sizeof(float)) == 0);
      }
    }
  }
  // Without ALiBi the scores are untouched: a bias of 0 gives the plain bits.
  auto p = make_problem(Shape{8, 2, 64}, 40, iota_positions(0, 40), 4200);
  p.params.bidirectional = true;
  const auto plain = run_attention(p, 1);
  p.params.alibi_max_bias = 8.0f;
  CHECK(std::memcmp(plain.data(), run_attention(p, 1).data(), plain.size() * sizeof(float)) != 0);
}
