// Engine: the step loop against generate(), batch independence, seeded
// sampling, prefix reuse, cancellation (queued, prefilling, decoding), the
// bounded queue, context checks, stop strings, deadlines, shutdown, failures
// and stats, on a small generated model.
#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/runtime/engine_test_util.h"
#include "tests/test_util.h"

using tc::runtime::EngineState;
using namespace engine_test;

TEST_CASE("engine: greedy and seeded output equal generate()", "[engine]") {
  const auto model = test_model();
  const auto& tokenizer = *model->tokenizer;
  // Only </s> ends generation in this vocab, as generate() assumes.
  int n_eog = 0;
  for (TokenId id = 0; id < tokenizer.n_vocab(); ++id) n_eog += tokenizer.vocab().is_end_of_generation(id);
  REQUIRE(n_eog == 1);

  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  tc::model::LlamaModel llama(*model, *backend);
  tc::runtime::KvCache kv(*backend, model->spec, 1, 512);

  const std::string prompt = "The quick brown fox jumps over the lazy dog. Once upon a time";
  for (const float temperature : {0.0f, 0.9f}) {
    INFO("temperature " << temperature);
    tc::runtime::GenerateOptions go;
    go.n_predict = 40;
    go.sampling.temperature = temperature;
    go.sampling.seed = 77;
    std::string want_text;
    const auto want = tc::runtime::generate(llama, kv, tokenizer, prompt, go,
                                            [&](std::string_view piece) { want_text += piece; });

    GenerationRequest r = request(tokenizer.encode(prompt), go.n_predict, temperature, 77);
    r.ignore_eos = false;
    Engine engine(model, options(2));
    const Outcome got = collect(*submit(engine, r));
    check_finished(got, want.stop == tc::runtime::StopReason::EndOfSequence ? FinishReason::Stop
                                                                            : FinishReason::Length);
    CHECK(got.tokens == want.tokens);
    CHECK(got.text == want_text);
    CHECK(got.last.usage.prompt_tokens == want.n_prompt);
    CHECK(got.last.usage.completion_tokens == want.n_generated);
    CHECK(got.last.total_seconds >= got.last.queue_seconds);
    CHECK(got.last.total_seconds > 0);
  }
}

TEST_CASE("engine: concurrent requests give the same tokens as each alone", "[engine]") {
  // Needs kernels whose results do not depend on the batch size.
  const std::string weight_type = GENERATE(as<std::string>{}, "q8_0", "f16", "f32", "q4_0", "q4_k_m");
  INFO("weights " << weight_type);
  const auto model = test_model(weight_type);
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 8; ++i) {
    const float temperature = i % 3 == 0 ? 0.0f : 0.8f;
    auto r = request(random_prompt(static_cast<size_t>(3 + 7 * i), 100 + static_cast<uint64_t>(i)), 20 + 3 * i,
                     temperature, 500 + static_cast<uint64_t>(i));
    if (i % 3 == 1) r.sampling.top_k = 40;
    if (i % 3 == 2) r.sampling.top_p = 0.9f;
    requests.push_back(std::move(r));
  }
  std::vector<Outcome> solo;
  int64_t solo_steps = 0;
  for (const auto& r : requests) {
    solo.push_back(alone(r, 512, model));
    solo_steps += r.max_tokens;
    check_finished(solo.back(), FinishReason::Length);
    REQUIRE(static_cast<int32_t>(solo.back().tokens.size()) == r.max_tokens);
  }

  // A few slots (queueing, slot reuse, prefill chunks beside decodes) and
  // one slot each with whole-prompt prefill.
  for (const auto& [n_parallel, n_batch] : {std::pair{4, int64_t{16}}, std::pair{8, int64_t{512}}}) {
    INFO("n_parallel " << n_parallel << ", n_batch " << n_batch);
    Engine engine(model, options(n_parallel, n_batch));
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& r : requests) handles.push_back(submit(engine, r));
    for (size_t i = 0; i < handles.size(); ++i) {
      INFO("request " << i);
      const Outcome got = collect(*handles[i]);
      check_finished(got, FinishReason::Length);
      CHECK(got.tokens == solo[i].tokens);
      CHECK(got.text == solo[i].text);
    }
    // They really ran side by side.
    CHECK(engine.stats().steps_total < solo_steps * 3 / 4);
  }
}

