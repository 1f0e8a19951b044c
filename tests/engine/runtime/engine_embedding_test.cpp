// Engine embedding requests: the rows LlamaModel::forward returns for
// embeddings are the output-normed hidden states the head reads (their
// products with the f16 head rows, in float64, are the logits); the engine's
// last / mean / cls pools equal those rows pooled by hand, bit for bit,
// whatever the chunking, the requests beside them and prefix reuse; and the
// refusals. On a small generated F16 model.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/llama_weights.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/cpu/quantize.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

using namespace std::chrono_literals;
using tc::model::Pooling;
using tc::runtime::Engine;
using tc::runtime::GenerationRequest;
using tc::runtime::StreamEvent;
using tc::runtime::SubmitStatus;
using tc::text::TokenId;

namespace {

constexpr int32_t kVocab = 512;
constexpr int64_t kEmbd = 64;
constexpr int64_t kCtx = 256;

const std::shared_ptr<const tc::model::LoadedModel>& f16_model() {
  static const std::shared_ptr<const tc::model::LoadedModel> model = [] {
    tc::profiler::MakeModelOptions o;
    o.output = tc::test::scratch_dir("engine_embedding_model") / "m.gguf";
    o.n_vocab = kVocab;
    o.n_embd = kEmbd;
    o.n_layer = 2;
    o.n_ff = 160;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.n_ctx = kCtx;
    o.weight_type = "f16";
    o.seed = 41;
    o.n_threads = 2;
    tc::profiler::make_model(o);
    return std::shared_ptr<const tc::model::LoadedModel>(tc::model::load_model(o.output));
  }();
  return model;
}

std::vector<TokenId> random_prompt(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> out = {1};
  while (out.size() < n) out.push_back(static_cast<TokenId>(3 + rng() % (kVocab - 3)));
  return out;
}

// Every position's embedding row of `prompt` in one step from an empty
// cache: f32 [n, n_embd]; and the same step's logits, f32 [n, n_vocab].
void forward_rows(const std::vector<TokenId>& prompt, std::vector<float>& rows, std::vector<float>* logits) {
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  tc::model::LlamaModel llama(*f16_model(), *backend);
  tc::runtime::KvCache kv(*backend, f16_model()->spec, 1, kCtx);
  tc::model::StepSequence s{0, prompt, /*all_logits=*/true, /*generated=*/false, /*embeddings=*/true};
  std::vector<float> none;
  REQUIRE(llama.forward({&s, 1}, kv, none, &rows) == tc::model::StepStatus::Ok);
  CHECK(none.empty());
  if (logits == nullptr) return;
  tc::runtime::KvCache kv2(*backend, f16_model()->spec, 1, kCtx);
  s.embeddings = false;
  REQUIRE(llama.forward({&s, 1}, kv2, *logits) == tc::model::StepStatus::Ok);
}

// One thread, so that the engine's rows have forward_rows()'s bits.
tc::runtime::EngineOptions engine_options(int n_parallel, int64_t n_ctx, int64_t n_batch = 512) {
  tc::runtime::EngineOptions o;
  o.n_parallel = n_parallel;
  o.n_ctx = n_ctx;
  o.n_batch = n_batch;
  o.model.threads = 1;
  return o;
}

GenerationRequest embedding_request(std::vector<TokenId> prompt, Pooling pooling) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.embedding = pooling;
  return r;
}

StreamEvent finish_of(Engine& engine, GenerationRequest r) {
  auto submitted = engine.submit(std::move(r));
  INFO(submitted.message);
  REQUIRE(submitted.status == SubmitStatus::Ok);
  const auto end = tc::runtime::Clock::now() + 60s;
  StreamEvent ev;
  while (tc::runtime::Clock::now() < end) {
    if (submitted.handle->next(ev, 100ms) && ev.kind != StreamEvent::Kind::Text) return ev;
  }
  FAIL("no end event within 60 s");
  return ev;
}

// Pools rows [n, n_embd] the way the engine documents it: mean in float64
// over the rows in order, then scaled; cls the first row; last the last.
std::vector<float> pool_by_hand(const std::vector<float>& rows, size_t n, Pooling pooling) {
  std::vector<float> out(static_cast<size_t>(kEmbd));
  if (pooling != Pooling::Mean) {
    const size_t r = pooling == Pooling::Cls ? 0 : n - 1;
    std::copy(rows.begin() + static_cast<std::ptrdiff_t>(r * kEmbd),
              rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * kEmbd), out.begin());
    return out;
  }
  std::vector<double> sum(static_cast<size_t>(kEmbd), 0.0);
  for (size_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < kEmbd; ++j) sum[static_cast<size_t>(j)] += rows[r * kEmbd + static_cast<size_t>(j)];
  }
  for (int64_t j = 0; j < kEmbd; ++j) out[static_cast<size_t>(j)] = static_cast<float>(sum[static_cast<size_t>(j)] * (1.0 / static_cast<double>(n)));
  return out;
}

}  // namespace

