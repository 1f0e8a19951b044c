// Multi-head latent attention (engine/model/mla_attention.h): the latent
// projections against float64 from the file's tensors on fresh random rows,
// with and without a compressed query, with split attn_k_b / attn_v_b or
// one attn_kv_b, and the cache holding one matrix.
// llama.cpp's forward pass on such files is tests/oracle/arch_oracle_test.cpp's.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/loaded_model.h"
#include "engine/model/mla_attention.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/test_util.h"

namespace {

using tc::test::Matrix;

tc::profiler::MakeModelOptions mla_options(int64_t q_lora_rank, bool unsplit) {
  tc::profiler::MakeModelOptions o;
  o.arch = "deepseek2";
  o.output = tc::test::scratch_dir("mla_" + std::to_string(q_lora_rank) + (unsplit ? "_unsplit" : "")) / "m.gguf";
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 64;
  o.n_head = 4;
  o.n_head_kv = unsplit ? 4 : 1;
  o.head_dim = 32;  // 16 rotated, 16 not; a latent of 64
  o.q_lora_rank = q_lora_rank;
  o.mla_unsplit = unsplit;
  o.n_expert = 4;
  o.n_expert_used = 2;
  o.weight_type = "f32";
  o.seed = 41;
  o.n_threads = 2;
  return o;
}

std::vector<double> rms_norm(const double* x, size_t n, const std::vector<double>& w, double eps) {
  double ss = 0;
  for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * inv * w[i];
  return y;
}

// llama's RoPE (adjacent pairs) of n values at position pos.
void rope(double* x, size_t n, int64_t pos, double base) {
  for (size_t i = 0; i < n; i += 2) {
    const double theta = static_cast<double>(pos) * std::pow(base, -static_cast<double>(i) / static_cast<double>(n));
    const double c = std::cos(theta), s = std::sin(theta), a = x[i], b = x[i + 1];
    x[i] = a * c - b * s;
    x[i + 1] = a * s + b * c;
  }
}

// rows [first, first + n) of m times x.
std::vector<double> rows_times(const Matrix& m, size_t first, size_t n, const double* x) {
  std::vector<double> y(n, 0.0);
  for (size_t r = 0; r < n; ++r) {
    for (size_t c = 0; c < m[first + r].size(); ++c) y[r] += m[first + r][c] * x[c];
  }
  return y;
}

double max_rel(const float* got, const std::vector<double>& want) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    ref = std::max(ref, std::abs(want[i]));
  }
  return diff / ref;
}

}  // namespace