TEST_CASE("engine: seeded sampling is reproducible", "[engine]") {
  Engine engine(test_model(), options(3));
  const auto prompt = random_prompt(12, 7);
  const Outcome first = collect(*submit(engine, request(prompt, 30, 1.0f, 1234)));
  check_finished(first, FinishReason::Length);
  // Again (now from the prefix cache), twice side by side, and another seed.
  auto a = submit(engine, request(prompt, 30, 1.0f, 1234));
  auto b = submit(engine, request(prompt, 30, 1.0f, 1234));
  auto c = submit(engine, request(prompt, 30, 1.0f, 999));
  const Outcome ra = collect(*a), rb = collect(*b), rc = collect(*c);
  CHECK(ra.tokens == first.tokens);
  CHECK(rb.tokens == first.tokens);
  CHECK(ra.text == first.text);
  CHECK(rc.tokens != first.tokens);
}

TEST_CASE("engine: a follow-up request reuses the cached prefix", "[engine]") {
  Engine engine(test_model(), options(1));
  const auto prompt = random_prompt(30, 11);
  const Outcome first = collect(*submit(engine, request(prompt, 10)));
  check_finished(first, FinishReason::Length);
  CHECK(first.last.usage.cached_tokens == 0);

  // The conversation goes on: prompt + answer + a new turn.
  auto follow = prompt;
  follow.insert(follow.end(), first.tokens.begin(), first.tokens.end());
  const auto turn = random_prompt(6, 12);
  follow.insert(follow.end(), turn.begin() + 1, turn.end());
  const Outcome warm = collect(*submit(engine, request(follow, 12)));
  check_finished(warm, FinishReason::Length);
  // Every token fed so far: the prompt and all answer tokens but the last
  // (sampled, never fed).
  CHECK(warm.last.usage.cached_tokens == static_cast<int64_t>(prompt.size() + first.tokens.size() - 1));
  CHECK(warm.last.usage.prompt_tokens == static_cast<int64_t>(follow.size()));
  const Outcome cold = alone(request(follow, 12));
  CHECK(cold.last.usage.cached_tokens == 0);
  CHECK(warm.tokens == cold.tokens);

  // The same prompt again: all but its last token come from the cache.
  const Outcome again = collect(*submit(engine, request(follow, 12)));
  CHECK(again.last.usage.cached_tokens == static_cast<int64_t>(follow.size() - 1));
  CHECK(again.tokens == cold.tokens);

  // A shorter prompt that is a prefix of the cache.
  const std::vector<TokenId> shorter(prompt.begin(), prompt.begin() + 20);
  const Outcome prefix = collect(*submit(engine, request(shorter, 5)));
  CHECK(prefix.last.usage.cached_tokens == 19);
  CHECK(prefix.tokens == alone(request(shorter, 5)).tokens);

  const auto stats = engine.stats();
  CHECK(stats.cached_tokens_total == warm.last.usage.cached_tokens + again.last.usage.cached_tokens + 19);
}

TEST_CASE("engine: cancel while queued", "[engine]") {
  const auto long_request = request(random_prompt(20, 21), 900);
  Engine engine(test_model(), options(1));
  auto a = submit(engine, long_request);
  auto b = submit(engine, request(random_prompt(8, 22), 10));
  b->cancel();
  const Outcome rb = collect(*b);
  check_finished(rb, FinishReason::Cancelled);
  CHECK(rb.last.usage.completion_tokens == 0);
  CHECK(rb.tokens.empty());
  const Outcome ra = collect(*a);
  check_finished(ra, FinishReason::Length);
  CHECK(ra.tokens == alone(long_request).tokens);
}