TEST_CASE("embeddings: forward's embedding rows are the hidden states the head reads", "[engine][embeddings]") {
  const auto prompt = random_prompt(9, 5);
  std::vector<float> rows, logits;
  forward_rows(prompt, rows, &logits);
  REQUIRE(rows.size() == prompt.size() * kEmbd);
  REQUIRE(logits.size() == prompt.size() * kVocab);
  const auto weights = tc::model::map_llama_weights(f16_model()->file, f16_model()->spec);
  const auto* head = static_cast<const uint16_t*>(weights.output.data);
  REQUIRE(head != nullptr);
  double worst = 0;
  for (size_t r = 0; r < prompt.size(); ++r) {
    for (int64_t k = 0; k < kVocab; ++k) {
      double z = 0;
      for (int64_t j = 0; j < kEmbd; ++j) {
        // The F16 matmul reads its input rounded to f16, as llama.cpp does.
        const float x = tc::kernels::f16_to_f32(tc::kernels::f32_to_f16(rows[r * kEmbd + static_cast<size_t>(j)]));
        z += static_cast<double>(x) * tc::kernels::f16_to_f32(head[k * kEmbd + j]);
      }
      const double got = logits[r * kVocab + static_cast<size_t>(k)];
      worst = std::max(worst, std::abs(got - z) / (1.0 + std::abs(z)));
    }
  }
  INFO("worst relative difference " << worst);
  CHECK(worst < 1e-5);
  // RMS-normed rows times the norm weight: not all zero, all finite.
  for (const float v : rows) REQUIRE(std::isfinite(v));
}

TEST_CASE("embeddings: the engine's pools equal the rows pooled by hand, bit for bit", "[engine][embeddings]") {
  const auto prompt = random_prompt(23, 9);
  std::vector<float> rows;
  forward_rows(prompt, rows, nullptr);
  // Chunks of 5 tokens, three slots, a generation submitted beside each.
  Engine engine(f16_model(), engine_options(3, kCtx, 5));
  for (const Pooling pooling : {Pooling::Last, Pooling::Mean, Pooling::Cls}) {
    INFO("pooling " << tc::model::pooling_name(pooling));
    GenerationRequest busy;
    busy.prompt = random_prompt(17, 3);
    busy.max_tokens = 12;
    busy.ignore_eos = true;
    auto beside = engine.submit(busy);
    REQUIRE(beside.status == SubmitStatus::Ok);
    const StreamEvent ev = finish_of(engine, embedding_request(prompt, pooling));
    REQUIRE(ev.kind == StreamEvent::Kind::Finished);
    CHECK(ev.finish == tc::runtime::FinishReason::Stop);
    CHECK(ev.usage.prompt_tokens == static_cast<int64_t>(prompt.size()));
    CHECK(ev.usage.completion_tokens == 0);
    const auto want = pool_by_hand(rows, prompt.size(), pooling);
    REQUIRE(ev.embedding.size() == want.size());
    CHECK(std::memcmp(ev.embedding.data(), want.data(), want.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("embeddings: last pooling reuses a cached prefix with the same bits", "[engine][embeddings]") {
  const auto prompt = random_prompt(30, 13);
  std::vector<float> rows;
  forward_rows(prompt, rows, nullptr);
  Engine engine(f16_model(), engine_options(1, kCtx));
  GenerationRequest g;
  g.prompt = prompt;
  g.max_tokens = 2;
  g.ignore_eos = true;
  REQUIRE(finish_of(engine, g).kind == StreamEvent::Kind::Finished);
  const StreamEvent last = finish_of(engine, embedding_request(prompt, Pooling::Last));
  CHECK(last.usage.cached_tokens == static_cast<int64_t>(prompt.size()) - 1);
  const auto want = pool_by_hand(rows, prompt.size(), Pooling::Last);
  REQUIRE(last.embedding.size() == want.size());
  CHECK(std::memcmp(last.embedding.data(), want.data(), want.size() * sizeof(float)) == 0);
  // Mean pooling needs every row: nothing reused.
  const StreamEvent mean = finish_of(engine, embedding_request(prompt, Pooling::Mean));
  CHECK(mean.usage.cached_tokens == 0);
}

TEST_CASE("embeddings: refusals", "[engine][embeddings]") {
  Engine engine(f16_model(), engine_options(1, 32));
  // The prompt alone must fit (no max_tokens is added).
  CHECK(engine.submit(embedding_request(random_prompt(32, 1), Pooling::Mean)).status == SubmitStatus::Ok);
  CHECK(engine.submit(embedding_request(random_prompt(33, 1), Pooling::Mean)).status ==
        SubmitStatus::ContextExceeded);
  CHECK(engine.submit(embedding_request({}, Pooling::Last)).status == SubmitStatus::InvalidRequest);
  CHECK(engine.submit(embedding_request({1, kVocab}, Pooling::Last)).status == SubmitStatus::InvalidRequest);
}
