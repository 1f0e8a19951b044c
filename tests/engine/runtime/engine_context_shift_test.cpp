// Engine with GenerationRequest::context_shift: replies longer than the
// context, token for token what generate() gives with the same shift;
// until the first shift, what a request without it gives; slots shifting
// beside each other as they do alone; a shifted slot reusing only its kept
// prefix; the context checks that still hold.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "tests/engine/runtime/engine_test_util.h"

using namespace engine_test;

namespace {

constexpr int64_t kCtx = 48;

EngineOptions small_context(int n_parallel) {
  EngineOptions o = options(n_parallel);
  o.n_ctx = kCtx;
  return o;
}

GenerationRequest shifting(std::vector<TokenId> prompt, int32_t max_tokens, int32_t n_keep = 4) {
  GenerationRequest r = request(std::move(prompt), max_tokens);
  r.context_shift = true;
  r.n_keep = n_keep;
  return r;
}

}  // namespace

TEST_CASE("engine: a context shift goes on past the context as generate() does", "[engine][context_shift]") {
  const auto model = test_model();
  const auto& tokenizer = *model->tokenizer;
  const std::string prompt = "The quick fox";
  const auto prompt_ids = tokenizer.encode(prompt);
  REQUIRE(static_cast<int64_t>(prompt_ids.size()) < kCtx / 2);
  constexpr int32_t kTokens = 120;  // two and a half contexts

  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  tc::model::LlamaModel llama(*model, *backend);
  tc::runtime::KvCache kv(*backend, model->spec, 1, kCtx);
  tc::runtime::GenerateOptions go;
  go.n_predict = kTokens;
  go.stop_at_eos = false;
  go.sampling.temperature = 0.0f;
  go.context_shift = true;
  go.n_keep = 4;
  const auto want = tc::runtime::generate(llama, kv, tokenizer, prompt, go, [](std::string_view) {});
  REQUIRE(want.n_generated == kTokens);
  CHECK(want.n_context_shifts >= 3);

  Engine engine(model, small_context(1));
  const Outcome got = collect(*submit(engine, shifting(prompt_ids, kTokens)));
  check_finished(got, FinishReason::Length);
  CHECK(got.last.usage.completion_tokens == kTokens);
  CHECK(got.tokens == want.tokens);
  // Stats are published after the step that finished the request.
  CHECK(wait_until([&] { return engine.stats().context_shifts_total == want.n_context_shifts; }));

  // Up to the first shift, the reply is a plain request's.
  const auto room = static_cast<int32_t>(kCtx - static_cast<int64_t>(prompt_ids.size()));
  const Outcome plain = collect(*submit(engine, request(prompt_ids, room)));
  check_finished(plain, FinishReason::Length);
  REQUIRE(plain.tokens.size() == static_cast<size_t>(room));
  CHECK(std::vector<TokenId>(got.tokens.begin(), got.tokens.begin() + room) == plain.tokens);
  // After it, the dropped tokens are out of view: the reply moves off the
  // one a larger context would give.
  Engine large(model, options(1));
  const Outcome unshifted = collect(*submit(large, request(prompt_ids, kTokens)));
  CHECK(unshifted.tokens != got.tokens);
}

TEST_CASE("engine: slots shifting side by side give what each gives alone", "[engine][context_shift]") {
  const auto a = shifting(random_prompt(10, 5), 90);
  const auto b = shifting(random_prompt(17, 6), 70, 8);
  const auto c = shifting(random_prompt(30, 7), 40, 0);
  Engine alone_engine(test_model(), small_context(1));
  std::vector<Outcome> want;
  for (const auto& r : {a, b, c}) want.push_back(collect(*submit(alone_engine, r)));

  Engine engine(test_model(), small_context(3));
  const auto ha = submit(engine, a);
  const auto hb = submit(engine, b);
  const auto hc = submit(engine, c);
  const Outcome got[] = {collect(*ha), collect(*hb), collect(*hc)};
  for (size_t i = 0; i < 3; ++i) {
    INFO("request " << i);
    check_finished(got[i], FinishReason::Length);
    CHECK(got[i].tokens == want[i].tokens);
  }
  CHECK(wait_until([&] { return engine.stats().context_shifts_total >= 4; }));
}

TEST_CASE("engine: a slot that shifted reuses only its kept prefix", "[engine][context_shift]") {
  Engine engine(test_model(), small_context(1));
  const auto r = shifting(random_prompt(12, 9), 60, 6);
  const Outcome first = collect(*submit(engine, r));
  check_finished(first, FinishReason::Length);
  REQUIRE(wait_until([&] { return engine.stats().context_shifts_total >= 1; }));
  CHECK(wait_until([&] { return engine.stats().kv_tokens_cached == 6; }));
  const Outcome again = collect(*submit(engine, r));
  CHECK(again.last.usage.cached_tokens == 6);
  CHECK(again.tokens == first.tokens);
}

TEST_CASE("engine: context-shift requests still need room for the prompt", "[engine][context_shift]") {
  Engine engine(test_model(), small_context(1));
  // Without the shift, prompt + max_tokens must fit.
  auto plain = request(random_prompt(20, 3), 40);
  CHECK(engine.submit(plain).status == SubmitStatus::ContextExceeded);
  plain.context_shift = true;
  CHECK(engine.submit(plain).status == SubmitStatus::Ok);
  // With it, the prompt alone must be shorter than the context.
  const auto full = engine.submit(shifting(random_prompt(kCtx, 3), 10));
  CHECK(full.status == SubmitStatus::ContextExceeded);
  CHECK_THAT(full.message, Catch::Contains("leaving no room"));
  auto negative = shifting(random_prompt(10, 3), 10);
  negative.n_keep = -1;
  CHECK(engine.submit(negative).status == SubmitStatus::InvalidRequest);
}