TEST_CASE("engine: cancel while prefilling", "[engine]") {
  SECTION("gone within one step") {
    // 800 prompt tokens one per step: steps 1-800 are prefill. The step
    // count read just after cancel() bounds the step the cancel landed in;
    // where this thread woke too late to cancel inside the prefill (a loaded
    // machine), the premise did not hold and the case runs again.
    constexpr int64_t kPrefillSteps = 800;
    bool cancelled_in_prefill = false;
    for (int attempt = 0; attempt < 5 && !cancelled_in_prefill; ++attempt) {
      Engine engine(test_model(), options(1, 1));
      auto p = submit(engine, request(random_prompt(kPrefillSteps, 31), 10));
      REQUIRE(wait_until([&] { return engine.stats().steps_total >= 3; }));
      p->cancel();
      const int64_t steps_at_cancel = engine.stats().steps_total;
      const Outcome rp = collect(*p);
      if (steps_at_cancel >= kPrefillSteps - 1) continue;
      cancelled_in_prefill = true;
      check_finished(rp, FinishReason::Cancelled);
      CHECK(rp.last.usage.completion_tokens == 0);
      CHECK(engine.stats().steps_total - steps_at_cancel <= 1);
    }
    CHECK(cancelled_in_prefill);
  }
  SECTION("others unaffected") {
    // c decodes for longer than p's whole prefill (800 tokens in chunks of
    // 4: 200 steps), so both run together until p is cancelled however late
    // this thread looks (with 30 tokens c could finish unseen under load);
    // p may answer up to 200 tokens, so it is still running then too.
    const auto other = request(random_prompt(10, 32), 400, 0.7f, 5);
    Engine engine(test_model(), options(2, 4));
    auto c = submit(engine, other);
    auto p = submit(engine, request(random_prompt(800, 33), 200));
    REQUIRE(wait_until([&] { return engine.stats().requests_running == 2; }));
    p->cancel();
    check_finished(collect(*p), FinishReason::Cancelled);
    const Outcome rc = collect(*c);
    check_finished(rc, FinishReason::Length);
    CHECK(rc.tokens == alone(other, 4).tokens);
  }
}

TEST_CASE("engine: cancel while decoding", "[engine]") {
  SECTION("gone within one step") {
    Engine engine(test_model(), options(1));
    auto a = submit(engine, request(random_prompt(10, 41), 900));
    StreamEvent first;
    REQUIRE(a->next(first, 20000ms));
    REQUIRE(first.kind == StreamEvent::Kind::Text);
    a->cancel();
    const int64_t steps_at_cancel = engine.stats().steps_total;
    const Outcome ra = collect(*a);
    check_finished(ra, FinishReason::Cancelled);
    CHECK(ra.last.usage.completion_tokens < 900);
    CHECK(ra.last.usage.completion_tokens == static_cast<int64_t>(ra.tokens.size() + first.tokens.size()));
    CHECK(engine.stats().steps_total - steps_at_cancel <= 1);
    // The idle engine's gauges say so.
    REQUIRE(wait_until([&] { return engine.stats().requests_running == 0; }, 2000ms));
    CHECK(engine.stats().kv_tokens_used == 0);
  }
  SECTION("others unaffected") {
    const auto other = request(random_prompt(15, 42), 60, 0.9f, 8);
    Engine engine(test_model(), options(3));
    auto a = submit(engine, request(random_prompt(10, 43), 900));
    auto c = submit(engine, other);
    StreamEvent first;
    REQUIRE(a->next(first, 20000ms));
    a->cancel();
    check_finished(collect(*a), FinishReason::Cancelled);
    const Outcome rc = collect(*c);
    check_finished(rc, FinishReason::Length);
    CHECK(rc.tokens == alone(other).tokens);
  }
}

TEST_CASE("engine: a full queue refuses with QueueFull", "[engine]") {
  Engine engine(test_model(), options(1, 512, 2));
  auto a = submit(engine, request(random_prompt(10, 51), 900));
  REQUIRE(wait_until([&] { return engine.stats().requests_running == 1; }));
  auto b = submit(engine, request(random_prompt(10, 52), 5));
  auto c = submit(engine, request(random_prompt(10, 53), 5));
  const auto d = engine.submit(request(random_prompt(10, 54), 5));
  CHECK(d.status == SubmitStatus::QueueFull);
  CHECK_FALSE(d.handle);
  CHECK_FALSE(d.message.empty());
  CHECK(engine.stats().requests_waiting == 2);
  a->cancel();
  check_finished(collect(*a), FinishReason::Cancelled);
  check_finished(collect(*b), FinishReason::Length);
  check_finished(collect(*c), FinishReason::Length);
}

TEST_CASE("engine: the context is capped at n_ctx_train and checked", "[engine]") {
  EngineOptions o = options(1);
  o.n_ctx = 4096;
  Engine engine(test_model(), o);
  CHECK(engine.n_ctx() == kCtxTrain);
  CHECK(engine.options().n_ctx == kCtxTrain);
  CHECK(engine.stats().kv_tokens_capacity == kCtxTrain);

  const auto over = engine.submit(request(random_prompt(1000, 61), 25));
  CHECK(over.status == SubmitStatus::ContextExceeded);
  CHECK(over.message.find("this model's context is 1024 tokens; the prompt has 1000 tokens and max_tokens is 25") ==
        0);
  const Outcome fits = collect(*submit(engine, request(random_prompt(1000, 61), 24)));
  check_finished(fits, FinishReason::Length);
  CHECK(fits.tokens.size() == 24);
}

