// Engine with lookup drafts (GenerationRequest::draft_max,
// EngineOptions::lookup_draft): the same tokens and logprobs as plain
// decoding, greedy and sampled, on prompts that repeat (so drafts are made
// and kept) across weight types; max_tokens and stop strings inside a kept
// draft; sequences drafting beside each other; prefix reuse after drafts;
// the counters; what is refused; generate() (the command line's loop) with
// drafts, alone and with context shifts.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "tests/engine/runtime/engine_test_util.h"

using namespace engine_test;

namespace {

// BOS, then a seeded random phrase said `times` times: every n-gram of the
// later copies recurs, so the lookup drafts from the first step on.
std::vector<TokenId> repeating_prompt(size_t phrase, int times, uint64_t seed) {
  const auto once = random_prompt(phrase + 1, seed);
  std::vector<TokenId> out = {1};
  for (int i = 0; i < times; ++i) out.insert(out.end(), once.begin() + 1, once.end());
  return out;
}

EngineOptions drafting(int n_parallel, int32_t n_max = 8) {
  EngineOptions o = options(n_parallel);
  o.lookup_draft.n_max = n_max;
  return o;
}

GenerationRequest no_draft(GenerationRequest r) {
  r.draft_max = 0;
  return r;
}

void check_same_tokens(const Outcome& got, const Outcome& want) {
  REQUIRE(got.tokens.size() == want.tokens.size());
  CHECK(got.tokens == want.tokens);
  CHECK(got.text == want.text);
  for (size_t i = 0; i < got.infos.size(); ++i) {
    INFO("token " << i);
    CHECK(got.infos[i].logprob == Approx(want.infos[i].logprob).margin(1e-3));
  }
  CHECK(got.last.usage.completion_tokens == want.last.usage.completion_tokens);
}

}  // namespace

TEST_CASE("engine: lookup drafts give the tokens of plain decoding", "[engine][lookup_draft]") {
  const std::string weight_type = GENERATE(as<std::string>{}, "q8_0", "f16", "q4_0");
  INFO("weights " << weight_type);
  const auto model = test_model(weight_type);
  // Greedy, then sampled with four seeds: a sampled reply drafts only while
  // its draws follow the repeated phrase, so kept drafts are counted over all.
  int64_t kept_sampled = 0;
  for (const uint64_t seed : {0, 1, 2, 3, 4}) {
    const float temperature = seed == 0 ? 0.0f : 0.1f;
    INFO("temperature " << temperature << ", seed " << seed);
    const GenerationRequest r = request(repeating_prompt(12, 4, 5), 64, temperature, seed);
    const Outcome want = alone(no_draft(r), 512, model);
    check_finished(want, FinishReason::Length);

    Engine engine(model, drafting(1));
    const Outcome got = collect(*submit(engine, r));
    check_finished(got, FinishReason::Length);
    check_same_tokens(got, want);
    REQUIRE(wait_until([&] { return engine.stats().generated_tokens_total == 64; }));
    const auto stats = engine.stats();
    CHECK(stats.draft_tokens_accepted_total <= stats.draft_tokens_total);
    // Each kept draft token saved a forward pass.
    CHECK(stats.steps_total + stats.draft_tokens_accepted_total >= 64);
    if (seed == 0) {
      CHECK(stats.draft_tokens_accepted_total > 0);
    } else {
      kept_sampled += stats.draft_tokens_accepted_total;
    }
  }
  CHECK(kept_sampled > 0);
}

TEST_CASE("engine: a request's draft_max overrides the engine's default", "[engine][lookup_draft]") {
  const auto model = test_model();
  GenerationRequest r = request(repeating_prompt(10, 4, 6), 32);
  const Outcome want = alone(no_draft(r), 512, model);
  {
    Engine engine(model, drafting(1));
    check_same_tokens(collect(*submit(engine, no_draft(r))), want);
    REQUIRE(wait_until([&] { return engine.stats().generated_tokens_total == 32; }));
    CHECK(engine.stats().draft_tokens_total == 0);
  }
  {
    Engine engine(model, options(1));  // off by default
    r.draft_max = 3;
    check_same_tokens(collect(*submit(engine, r)), want);
    REQUIRE(wait_until([&] { return engine.stats().generated_tokens_total == 32; }));
    CHECK(engine.stats().draft_tokens_total > 0);
  }
}

