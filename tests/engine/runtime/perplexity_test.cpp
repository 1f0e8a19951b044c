// perplexity(): equal to the value computed from the float64 reference
// forward pass's logits, independent of batch size, thread count and of
// which other chunks ran; llama.cpp's chunking and error estimate; clear
// errors for texts too short and bad options.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/perplexity.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"
// The reference forward pass lives in tc_tests_model's folder; this suite
// compiles it in (tests/CMakeLists.txt globs one folder per suite).
#include "tests/engine/model/reference_forward.cpp"  // NOLINT(bugprone-suspicious-include)

using tc::runtime::KvCache;
using tc::runtime::PerplexityOptions;
using tc::text::TokenId;

namespace {

struct Fixture {
  std::unique_ptr<tc::kernels::Backend> backend;
  std::unique_ptr<tc::model::LlamaModel> model;
};

const tc::model::LoadedModel& shared_model() {
  static const auto loaded = [] {
    tc::profiler::MakeModelOptions o;
    o.output = tc::test::scratch_dir("perplexity_model") / "m.gguf";
    o.n_vocab = 512;
    o.n_embd = 64;
    o.n_layer = 2;
    o.n_ff = 128;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.weight_type = "f32";
    o.ffn_form = tc::model::FfnForm::SwiGLU;
    o.seed = 21;
    tc::profiler::make_model(o);
    return tc::model::load_model(o.output);
  }();
  return *loaded;
}

Fixture make_fixture(int n_threads) {
  Fixture f;
  const auto& m = shared_model();
  f.backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = n_threads});
  f.model = std::make_unique<tc::model::LlamaModel>(m, *f.backend);
  return f;
}

// BOS, then seeded random ids (never BOS) as a tokenized text would be.
std::vector<TokenId> text_tokens(size_t n, uint64_t seed) {
  const auto& vocab = shared_model().tokenizer->vocab();
  std::mt19937_64 rng(seed);
  std::vector<TokenId> out{vocab.bos_id};
  while (out.size() < n) {
    const auto id = static_cast<TokenId>(rng() % static_cast<uint64_t>(vocab.n_vocab()));
    if (id != vocab.bos_id) out.push_back(id);
  }
  return out;
}

tc::runtime::PerplexityResult run(const std::vector<TokenId>& tokens, const PerplexityOptions& o, int n_threads = 2,
                                  const tc::runtime::PerplexityCallbacks& callbacks = {}) {
  auto f = make_fixture(n_threads);
  KvCache kv(*f.backend, f.model->spec(), 1, o.n_ctx);
  return tc::runtime::perplexity(*f.model, kv, tokens, shared_model().tokenizer->vocab().bos_id, o, callbacks);
}

}  // namespace

TEST_CASE("perplexity equals the float64 reference's within 1e-4", "[runtime][perplexity]") {
  const auto tokens = text_tokens(3 * 16 + 5, 1);  // three whole chunks and a tail that is not scored
  const PerplexityOptions o{.n_ctx = 16, .n_batch = 16, .n_chunks = 0};
  const auto r = run(tokens, o);
  REQUIRE(r.n_chunks == 3);
  REQUIRE(r.n_scored == 3 * 7);  // positions 8..14 of each chunk predict tokens 9..15
  REQUIRE(r.n_tokens == static_cast<int64_t>(tokens.size()));

  const auto& m = shared_model();
  const TokenId bos = m.tokenizer->vocab().bos_id;
  std::vector<double> nlls;
  for (int64_t c = 0; c < 3; ++c) {
    const auto chunk = tc::runtime::chunk_tokens(tokens, c * 16, 16, bos);
    REQUIRE(chunk[0] == bos);
    const auto logits = tc::test::reference_logits(m.file, m.spec, chunk);
    double chunk_nll = 0;
    for (size_t j = 8; j < 15; ++j) {
      const auto& row = logits[j];
      double top = row[0];
      for (const double v : row) top = std::max(top, v);
      double sum = 0;
      for (const double v : row) sum += std::exp(v - top);
      const double nll = std::log(sum) - (row[static_cast<size_t>(chunk[j + 1])] - top);
      nlls.push_back(nll);
      chunk_nll += nll;
    }
    CHECK(std::abs(r.chunk_nll_sums[static_cast<size_t>(c)] - chunk_nll) <= 1e-4 * chunk_nll);
  }
  double mean = 0, mean_sq = 0;
  for (const double v : nlls) {
    mean += v / static_cast<double>(nlls.size());
    mean_sq += v * v / static_cast<double>(nlls.size());
  }
  const double ppl = std::exp(mean);
  CHECK(std::abs(r.ppl - ppl) <= 1e-4 * ppl);
  CHECK(std::abs(r.mean_nll - mean) <= 1e-4 * mean);
  const double error = std::sqrt((mean_sq - mean * mean) / static_cast<double>(nlls.size() - 1)) * ppl;
  CHECK(std::abs(r.ppl_error - error) <= 1e-3 * error);
  CHECK(r.ppl > 1.0);
}

TEST_CASE("perplexity does not depend on batch size or thread count", "[runtime][perplexity]") {
  const auto tokens = text_tokens(2 * 24 + 3, 2);
  const auto base = run(tokens, {.n_ctx = 24, .n_batch = 24, .n_chunks = 0}, 2);
  for (const int64_t batch : {1, 5, 12, 100}) {
    for (const int threads : {1, 2}) {
      INFO("batch " << batch << ", threads " << threads);
      const auto r = run(tokens, {.n_ctx = 24, .n_batch = batch, .n_chunks = 0}, threads);
      CHECK(r.ppl == base.ppl);
      CHECK(r.chunk_nll_sums == base.chunk_nll_sums);
    }
  }
}