TEST_CASE("engine: invalid requests are refused", "[engine]") {
  Engine engine(test_model(), options(1));
  auto status_of = [&](GenerationRequest r) { return engine.submit(std::move(r)); };
  const auto good = request(random_prompt(5, 71), 4);

  auto r = good;
  r.prompt.clear();
  CHECK(status_of(r).status == SubmitStatus::InvalidRequest);
  r = good;
  r.prompt[2] = kVocab;
  auto res = status_of(r);
  CHECK(res.status == SubmitStatus::InvalidRequest);
  CHECK(res.message.find("512") != std::string::npos);
  r = good;
  r.prompt[2] = -1;
  CHECK(status_of(r).status == SubmitStatus::InvalidRequest);
  r = good;
  r.sampling.top_p = 0.0f;
  res = status_of(r);
  CHECK(res.status == SubmitStatus::InvalidRequest);
  CHECK(res.message.find("top_p") != std::string::npos);
  r = good;
  r.sampling.logit_bias[kVocab] = 1.0f;
  CHECK(status_of(r).status == SubmitStatus::InvalidRequest);
  r = good;
  r.max_tokens = 0;
  CHECK(status_of(r).status == SubmitStatus::InvalidRequest);
  r = good;
  r.stop = {"ok", ""};
  CHECK(status_of(r).status == SubmitStatus::InvalidRequest);
  // A forced tool call's grammar: names unsorted, with a quote, or none.
  for (std::vector<std::string> names : {std::vector<std::string>{"b", "a"}, std::vector<std::string>{"a\"b"},
                                         std::vector<std::string>{}}) {
    r = good;
    r.tool_call = std::make_shared<const tc::text::ToolCallGrammar>(names);
    res = status_of(r);
    CHECK(res.status == SubmitStatus::InvalidRequest);
    CHECK(res.message.find("forced tool call") != std::string::npos);
  }
  // Text parameters that are not one sorted list per name; a lazy Qwen3-Coder call without its trigger.
  r = good;
  r.tool_call = std::make_shared<const tc::text::ToolCallGrammar>(
      std::vector<std::string>{"a"}, std::vector<std::shared_ptr<const tc::text::JsonSchema>>{},
      std::vector<std::vector<std::string>>{{"y", "x"}});
  CHECK(status_of(r).message.find("sorted") != std::string::npos);
  r = good;
  r.tool_call = std::make_shared<const tc::text::ToolCallGrammar>(std::vector<std::string>{"a"});
  r.tool_call_qwen3_coder = true;
  CHECK(status_of(r).status == SubmitStatus::InvalidRequest);
  r.tool_call_trigger = "<tool_call>";
  r.tool_call_gemma4 = true;
  CHECK(status_of(r).message.find("Qwen3-Coder") != std::string::npos);
  check_finished(collect(*submit(engine, good)), FinishReason::Length);
}

TEST_CASE("engine: stop strings cut the text exactly", "[engine]") {
  Engine engine(test_model(), options(2));
  const auto base = request(random_prompt(9, 81), 60);
  const Outcome full = collect(*submit(engine, base));
  check_finished(full, FinishReason::Length);
  REQUIRE(full.text.size() > 20);

  // A stop that straddles a token boundary near the middle, if the pieces
  // line up with the text (they do unless bytes were replaced).
  std::string pieces;
  size_t boundary = full.text.size() / 2;
  for (const auto& info : full.infos) {
    pieces += info.piece;
    if (pieces.size() >= full.text.size() / 2) {
      boundary = pieces.size();
      break;
    }
  }
  if (full.text.rfind(pieces, 0) != 0) boundary = full.text.size() / 2;
  REQUIRE(boundary >= 2);
  REQUIRE(boundary + 2 <= full.text.size());
  const std::string stop = full.text.substr(boundary - 2, 4);
  const size_t cut = full.text.find(stop);

  auto with_stop = base;
  with_stop.stop = {"\x01never", stop};
  const Outcome got = collect(*submit(engine, with_stop));
  check_finished(got, FinishReason::Stop);
  CHECK(got.text == full.text.substr(0, cut));
  CHECK(got.tokens.size() < full.tokens.size());
  CHECK(std::equal(got.tokens.begin(), got.tokens.end(), full.tokens.begin()));

  auto absent = base;
  absent.stop = {"\x01never", "\x02"};
  const Outcome whole = collect(*submit(engine, absent));
  check_finished(whole, FinishReason::Length);
  CHECK(whole.text == full.text);

  // A stop equal to the first characters ends the request with no text.
  auto at_start = base;
  at_start.stop = {full.text.substr(0, 1)};
  const Outcome none = collect(*submit(engine, at_start));
  check_finished(none, FinishReason::Stop);
  CHECK(none.text.empty());
}