TEST_CASE("engine: max_tokens and stop strings end a request inside a kept draft", "[engine][lookup_draft]") {
  const auto model = test_model();
  const auto prompt = repeating_prompt(8, 6, 7);
  for (const int32_t max_tokens : {1, 2, 3, 5, 9, 17}) {
    INFO("max_tokens " << max_tokens);
    const GenerationRequest r = request(prompt, max_tokens);
    const Outcome want = alone(no_draft(r), 512, model);
    Engine engine(model, drafting(1, 16));
    const Outcome got = collect(*submit(engine, r));
    check_finished(got, FinishReason::Length);
    check_same_tokens(got, want);
  }
  // A stop string: a piece of the plain reply's text past its first tokens.
  GenerationRequest r = request(prompt, 40);
  r.return_tokens = false;
  const Outcome full = alone(no_draft(r), 512, model);
  REQUIRE(full.text.size() > 12);
  r.stop = {full.text.substr(8, 3)};
  const Outcome want = alone(no_draft(r), 512, model);
  check_finished(want, FinishReason::Stop);
  Engine engine(model, drafting(1, 16));
  const Outcome got = collect(*submit(engine, r));
  check_finished(got, FinishReason::Stop);
  CHECK(got.text == want.text);
  CHECK(got.last.usage.completion_tokens == want.last.usage.completion_tokens);
}

TEST_CASE("engine: constrained output (JSON mode) with drafts is the reply without", "[engine][lookup_draft]") {
  const auto model = test_model();
  const auto& tokenizer = *model->tokenizer;
  const std::string text = R"({"name": "a", "items": [1, 2, 3]} {"name": "a", "items": [1, 2, 3]} )";
  GenerationRequest r = request(tokenizer.encode(text + text), 60);
  r.json_object = true;
  r.ignore_eos = false;
  const Outcome want = alone(no_draft(r), 512, model);
  INFO(want.text << " / " << want.last.error);
  REQUIRE(want.last.kind == StreamEvent::Kind::Finished);
  Engine engine(model, drafting(1));
  const Outcome got = collect(*submit(engine, r));
  CHECK(got.last.finish == want.last.finish);
  check_same_tokens(got, want);
  REQUIRE(wait_until([&] { return engine.stats().generated_tokens_total == want.last.usage.completion_tokens; }));
  CHECK(engine.stats().draft_tokens_total > 0);
}

TEST_CASE("engine: sequences drafting side by side give the tokens each gives alone", "[engine][lookup_draft]") {
  const auto model = test_model();
  std::vector<GenerationRequest> requests;
  requests.push_back(request(repeating_prompt(9, 4, 11), 48));
  requests.push_back(request(random_prompt(30, 12), 40, 0.7f, 5));  // rarely drafts
  requests.push_back(request(repeating_prompt(14, 3, 13), 56, 0.9f, 6));
  std::vector<Outcome> want;
  for (const auto& r : requests) want.push_back(alone(no_draft(r), 512, model));

  Engine engine(model, drafting(3));
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const auto& r : requests) handles.push_back(submit(engine, r));
  for (size_t i = 0; i < handles.size(); ++i) {
    INFO("request " << i);
    const Outcome got = collect(*handles[i]);
    check_finished(got, FinishReason::Length);
    check_same_tokens(got, want[i]);
  }
  REQUIRE(wait_until([&] { return engine.stats().generated_tokens_total == 48 + 40 + 56; }));
  CHECK(engine.stats().draft_tokens_accepted_total > 0);
}