TEST_CASE("latent attention's projections match float64", "[model][mla]") {
  // attn_q or a compressed query; split attn_k_b / attn_v_b or one attn_kv_b.
  for (const auto& [q_lora_rank, unsplit] : {std::pair<int64_t, bool>{0, false}, {48, false}, {48, true}}) {
    INFO("q_lora_rank " << q_lora_rank << ", one attn_kv_b " << unsplit);
    const auto o = mla_options(q_lora_rank, unsplit);
    tc::profiler::make_model(o);
    const auto loaded = tc::model::load_model(o.output);
    const auto& s = loaded->spec;
    REQUIRE(s.is_mla());
    REQUIRE(s.head_dim == 16 + 64);
    REQUIRE(s.n_embd_attn_out() == 4 * 32);
    const auto weights = tc::model::map_llama_weights(loaded->file, s);
    auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    tc::model::MlaAttention mla(s, *backend);
    const auto& f = loaded->file;
    auto name = [](const char* t) { return tc::model::layer_tensor_name(1, t); };
    const auto kv_a = tc::test::load_matrix(f, name("attn_kv_a_mqa"));
    const auto kv_a_norm = tc::test::load_matrix(f, name("attn_kv_a_norm"))[0];
    // Head h's absorption (kv_lora_rank outputs from nope inputs) and value (head_v outputs from the latent).
    const auto kv_b = unsplit ? tc::test::load_matrix(f, name("attn_kv_b")) : Matrix{};
    const auto k_b = unsplit ? Matrix{} : tc::test::load_matrix(f, name("attn_k_b"));
    const auto v_b = unsplit ? Matrix{} : tc::test::load_matrix(f, name("attn_v_b"));
    Matrix wq, q_a, q_b;
    std::vector<double> q_a_norm;
    if (q_lora_rank > 0) {
      q_a = tc::test::load_matrix(f, name("attn_q_a"));
      q_a_norm = tc::test::load_matrix(f, name("attn_q_a_norm"))[0];
      q_b = tc::test::load_matrix(f, name("attn_q_b"));
    } else {
      wq = tc::test::load_matrix(f, name("attn_q"));
    }
    const auto n_head = static_cast<size_t>(s.n_head), n_rot = static_cast<size_t>(s.n_rot);
    const auto rank = static_cast<size_t>(s.kv_lora_rank), head_k = static_cast<size_t>(s.head_dim_k_mla);
    const size_t nope = head_k - n_rot, row = n_rot + rank, head_v = static_cast<size_t>(s.head_dim_v_mla);
    REQUIRE(s.mla_kv_b_unsplit == unsplit);
    auto absorb = [&](size_t h, const double* q_nope) {
      if (!unsplit) return rows_times(k_b, h * rank, rank, q_nope);
      std::vector<double> y(rank, 0.0);  // attn_kv_b's k rows of head h, transposed
      for (size_t r = 0; r < nope; ++r) {
        for (size_t c = 0; c < rank; ++c) y[c] += kv_b[h * (nope + head_v) + r][c] * q_nope[r];
      }
      return y;
    };
    auto value = [&](size_t h, const double* latent) {
      return unsplit ? rows_times(kv_b, h * (nope + head_v) + nope, head_v, latent)
                     : rows_times(v_b, h * head_v, head_v, latent);
    };

    const int64_t n_tokens = 5;
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> in(static_cast<size_t>(n_tokens * s.n_embd));
    for (float& v : in) v = normal(rng);
    const std::vector<int32_t> positions = {0, 3, 4, 9, 30};
    tc::kernels::RopeParams rope_params;
    rope_params.n_rot = s.n_rot;
    rope_params.freq_base = s.rope_freq_base;
    std::vector<float> q(static_cast<size_t>(n_tokens) * n_head * row), kv(static_cast<size_t>(n_tokens) * row);
    mla.project(weights.layers[1], in.data(), n_tokens, positions.data(), rope_params, q.data(), kv.data());

    for (int64_t t = 0; t < n_tokens; ++t) {
      const std::vector<double> x(in.begin() + t * s.n_embd, in.begin() + (t + 1) * s.n_embd);
      std::vector<double> q_full;
      if (q_lora_rank > 0) {
        const auto low = tc::test::matvec(q_a, x);
        q_full = tc::test::matvec(q_b, rms_norm(low.data(), low.size(), q_a_norm, s.rms_eps));
      } else {
        q_full = tc::test::matvec(wq, x);
      }
      std::vector<double> want_q(n_head * row);
      for (size_t h = 0; h < n_head; ++h) {
        const double* head = q_full.data() + h * head_k;
        std::copy(head + nope, head + head_k, want_q.begin() + static_cast<std::ptrdiff_t>(h * row));
        rope(want_q.data() + h * row, n_rot, positions[static_cast<size_t>(t)], s.rope_freq_base);
        const auto absorbed = absorb(h, head);
        std::copy(absorbed.begin(), absorbed.end(), want_q.begin() + static_cast<std::ptrdiff_t>(h * row + n_rot));
      }
      CHECK(max_rel(q.data() + static_cast<size_t>(t) * n_head * row, want_q) < 1e-5);
      const auto raw = tc::test::matvec(kv_a, x);
      std::vector<double> want_kv(raw.begin() + static_cast<std::ptrdiff_t>(rank), raw.end());
      rope(want_kv.data(), n_rot, positions[static_cast<size_t>(t)], s.rope_freq_base);
      const auto latent = rms_norm(raw.data(), rank, kv_a_norm, s.rms_eps);
      want_kv.insert(want_kv.end(), latent.begin(), latent.end());
      CHECK(max_rel(kv.data() + static_cast<size_t>(t) * row, want_kv) < 1e-5);
    }

    // values(): each head's latent part of a random attention output through attn_v_b.
    std::vector<float> attended(q.size()), out(static_cast<size_t>(n_tokens) * n_head * head_v);
    for (float& v : attended) v = normal(rng);
    mla.values(weights.layers[1], attended.data(), n_tokens, out.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::vector<double> want;
      for (size_t h = 0; h < n_head; ++h) {
        std::vector<double> part(attended.begin() + static_cast<std::ptrdiff_t>((t * n_head + h) * row + n_rot),
                                 attended.begin() + static_cast<std::ptrdiff_t>((t * n_head + h + 1) * row));
        const auto y = value(h, part.data());
        want.insert(want.end(), y.begin(), y.end());
      }
      CHECK(max_rel(out.data() + static_cast<size_t>(t) * n_head * head_v, want) < 1e-5);
    }

    // One cached matrix per layer: the latent rows are keys and values.
    tc::runtime::KvCache cache(*backend, s, 2, 16);
    CHECK(cache.v(1, 1) == cache.k(1, 1));
    CHECK(cache.bytes() == static_cast<size_t>(2 * s.n_layer * 16 * s.n_embd_kv()) * sizeof(uint16_t));
    // Keys and values are one matrix: a q8_0 cache must be q8_0 for both,
    // and this model's 80-value rows are not whole q8_0 blocks.
    using tc::kernels::DType;
    CHECK_THROWS_WITH(tc::runtime::KvCache(*backend, s, 2, 16, {DType::Q8_0, DType::F16}),
                      Catch::Contains("latent matrix") && Catch::Contains("the same"));
    CHECK_THROWS_WITH(tc::runtime::KvCache(*backend, s, 2, 16, {DType::Q8_0, DType::Q8_0}),
                      Catch::Contains("multiple of 32") && Catch::Contains("80"));
  }
}