TEST_CASE("engine: deadlines finish requests with Length", "[engine]") {
  Engine engine(test_model(), options(1));
  SECTION("passed while queued") {
    auto r = request(random_prompt(10, 91), 10);
    r.deadline = Clock::now() - 1ms;
    const Outcome o = collect(*submit(engine, r));
    check_finished(o, FinishReason::Length);
    CHECK(o.last.usage.completion_tokens == 0);
  }
  SECTION("passed while running") {
    auto r = request(random_prompt(10, 92), 1000);
    const auto t0 = Clock::now();
    r.deadline = t0 + 5ms;
    r.sampling.repeat_penalty = 1.1f;  // slower steps: a penalty pass over the whole history
    r.sampling.repeat_last_n = -1;
    const Outcome o = collect(*submit(engine, r));
    check_finished(o, FinishReason::Length);
    CHECK(o.last.usage.completion_tokens < 1000);
    CHECK(Clock::now() - t0 >= 5ms);
    // total_seconds counts from the submission, a few microseconds after t0.
    CHECK(o.last.total_seconds >= 0.004);
  }
}

TEST_CASE("engine: shutdown finishes within the grace period, then cancels", "[engine]") {
  SECTION("grace long enough: everything finishes") {
    Engine engine(test_model(), options(2));
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (int i = 0; i < 3; ++i) handles.push_back(submit(engine, request(random_prompt(8, 100 + i), 20)));
    engine.shutdown(30000ms);
    CHECK(engine.state() == EngineState::Stopped);
    for (auto& h : handles) {
      const Outcome o = collect(*h);
      check_finished(o, FinishReason::Length);
      CHECK(o.tokens.size() == 20);
    }
    const auto late = engine.submit(request(random_prompt(8, 110), 5));
    CHECK(late.status == SubmitStatus::NotReady);
  }
  SECTION("no grace: running and queued requests are cancelled") {
    Engine engine(test_model(), options(1));
    auto a = submit(engine, request(random_prompt(8, 111), 1000 - 8));
    auto b = submit(engine, request(random_prompt(8, 112), 10));
    engine.shutdown(0ms);
    check_finished(collect(*a), FinishReason::Cancelled);
    const Outcome rb = collect(*b);
    check_finished(rb, FinishReason::Cancelled);
    CHECK(rb.last.usage.completion_tokens == 0);
    // After the last event, "no more events".
    StreamEvent ev;
    REQUIRE(b->next(ev, 0ms));
    CHECK(ev.kind == StreamEvent::Kind::Error);
    engine.shutdown(0ms);  // again: a no-op
    CHECK(engine.state() == EngineState::Stopped);
  }
}