TEST_CASE("engine: after drafting, a follow-up request reuses only what its tokens give", "[engine][lookup_draft]") {
  const auto model = test_model();
  const GenerationRequest first = request(repeating_prompt(10, 4, 21), 30);
  Engine engine(model, drafting(1));
  const Outcome a = collect(*submit(engine, first));
  check_finished(a, FinishReason::Length);
  // The conversation goes on: prompt, reply, and more of the phrase.
  std::vector<TokenId> next = first.prompt;
  next.insert(next.end(), a.tokens.begin(), a.tokens.end());
  next.insert(next.end(), first.prompt.begin() + 1, first.prompt.begin() + 6);
  const GenerationRequest second = request(next, 24);
  const Outcome got = collect(*submit(engine, second));
  check_finished(got, FinishReason::Length);
  CHECK(got.last.usage.cached_tokens >= static_cast<int64_t>(first.prompt.size() + a.tokens.size()) - 1);
  check_same_tokens(got, alone(no_draft(second), 512, model));
}

TEST_CASE("engine: drafts stop at the slot's end", "[engine][lookup_draft]") {
  const auto model = test_model();
  EngineOptions o = drafting(1, 16);
  o.n_ctx = 64;
  const auto prompt = repeating_prompt(6, 5, 31);  // 31 tokens
  const GenerationRequest r = request(prompt, static_cast<int32_t>(64 - prompt.size()));
  Engine plain(model, [&] {
    EngineOptions p = o;
    p.lookup_draft.n_max = 0;
    return p;
  }());
  const Outcome want = collect(*submit(plain, r));
  Engine engine(model, o);
  const Outcome got = collect(*submit(engine, r));
  check_finished(got, FinishReason::Length);
  check_same_tokens(got, want);
}

TEST_CASE("engine: bad draft settings are refused", "[engine][lookup_draft]") {
  const auto model = test_model();
  Engine engine(model, drafting(1));
  GenerationRequest r = request(random_prompt(5, 1), 4);
  r.draft_max = -2;
  const auto result = engine.submit(r);
  CHECK(result.status == SubmitStatus::InvalidRequest);
  CHECK_THAT(result.message, Catch::Contains("draft_max"));

  EngineOptions o = options(1);
  o.lookup_draft = {.n_max = 4, .ngram_min = 3, .ngram_max = 2};
  Engine bad(model, o);
  REQUIRE(wait_until([&] { return bad.state() == tc::runtime::EngineState::Failed; }));
  CHECK_THAT(bad.stats().failure, Catch::Contains("ngram_max"));
}

TEST_CASE("generate() with lookup drafts gives its tokens without, also across context shifts", "[engine][lookup_draft]") {
  const auto model = test_model();
  const auto& tokenizer = *model->tokenizer;
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  tc::model::LlamaModel llama(*model, *backend);
  const std::string prompt = "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat.";
  for (const bool shift : {false, true}) {
    for (const float temperature : {0.0f, 0.1f}) {
      INFO("context shift " << shift << ", temperature " << temperature);
      tc::runtime::KvCache kv(*backend, model->spec, 1, shift ? 96 : 256);
      tc::runtime::GenerateOptions go;
      go.n_predict = shift ? 200 : 80;
      go.stop_at_eos = false;
      go.sampling.temperature = temperature;
      go.sampling.seed = 5;
      go.context_shift = shift;
      std::string want_text, got_text;
      const auto want = tc::runtime::generate(llama, kv, tokenizer, prompt, go,
                                              [&](std::string_view piece) { want_text += piece; });
      go.lookup_draft.n_max = 8;
      const auto got = tc::runtime::generate(llama, kv, tokenizer, prompt, go,
                                             [&](std::string_view piece) { got_text += piece; });
      CHECK(got.tokens == want.tokens);
      CHECK(got_text == want_text);
      CHECK(got.n_context_shifts == want.n_context_shifts);
      CHECK(want.n_drafted == 0);
      CHECK(got.n_drafted > 0);
      CHECK(got.n_draft_kept <= got.n_drafted);
      if (temperature == 0.0f) CHECK(got.n_draft_kept > 0);
    }
  }
  tc::runtime::KvCache kv(*backend, model->spec, 1, 64);
  tc::runtime::GenerateOptions bad;
  bad.lookup_draft = {.n_max = 4, .ngram_min = 0};
  CHECK_THROWS_WITH(tc::runtime::generate(llama, kv, tokenizer, prompt, bad, [](std::string_view) {}),
                    Catch::Contains("ngram_min"));
}