TEST_CASE("perplexity chunks are independent: each starts from an empty cache", "[runtime][perplexity]") {
  const auto tokens = text_tokens(4 * 16, 3);
  const PerplexityOptions all{.n_ctx = 16, .n_batch = 7, .n_chunks = 0};
  const auto full = run(tokens, all);
  REQUIRE(full.n_chunks == 4);

  // --chunks 2 gives the first two chunks of the full run.
  auto first_two = run(tokens, {.n_ctx = 16, .n_batch = 7, .n_chunks = 2});
  REQUIRE(first_two.n_chunks == 2);
  CHECK(first_two.chunk_nll_sums[0] == full.chunk_nll_sums[0]);
  CHECK(first_two.chunk_nll_sums[1] == full.chunk_nll_sums[1]);

  // Chunks 2 and 3 on their own (tokens from 32 on; BOS replaces the first
  // token either way) score exactly as inside the full run.
  const std::vector<TokenId> tail(tokens.begin() + 32, tokens.end());
  const auto alone = run(tail, all);
  REQUIRE(alone.n_chunks == 2);
  CHECK(alone.chunk_nll_sums[0] == full.chunk_nll_sums[2]);
  CHECK(alone.chunk_nll_sums[1] == full.chunk_nll_sums[3]);

  // The final value combines the chunks; the callbacks see every chunk and step.
  double total = 0;
  for (const double v : full.chunk_nll_sums) total += v;
  CHECK(std::abs(full.mean_nll - total / static_cast<double>(full.n_scored)) < 1e-12);
  std::vector<tc::runtime::PerplexityChunk> seen;
  int64_t last_done = 0, last_total = 0;
  tc::runtime::PerplexityCallbacks cb;
  cb.on_chunk = [&](const tc::runtime::PerplexityChunk& c) { seen.push_back(c); };
  cb.on_progress = [&](int64_t done, int64_t n) {
    CHECK(done > last_done);
    last_done = done;
    last_total = n;
  };
  const auto again = run(tokens, all, 2, cb);
  REQUIRE(seen.size() == 4);
  CHECK(last_done == 4 * 16);
  CHECK(last_total == 4 * 16);
  double running = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].index == static_cast<int64_t>(i));
    CHECK(seen[i].n_chunks == 4);
    CHECK(seen[i].n_scored == 7);
    running += seen[i].nll_sum;
    CHECK(std::abs(seen[i].running_ppl - std::exp(running / (7.0 * static_cast<double>(i + 1)))) < 1e-9);
  }
  CHECK(seen.back().running_ppl == Approx(again.ppl).epsilon(1e-12));
}

TEST_CASE("perplexity rejects texts shorter than two chunks and bad options", "[runtime][perplexity]") {
  auto f = make_fixture(1);
  KvCache kv(*f.backend, f.model->spec(), 1, 32);
  const TokenId bos = shared_model().tokenizer->vocab().bos_id;
  const auto short_text = text_tokens(31, 4);
  try {
    tc::runtime::perplexity(*f.model, kv, short_text, bos, {.n_ctx = 16, .n_batch = 16, .n_chunks = 0});
    FAIL("no error for 31 tokens with a context of 16");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("31 tokens") != std::string::npos);
    CHECK(what.find("at least 32") != std::string::npos);
  }
  const auto text = text_tokens(64, 5);
  CHECK_NOTHROW(tc::runtime::perplexity(*f.model, kv, text, bos, {.n_ctx = 16, .n_batch = 16, .n_chunks = 0}));
  CHECK_THROWS_WITH(tc::runtime::perplexity(*f.model, kv, text, bos, {.n_ctx = 3, .n_batch = 3, .n_chunks = 0}),
                    Catch::Contains("at least 4 tokens"));
  CHECK_THROWS_WITH(tc::runtime::perplexity(*f.model, kv, text, bos, {.n_ctx = 16, .n_batch = 0, .n_chunks = 0}),
                    Catch::Contains("batch size"));
  const auto long_text = text_tokens(128, 6);
  CHECK_THROWS_WITH(tc::runtime::perplexity(*f.model, kv, long_text, bos, {.n_ctx = 64, .n_batch = 8, .n_chunks = 0}),
                    Catch::Contains("KV cache holds 32"));
  auto bad = text;
  bad[40] = 100000;
  CHECK_THROWS_WITH(tc::runtime::perplexity(*f.model, kv, bad, bos, {.n_ctx = 16, .n_batch = 16, .n_chunks = 0}),
                    Catch::Contains("chunk 2"));
  CHECK(kv.n_used(0) == 0);
}

TEST_CASE("negative_log_likelihood is -log softmax", "[runtime][perplexity]") {
  const std::vector<float> logits{1.0f, 2.0f, 3.0f, -1000.0f};
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  CHECK(tc::runtime::negative_log_likelihood(logits, 2) == Approx(-std::log(std::exp(3.0) / z)).epsilon(1e-12));
  CHECK(tc::runtime::negative_log_likelihood(logits, 0) == Approx(-std::log(std::exp(1.0) / z)).epsilon(1e-12));
  CHECK(tc::runtime::negative_log_likelihood(logits, 3) == Approx(1000.0 + std::log(z)).epsilon(1e-9));
}