TEST_CASE("engine: a failing load leaves the engine Failed", "[engine]") {
  SECTION("no model") {
    Engine engine(nullptr, options(1));
    REQUIRE(wait_until([&] { return engine.state() != EngineState::Loading; }));
    CHECK(engine.state() == EngineState::Failed);
    CHECK(engine.submit(request({1, 2, 3}, 2)).status == SubmitStatus::NotReady);
  }
  SECTION("weights that do not match the spec") {
    std::shared_ptr<tc::model::LoadedModel> broken = tc::model::load_model(model_path());
    broken->spec.n_layer += 1;  // blk.2.* does not exist
    Engine engine(broken, options(1));
    // Submitted while loading: either refused or told about the failure.
    const auto early = engine.submit(request(random_prompt(5, 121), 3));
    REQUIRE(wait_until([&] { return engine.state() != EngineState::Loading; }));
    CHECK(engine.state() == EngineState::Failed);
    const auto stats = engine.stats();
    CHECK(stats.failure.find("blk.2") != std::string::npos);
    if (early.status == SubmitStatus::Ok) {
      const Outcome o = collect(*early.handle);
      CHECK(o.last.kind == StreamEvent::Kind::Error);
      CHECK(o.last.error == stats.failure);
    } else {
      CHECK(early.status == SubmitStatus::NotReady);
    }
    const auto late = engine.submit(request(random_prompt(5, 122), 3));
    CHECK(late.status == SubmitStatus::NotReady);
    CHECK(late.message.find("blk.2") != std::string::npos);
    engine.shutdown(0ms);
    CHECK(engine.state() == EngineState::Failed);
  }
  SECTION("bad options") {
    EngineOptions o = options(1);
    o.n_batch = 0;
    Engine engine(test_model(), o);
    REQUIRE(wait_until([&] { return engine.state() != EngineState::Loading; }));
    CHECK(engine.state() == EngineState::Failed);
    CHECK(engine.stats().failure.find("n_batch") != std::string::npos);
  }
}

TEST_CASE("engine: a request with no possible token is refused before it starts", "[engine]") {
  Engine engine(test_model(), options(2));
  auto banned = request(random_prompt(12, 132), 10);
  for (TokenId id = 0; id < kVocab; ++id) banned.sampling.logit_bias[id] = -100.0f;
  const auto refused = engine.submit(banned);
  CHECK(refused.status == SubmitStatus::InvalidRequest);
  CHECK(refused.message.find("bans every token") != std::string::npos);
  CHECK_FALSE(refused.handle);
  // One token left unbanned: it is the only one generated, and another
  // request in the same steps is untouched.
  const auto other = request(random_prompt(12, 131), 25, 0.5f, 3);
  banned.sampling.logit_bias.erase(7);
  auto a = submit(engine, banned);
  auto c = submit(engine, other);
  const Outcome ra = collect(*a);
  check_finished(ra, FinishReason::Length);
  REQUIRE(ra.tokens.size() == 10);
  for (const TokenId t : ra.tokens) CHECK(t == 7);
  const Outcome rc = collect(*c);
  check_finished(rc, FinishReason::Length);
  CHECK(rc.tokens == alone(other).tokens);
}

TEST_CASE("engine: tokens carry logprobs and stats add up", "[engine]") {
  Engine engine(test_model(), options(2, 64));
  REQUIRE(wait_until([&] { return engine.state() == EngineState::Ready; }));
  const auto& tokenizer = *test_model()->tokenizer;
  auto r = request(random_prompt(70, 141), 15);
  r.sampling.n_probs = 3;
  const Outcome o = collect(*submit(engine, r));
  check_finished(o, FinishReason::Length);
  REQUIRE(o.infos.size() == 15);
  for (const auto& info : o.infos) {
    CHECK(info.piece == tokenizer.token_to_piece(info.id, true));
    CHECK(info.logprob <= 0.0f);
    REQUIRE(info.top.size() == 3);
    CHECK(info.top[0].second == info.logprob);  // greedy takes the most likely token
    CHECK(info.top[0].first == info.piece);
    CHECK(info.top[0].second >= info.top[1].second);
    CHECK(info.top[1].second >= info.top[2].second);
  }
  CHECK(o.last.first_token_seconds > 0);

  auto plain = request(random_prompt(20, 142), 7);
  plain.return_tokens = false;
  const Outcome p = collect(*submit(engine, plain));
  check_finished(p, FinishReason::Length);
  CHECK(p.tokens.empty());
  CHECK(p.last.usage.completion_tokens == 7);

  REQUIRE(wait_until([&] { return engine.stats().requests_running == 0; }));
  const auto stats = engine.stats();
  CHECK(stats.state == EngineState::Ready);
  CHECK(stats.requests_waiting == 0);
  CHECK(stats.generated_tokens_total == 22);
  CHECK(stats.prompt_tokens_total + stats.cached_tokens_total == 90);
  // 70 prompt tokens in two chunks (the second samples), 14 decodes; then
  // one prefill step and 6 decodes.
  CHECK(stats.steps_total == 16 + 7);
  CHECK(stats.kv_tokens_capacity == 2 * kCtxTrain);
  CHECK(stats.kv_tokens_used == 0);
  CHECK(stats.kv_tokens_cached > 0);
}

TEST_CASE("engine: an idle engine sleeps", "[engine]") {
  Engine engine(test_model(), options(2));
  REQUIRE(wait_until([&] { return engine.state() == EngineState::Ready; }));
  check_finished(collect(*submit(engine, request(random_prompt(5, 151), 3))), FinishReason::Length);
  // Process CPU time over 200 ms of wall time with nothing to do.
  const std::clock_t before = std::clock();
  std::this_thread::sleep_for(200ms);
  const double cpu_seconds = static_cast<double>(std::clock() - before) / CLOCKS_PER_SEC;
  CHECK(cpu_seconds < 0.05);
  // And it wakes for the next request.
  check_finished(collect(*submit(engine, request(random_prompt(5, 152), 3))), FinishReason::Length);
}

TEST_CASE("engine: rendered_tokens puts those control tokens' text in the output", "[engine]") {
  const auto model = test_model();
  const TokenId bos = model->tokenizer->vocab().bos_id;
  REQUIRE(bos >= 0);
  REQUIRE(!model->tokenizer->vocab().is_end_of_generation(bos));
  const std::string bos_text = model->tokenizer->token_to_piece(bos, /*render_special=*/true);
  REQUIRE(!bos_text.empty());
  Engine engine(model, options(1));
  // BOS, a control token, is made the only choice; its text is dropped
  // unless the request names it.
  GenerationRequest r = request(random_prompt(6, 161), 3);
  r.sampling.logit_bias[bos] = 100.0f;
  const Outcome dropped = collect(*submit(engine, r));
  check_finished(dropped, FinishReason::Length);
  CHECK(dropped.tokens == std::vector<TokenId>(3, bos));
  CHECK(dropped.text.empty());
  r.rendered_tokens = {bos};
  const Outcome rendered = collect(*submit(engine, r));
  CHECK(rendered.tokens == std::vector<TokenId>(3, bos));
  CHECK(rendered.text == bos_text + bos_text + bos_text);
}

TEST_CASE("engine: a recurrent model reuses a cached prompt whole, or from its checkpoint, or not at all",
          "[engine][qwen35]") {
  // Qwen 3.5's delta net layers keep a state that sums every position.
  tc::profiler::MakeModelOptions o;
  o.arch = "qwen35";
  o.output = tc::test::scratch_dir("engine_qwen35") / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 64;
  o.n_layer = 4;
  o.n_ff = 160;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = kCtxTrain;
  o.weight_type = "q8_0";
  o.seed = 29;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  const std::shared_ptr<const tc::model::LoadedModel> model = tc::model::load_model(o.output);
  auto opts = options(1);
  opts.lookup_draft.n_max = 8;  // drafts would be cut back off the state: not drafted
  Engine engine(model, opts);
  const auto prompt = random_prompt(30, 31);
  const Outcome first = collect(*submit(engine, request(prompt, 10)));
  check_finished(first, FinishReason::Length);

  // The conversation goes on: the whole cache is reused.
  auto follow = prompt;
  follow.insert(follow.end(), first.tokens.begin(), first.tokens.end());
  const auto turn = random_prompt(6, 32);
  follow.insert(follow.end(), turn.begin() + 1, turn.end());
  const Outcome warm = collect(*submit(engine, request(follow, 12)));
  CHECK(warm.last.usage.cached_tokens == static_cast<int64_t>(prompt.size() + first.tokens.size() - 1));
  CHECK(warm.tokens == alone(request(follow, 12), 512, model).tokens);

  // A prompt that leaves the cache part-way goes back to the checkpoint
  // saved 16 positions before the first prompt's end, where it shares that much.
  const std::vector<TokenId> shorter(prompt.begin(), prompt.begin() + 20);
  const Outcome prefix = collect(*submit(engine, request(shorter, 5)));
  CHECK(prefix.last.usage.cached_tokens == 14);
  CHECK(prefix.tokens == alone(request(shorter, 5), 512, model).tokens);
  // One that leaves it before the checkpoint starts over.
  const std::vector<TokenId> other = random_prompt(25, 33);
  const Outcome fresh = collect(*submit(engine, request(other, 5)));
  CHECK(fresh.last.usage.cached_tokens == 0);
  CHECK(fresh.tokens == alone(request(other, 5), 512, model).tokens);
  CHECK(engine.stats().draft_tokens_total == 0);
}
