// Sampler: greedy, seeding, the empirical distribution against softmax,
// top-k's, top-p's and min-p's kept sets, penalties and bias on
// hand-computed logits, logprobs against a double reference, NaN/inf
// logits, validation messages. llama.cpp's other samplers (XTC, typical,
// top-n-sigma, dynamic temperature, Mirostat): sampler_filters_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "engine/runtime/sampler.h"
#include "kernels/check.h"
#include "tests/engine/runtime/sampler_test_util.h"
#include "tests/test_util.h"

using tc::runtime::SampleResult;
using tc::runtime::Sampler;
using tc::runtime::SampleStatus;
using tc::runtime::SamplingParams;
using tc::runtime::TokenId;
using tc::runtime::validate;

using namespace tc::runtime::test;

TEST_CASE("greedy picks the argmax, ties to the lowest id", "[sampler]") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto logits = tc::test::random_floats(1000, seed, 3.0f);
    Sampler sampler(with_temp(0.0f), 1000);
    const auto r = sampler.sample(logits);
    CHECK(r.status == SampleStatus::Ok);
    CHECK(r.token == argmax_ref(logits));
  }
  auto logits = tc::test::random_floats(50, 77);
  const float top = *std::max_element(logits.begin(), logits.end()) + 1.0f;
  logits[31] = top;
  logits[7] = top;
  logits[40] = top;
  Sampler sampler(with_temp(0.0f), 50);
  CHECK(sampler.sample(logits).token == 7);
}

TEST_CASE("same seed gives the same tokens, another seed others", "[sampler]") {
  const int n_vocab = 64, n_steps = 300;
  std::vector<std::vector<float>> steps;
  for (int i = 0; i < n_steps; ++i) steps.push_back(tc::test::random_floats(n_vocab, 1000 + i, 1.5f));
  auto run = [&](uint64_t seed) {
    SamplingParams p = with_temp(0.9f, seed);
    p.top_k = 30;
    p.top_p = 0.95f;
    p.min_p = 0.01f;
    p.repeat_penalty = 1.1f;
    p.frequency_penalty = 0.2f;
    Sampler sampler(p, n_vocab);
    std::vector<TokenId> out;
    for (const auto& logits : steps) {
      const auto r = sampler.sample(logits);
      REQUIRE(r.status == SampleStatus::Ok);
      sampler.accept(r.token);
      out.push_back(r.token);
    }
    return out;
  };
  const auto a = run(42), b = run(42), c = run(43);
  CHECK(a == b);
  int n_diff = 0;
  for (int i = 0; i < n_steps; ++i) n_diff += a[static_cast<size_t>(i)] != c[static_cast<size_t>(i)];
  CHECK(n_diff > n_steps / 4);

  SECTION("reset restarts the stream and forgets history") {
    SamplingParams p = with_temp(1.0f, 9);
    p.presence_penalty = 1.5f;
    Sampler sampler(p, n_vocab);
    std::vector<TokenId> first, second;
    for (int i = 0; i < 50; ++i) {
      first.push_back(sampler.sample(steps[static_cast<size_t>(i)]).token);
      sampler.accept(first.back());
    }
    sampler.reset();
    for (int i = 0; i < 50; ++i) {
      second.push_back(sampler.sample(steps[static_cast<size_t>(i)]).token);
      sampler.accept(second.back());
    }
    CHECK(first == second);
  }
}

TEST_CASE("draws at temperature 1 follow the softmax", "[sampler]") {
  const auto logits = tc::test::random_floats(5, 5, 1.0f);
  const auto probs = softmax_ref(logits);
  Sampler sampler(with_temp(1.0f, 1234), 5);
  const auto counts = draw_counts(sampler, logits, 20000);
  // 4 degrees of freedom: P(chi2 > 25) ~ 5e-5; the seed is fixed anyway.
  CHECK(chi_square(counts, probs) < 25.0);
}

TEST_CASE("temperature reshapes the distribution", "[sampler]") {
  const std::vector<float> logits = {1.0f, 0.0f, -0.5f, 0.7f};
  for (float t : {0.5f, 2.0f}) {
    const auto probs = softmax_ref(logits, t);
    Sampler sampler(with_temp(t, 77), 4);
    const auto counts = draw_counts(sampler, logits, 20000);
    CAPTURE(t);
    CHECK(chi_square(counts, probs) < 25.0);
  }
  // Colder concentrates on the argmax, hotter spreads out.
  Sampler cold(with_temp(0.25f, 5), 4), hot(with_temp(2.0f, 5), 4);
  const auto c_cold = draw_counts(cold, logits, 5000);
  const auto c_hot = draw_counts(hot, logits, 5000);
  CHECK(c_cold[0] > c_hot[0]);
  CHECK(c_cold[2] < c_hot[2]);
}

TEST_CASE("top_k = 1 equals greedy", "[sampler]") {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const auto logits = tc::test::random_floats(500, seed * 31, 2.0f);
    SamplingParams p = with_temp(1.5f, seed);
    p.top_k = 1;
    Sampler sampler(p, 500);
    CHECK(sampler.sample(logits).token == argmax_ref(logits));
  }
}

TEST_CASE("top_k keeps exactly the k most likely tokens", "[sampler]") {
  // Token i has prob proportional to the permuted rank; ids shuffled so the
  // kept set is not a range of ids.
  const std::vector<double> probs = {0.05, 0.3, 0.1, 0.2, 0.15, 0.08, 0.12};
  const auto logits = logits_from_probs(probs);
  SamplingParams p = with_temp(1.0f, 3);
  p.top_k = 3;
  Sampler sampler(p, 7);
  const auto counts = draw_counts(sampler, logits, 4000);
  CHECK(drawn_set(counts) == std::set<TokenId>{1, 3, 4});
  CHECK(chi_square(counts, {0, 0.3 / 0.65, 0, 0.2 / 0.65, 0.15 / 0.65, 0, 0}) < 25.0);

  SECTION("large k: sorted kept set and the id-order path") {
    const int n_vocab = 600;
    const auto big = tc::test::random_floats(n_vocab, 99, 0.5f);
    for (int top_k : {200, 300}) {  // below and above the sort limit
      const auto ids = ranked_ids(big);
      const std::set<TokenId> expected(ids.begin(), ids.begin() + top_k);
      SamplingParams q = with_temp(1.0f, 8);
      q.top_k = top_k;
      Sampler s(q, n_vocab);
      CAPTURE(top_k);
      CHECK(drawn_set(draw_counts(s, big, 15000)) == expected);
    }
  }
}

TEST_CASE("top_p keeps the smallest prefix reaching p", "[sampler]") {
  // Sorted: 2 (0.5), 0 (0.2), 4 (0.15), 1 (0.1), 3 (0.05).
  const std::vector<double> probs = {0.2, 0.1, 0.5, 0.05, 0.15};
  const auto logits = logits_from_probs(probs);
  auto kept = [&](float top_p, int top_k = 0) {
    SamplingParams p = with_temp(1.0f, 11);
    p.top_p = top_p;
    p.top_k = top_k;
    Sampler sampler(p, 5);
    return drawn_set(draw_counts(sampler, logits, 4000));
  };
  CHECK(kept(0.3f) == std::set<TokenId>{2});
  CHECK(kept(0.69f) == std::set<TokenId>{2, 0});
  CHECK(kept(0.8f) == std::set<TokenId>{2, 0, 4});
  CHECK(kept(0.9f) == std::set<TokenId>{2, 0, 4, 1});
  CHECK(kept(0.99f) == std::set<TokenId>{2, 0, 4, 1, 3});
  // After top_k = 3 the kept mass is renormalised: 0.5/0.85 = 0.59, 0.7/0.85 = 0.82.
  CHECK(kept(0.6f, 3) == std::set<TokenId>{2, 0});
  CHECK(kept(0.85f, 3) == std::set<TokenId>{2, 0, 4});

  SECTION("a prefix longer than one sort chunk, on a large vocab") {
    // 300 plausible tokens (logits 3 down to 2, shuffled over ids), 5000
    // near-impossible ones; the reference prefix is computed in double.
    const int n_vocab = 5300;
    std::vector<float> big(n_vocab, -8.0f);
    std::vector<TokenId> order;
    for (int i = 0; i < 300; ++i) {
      const TokenId id = static_cast<TokenId>((i * 7919) % n_vocab);
      big[static_cast<size_t>(id)] = 3.0f - static_cast<float>(i) / 300.0f;
      order.push_back(id);
    }
    const double top_p = 0.5;
    for (int top_k : {0, 1000, 300}) {
      // Reference: the top_k set (all of `order` here), renormalised, then
      // the prefix of `order` reaching top_p, in double.
      const auto ranked = ranked_ids(big);
      const size_t n_top_k = top_k == 0 ? ranked.size() : static_cast<size_t>(top_k);
      double total = 0.0;
      for (size_t i = 0; i < n_top_k; ++i) total += std::exp(static_cast<double>(big[static_cast<size_t>(ranked[i])]));
      double cum = 0.0;
      size_t n_keep = 0;
      while (cum < top_p * total) cum += std::exp(static_cast<double>(big[static_cast<size_t>(order[n_keep++])]));
      REQUIRE(n_keep > 64);  // crosses the first sort chunk
      REQUIRE(n_keep < 290);
      const std::set<TokenId> expected(order.begin(), order.begin() + static_cast<ptrdiff_t>(n_keep));
      SamplingParams p = with_temp(1.0f, 21);
      p.top_p = static_cast<float>(top_p);
      p.top_k = top_k;
      Sampler sampler(p, n_vocab);
      CAPTURE(top_k, n_keep);
      // Every kept token has p >= 0.0035 or so: all appear in 6000 draws.
      CHECK(drawn_set(draw_counts(sampler, big, 6000)) == expected);
    }
  }
}

TEST_CASE("min_p keeps tokens with p >= min_p * p_max", "[sampler]") {
  // Sorted: 3 (0.4), 0 (0.3), 4 (0.15), 1 (0.1), 2 (0.05).
  const std::vector<double> probs = {0.3, 0.1, 0.05, 0.4, 0.15};
  const auto logits = logits_from_probs(probs);
  auto kept = [&](float min_p, int top_k) {
    SamplingParams p = with_temp(1.0f, 5);
    p.min_p = min_p;
    p.top_k = top_k;
    Sampler sampler(p, 5);
    return drawn_set(draw_counts(sampler, logits, 4000));
  };
  for (int top_k : {0, 5}) {  // filtered while collecting / after top-k
    CAPTURE(top_k);
    CHECK(kept(0.3f, top_k) == std::set<TokenId>{3, 0, 4});      // threshold 0.12
    CHECK(kept(0.2f, top_k) == std::set<TokenId>{3, 0, 4, 1});   // 0.08
    CHECK(kept(0.8f, top_k) == std::set<TokenId>{3});            // 0.32
    CHECK(kept(0.74f, top_k) == std::set<TokenId>{3, 0});        // 0.296
    CHECK(kept(1.0f, top_k) == std::set<TokenId>{3});
  }
  {
    // Renormalised over what is kept, at temperature 1.
    SamplingParams p = with_temp(1.0f, 6);
    p.min_p = 0.2f;
    Sampler sampler(p, 5);
    const auto counts = draw_counts(sampler, logits, 20000);
    CHECK(chi_square(counts, {0.3 / 0.95, 0.1 / 0.95, 0.0, 0.4 / 0.95, 0.15 / 0.95}) < 25.0);
  }
  // After top_p: top_p 0.9 keeps {3, 0, 4, 1}, then min_p 0.3 {3, 0, 4}.
  SamplingParams p = with_temp(1.0f, 5);
  p.top_p = 0.9f;
  p.min_p = 0.3f;
  Sampler sampler(p, 5);
  CHECK(drawn_set(draw_counts(sampler, logits, 4000)) == std::set<TokenId>{3, 0, 4});
}

TEST_CASE("repeat penalty, llama.cpp style, over the window", "[sampler]") {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, 1.5f, -0.25f};
  SamplingParams p = with_temp(0.0f);
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 4;
  p.n_probs = 6;
  Sampler sampler(p, 6);
  // Prompt 5, 3, then generated 0, 1, 1: the window (last 4) is 3, 0, 1, 1.
  const std::vector<TokenId> prompt = {5, 3};
  sampler.accept_prompt(prompt);
  sampler.accept(0);
  sampler.accept(1);
  sampler.accept(1);
  // Each distinct token once: 1 is penalised once, not twice; 5 left the window.
  const std::vector<float> expected = {1.0f, -2.0f, 0.5f, 1.5f, 1.5f, -0.25f};
  const auto ref = log_softmax_ref(expected);
  const auto r = sampler.sample(logits);
  REQUIRE(r.n_top == 6);
  for (const auto& e : r.top_logprobs()) {
    CAPTURE(e.token);
    CHECK(std::abs(e.logprob - ref[static_cast<size_t>(e.token)]) < 1e-5);
  }
  // Argmax after the penalty: 3 and 4 tie at 1.5, lower id wins.
  CHECK(r.token == 3);

  SECTION("repeat_last_n = -1 covers the whole history, 0 turns it off") {
    SamplingParams q = p;
    q.repeat_last_n = -1;
    Sampler all(q, 6);
    all.accept_prompt(prompt);
    all.accept(0);
    const auto r_all = all.sample(logits);
    const auto ref_all = log_softmax_ref({1.0f, -1.0f, 0.5f, 1.5f, 1.5f, -0.5f});
    for (const auto& e : r_all.top_logprobs()) CHECK(std::abs(e.logprob - ref_all[static_cast<size_t>(e.token)]) < 1e-5);
    q.repeat_last_n = 0;
    Sampler off(q, 6);
    off.accept_prompt(prompt);
    const auto r_off = off.sample(logits);
    const auto ref_off = log_softmax_ref(logits);
    for (const auto& e : r_off.top_logprobs()) CHECK(std::abs(e.logprob - ref_off[static_cast<size_t>(e.token)]) < 1e-5);
  }
}

TEST_CASE("presence and frequency penalties count generated tokens only", "[sampler]") {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, 1.5f};
  SamplingParams p = with_temp(0.0f);
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.75f;
  p.repeat_penalty = 1.25f;
  p.repeat_last_n = 64;
  p.n_probs = 5;
  Sampler sampler(p, 5);
  const std::vector<TokenId> prompt = {4, 4, 4};
  sampler.accept_prompt(prompt);  // repeat window only
  sampler.accept(3);
  sampler.accept(3);
  sampler.accept(1);
  // Repeat first (4, 3, 1), then presence + frequency * count (3 twice, 1 once).
  std::vector<float> expected = {2.0f, -1.0f * 1.25f, 0.5f, 3.0f / 1.25f, 1.5f / 1.25f};
  expected[3] -= 0.5f + 0.75f * 2;
  expected[1] -= 0.5f + 0.75f * 1;
  const auto ref = log_softmax_ref(expected);
  const auto r = sampler.sample(logits);
  REQUIRE(r.n_top == 5);
  for (const auto& e : r.top_logprobs()) {
    CAPTURE(e.token);
    CHECK(std::abs(e.logprob - ref[static_cast<size_t>(e.token)]) < 1e-5);
  }
  CHECK(r.token == 0);
  CHECK(std::abs(r.logprob - ref[0]) < 1e-5);

  SECTION("negative penalties encourage repeats") {
    SamplingParams q = with_temp(0.0f);
    q.presence_penalty = -2.0f;
    Sampler s(q, 5);
    s.accept(4);
    CHECK(s.sample(logits).token == 4);  // 1.5 + 2 = 3.5 beats 3.0
  }
}

TEST_CASE("logit bias bans and forces", "[sampler]") {
  const auto logits = tc::test::random_floats(100, 8, 2.0f);
  const TokenId best = argmax_ref(logits);
  auto weakest = static_cast<TokenId>(std::min_element(logits.begin(), logits.end()) - logits.begin());

  SECTION("ban") {
    SamplingParams p = with_temp(0.0f);
    p.logit_bias[best] = -100.0f;
    p.n_probs = 20;
    Sampler sampler(p, 100);
    auto copy = logits;
    copy[static_cast<size_t>(best)] = -kInf;
    const auto r = sampler.sample(logits);
    CHECK(r.token == argmax_ref(copy));
    for (const auto& e : r.top_logprobs()) CHECK(e.token != best);
    // Sampling at temperature 2 never draws it either.
    SamplingParams q = with_temp(2.0f, 4);
    q.logit_bias[best] = -100.0f;
    Sampler hot(q, 100);
    CHECK(draw_counts(hot, logits, 3000)[static_cast<size_t>(best)] == 0);
  }
  SECTION("force") {
    SamplingParams p = with_temp(2.0f, 4);
    p.logit_bias[weakest] = 100.0f;
    Sampler sampler(p, 100);
    const auto counts = draw_counts(sampler, logits, 3000);
    CHECK(counts[static_cast<size_t>(weakest)] == 3000);
    p.temperature = 0.0f;
    Sampler greedy(p, 100);
    CHECK(greedy.sample(logits).token == weakest);
  }
  SECTION("small biases add") {
    SamplingParams p = with_temp(0.0f);
    p.logit_bias[3] = 1.5f;
    p.logit_bias[4] = -0.5f;
    p.n_probs = 20;
    Sampler sampler(p, 100);
    auto expected = logits;
    expected[3] += 1.5f;
    expected[4] -= 0.5f;
    const auto ref = log_softmax_ref(expected);
    const auto r = sampler.sample(logits);
    CHECK(std::abs(r.logprob - ref[static_cast<size_t>(r.token)]) < 1e-5);
    for (const auto& e : r.top_logprobs()) CHECK(std::abs(e.logprob - ref[static_cast<size_t>(e.token)]) < 1e-5);
  }
}

TEST_CASE("logprobs are the temperature-1 log-softmax, top-n sorted", "[sampler]") {
  const int n_vocab = 3000;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto logits = tc::test::random_floats(n_vocab, seed * 101, 4.0f);
    const auto ref = log_softmax_ref(logits);
    const auto ids = ranked_ids(logits);
    for (float t : {0.0f, 0.3f, 1.7f}) {
      for (int n_probs : {1, 7, 20}) {
        SamplingParams p = with_temp(t, seed);
        p.top_k = 50;      // filters and temperature do not change what is reported
        p.top_p = 0.9f;
        p.n_probs = n_probs;
        Sampler sampler(p, n_vocab);
        const auto r = sampler.sample(logits);
        CAPTURE(seed, t, n_probs);
        REQUIRE(r.status == SampleStatus::Ok);
        CHECK(std::abs(r.logprob - ref[static_cast<size_t>(r.token)]) < 1e-5);
        REQUIRE(r.n_top == n_probs);
        for (int j = 0; j < n_probs; ++j) {
          const auto& e = r.top[static_cast<size_t>(j)];
          CHECK(e.token == ids[static_cast<size_t>(j)]);
          CHECK(std::abs(e.logprob - ref[static_cast<size_t>(e.token)]) < 1e-5);
          if (j > 0) CHECK(e.logprob <= r.top[static_cast<size_t>(j - 1)].logprob);
        }
      }
    }
  }
  SECTION("n_probs = 0 returns none; ties keep the lower id first") {
    Sampler none(with_temp(0.0f), 10);
    CHECK(none.sample(tc::test::random_floats(10, 3)).n_top == 0);
    std::vector<float> logits = {0.5f, 1.0f, 1.0f, -2.0f, 1.0f};
    SamplingParams p = with_temp(0.0f);
    p.n_probs = 2;
    Sampler s(p, 5);
    const auto r = s.sample(logits);
    REQUIRE(r.n_top == 2);
    CHECK(r.top[0].token == 1);
    CHECK(r.top[1].token == 2);
  }
}

TEST_CASE("NaN and infinite logits", "[sampler]") {
  auto logits = tc::test::random_floats(40, 12, 1.0f);
  SECTION("NaN counts as -inf") {
    for (size_t i = 0; i < logits.size(); i += 3) logits[i] = kNaN;
    auto clean = logits;
    for (auto& v : clean) {
      if (std::isnan(v)) v = -kInf;
    }
    SamplingParams p = with_temp(1.0f, 2);
    p.n_probs = 20;
    Sampler sampler(p, 40);
    const auto counts = draw_counts(sampler, logits, 3000);
    for (size_t i = 0; i < logits.size(); i += 3) CHECK(counts[i] == 0);
    const auto r = sampler.sample(logits);
    const auto ref = log_softmax_ref(clean);
    CHECK(std::isfinite(r.logprob));
    CHECK(std::abs(r.logprob - ref[static_cast<size_t>(r.token)]) < 1e-5);
    for (const auto& e : r.top_logprobs()) CHECK(!std::isnan(logits[static_cast<size_t>(e.token)]));
    Sampler greedy(with_temp(0.0f), 40);
    CHECK(greedy.sample(logits).token == argmax_ref(clean));
  }
  SECTION("+inf tokens share all the probability") {
    logits[9] = kInf;
    logits[30] = kInf;
    SamplingParams p = with_temp(0.7f, 2);
    p.n_probs = 5;
    p.repeat_penalty = 1.3f;
    Sampler sampler(p, 40);
    const std::vector<TokenId> prompt = {9};
    sampler.accept_prompt(prompt);
    const auto counts = draw_counts(sampler, logits, 2000);
    CHECK(counts[9] + counts[30] == 2000);
    CHECK(counts[9] > 800);
    CHECK(counts[30] > 800);
    const auto r = sampler.sample(logits);
    CHECK(std::abs(r.logprob - std::log(0.5)) < 1e-6);
    CHECK(r.n_top == 2);  // the others have probability 0 (-inf)
    Sampler greedy(with_temp(0.0f), 40);
    CHECK(greedy.sample(logits).token == 9);
  }
  SECTION("-inf logits are never drawn; with top_k too") {
    for (size_t i = 0; i < 35; ++i) logits[i] = -kInf;
    SamplingParams p = with_temp(1.0f, 2);
    p.top_k = 10;
    p.n_probs = 20;
    Sampler sampler(p, 40);
    const auto counts = draw_counts(sampler, logits, 2000);
    CHECK(drawn_set(counts) == std::set<TokenId>{35, 36, 37, 38, 39});
    CHECK(sampler.sample(logits).n_top == 5);
  }
  SECTION("nothing possible: NoCandidates, no token") {
    std::vector<float> all_nan(40, kNaN), all_ninf(40, -kInf);
    for (float t : {0.0f, 1.0f}) {
      Sampler sampler(with_temp(t), 40);
      for (const auto* l : {&all_nan, &all_ninf}) {
        const auto r = sampler.sample(*l);
        CHECK(r.status == SampleStatus::NoCandidates);
        CHECK(r.token == -1);
        CHECK(r.n_top == 0);
      }
    }
    // Banning every token is refused by validate(); banning all but one whose
    // logit is -inf leaves nothing too.
    SamplingParams p = with_temp(1.0f);
    for (TokenId t = 0; t < 39; ++t) p.logit_bias[t] = -100.0f;
    Sampler banned(p, 40);
    logits[39] = -kInf;
    CHECK(banned.sample(logits).status == SampleStatus::NoCandidates);
  }
}

TEST_CASE("128k vocabulary runs quickly enough", "[sampler]") {
  const int n_vocab = 128 * 1024;
  const auto logits = tc::test::random_floats(n_vocab, 128, 3.0f);
  struct Case {
    const char* name;
    SamplingParams params;
  };
  std::vector<Case> cases;
  {
    SamplingParams p = with_temp(0.8f, 1);  // llama.cpp's defaults
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.n_probs = 5;
    cases.push_back({"llama.cpp defaults", p});
    cases.push_back({"no filters", with_temp(1.0f, 1)});
    SamplingParams q = with_temp(1.0f, 1);
    q.top_p = 0.95f;
    cases.push_back({"top_p only", q});
    SamplingParams g = with_temp(0.0f, 1);
    g.n_probs = 20;
    g.repeat_penalty = 1.1f;
    g.frequency_penalty = 0.1f;
    cases.push_back({"greedy + penalties", g});
  }
  for (auto& c : cases) {
    Sampler sampler(c.params, n_vocab);
    const auto start = std::chrono::steady_clock::now();
    const int n_calls = 20;
    for (int i = 0; i < n_calls; ++i) {
      const auto r = sampler.sample(logits);
      REQUIRE(r.status == SampleStatus::Ok);
      REQUIRE(r.token >= 0);
      REQUIRE(r.token < n_vocab);
      sampler.accept(r.token);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / n_calls;
    // Reported, not asserted: timings depend on the machine.
    INFO(c.name << ": " << ms << " ms per sample");
    CHECK(ms >= 0.0);
  }
}

TEST_CASE("validate names the field at fault", "[sampler]") {
  CHECK(validate(SamplingParams{}).empty());
  SamplingParams ok;
  ok.temperature = 2.0f;
  ok.top_k = 40;
  ok.top_p = 1.0f;
  ok.min_p = 1.0f;
  ok.repeat_penalty = 0.5f;
  ok.repeat_last_n = -1;
  ok.presence_penalty = -2.0f;
  ok.frequency_penalty = 2.0f;
  ok.n_probs = 20;
  ok.logit_bias[0] = -100.0f;
  ok.logit_bias[9] = 100.0f;
  CHECK(validate(ok, 10).empty());

  auto message = [](auto edit, int32_t n_vocab = 0) {
    SamplingParams p;
    edit(p);
    return validate(p, n_vocab);
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(message([](auto& p) { p.temperature = 2.5f; }), Contains("temperature"));
  CHECK_THAT(message([](auto& p) { p.temperature = -0.1f; }), Contains("temperature must be in [0, 2]"));
  CHECK_THAT(message([](auto& p) { p.temperature = kNaN; }), Contains("temperature"));
  CHECK_THAT(message([](auto& p) { p.top_k = -1; }), Contains("top_k"));
  CHECK_THAT(message([](auto& p) { p.top_p = 0.0f; }), Contains("top_p must be in (0, 1]"));
  CHECK_THAT(message([](auto& p) { p.top_p = 1.01f; }), Contains("top_p"));
  CHECK_THAT(message([](auto& p) { p.min_p = -0.1f; }), Contains("min_p"));
  CHECK_THAT(message([](auto& p) { p.min_p = 1.5f; }), Contains("min_p"));
  CHECK_THAT(message([](auto& p) { p.xtc_probability = 1.5f; }), Contains("xtc_probability must be in [0, 1]"));
  CHECK_THAT(message([](auto& p) { p.xtc_threshold = -0.1f; }), Contains("xtc_threshold"));
  CHECK_THAT(message([](auto& p) { p.typical_p = 0.0f; }), Contains("typical_p must be in (0, 1]"));
  CHECK_THAT(message([](auto& p) { p.top_n_sigma = kNaN; }), Contains("top_n_sigma"));
  CHECK_THAT(message([](auto& p) { p.dynatemp_range = -1.0f; }), Contains("dynatemp_range"));
  CHECK_THAT(message([](auto& p) { p.dynatemp_exponent = -1.0f; }), Contains("dynatemp_exponent"));
  CHECK_THAT(message([](auto& p) { p.mirostat = 3; }), Contains("mirostat must be 0, 1 or 2"));
  CHECK_THAT(message([](auto& p) { p.mirostat_tau = -1.0f; }), Contains("mirostat_tau"));
  CHECK_THAT(message([](auto& p) { p.mirostat_eta = kNaN; }), Contains("mirostat_eta"));
  CHECK_THAT(message([](auto& p) { p.repeat_penalty = 0.0f; }), Contains("repeat_penalty"));
  CHECK_THAT(message([](auto& p) { p.repeat_penalty = kInf; }), Contains("repeat_penalty"));
  CHECK_THAT(message([](auto& p) { p.repeat_last_n = -2; }), Contains("repeat_last_n"));
  CHECK_THAT(message([](auto& p) { p.presence_penalty = 2.5f; }), Contains("presence_penalty"));
  CHECK_THAT(message([](auto& p) { p.frequency_penalty = -3.0f; }), Contains("frequency_penalty"));
  CHECK_THAT(message([](auto& p) { p.n_probs = 21; }), Contains("n_probs"));
  CHECK_THAT(message([](auto& p) { p.n_probs = -1; }), Contains("n_probs"));
  CHECK_THAT(message([](auto& p) { p.logit_bias[-1] = 1.0f; }), Contains("logit_bias"));
  CHECK_THAT(message([](auto& p) { p.logit_bias[10] = 1.0f; }, 10), Contains("logit_bias token 10"));
  CHECK(message([](auto& p) { p.logit_bias[10] = 1.0f; }).empty());  // no n_vocab: ids unchecked above 0
  CHECK_THAT(message([](auto& p) { p.logit_bias[3] = 101.0f; }), Contains("logit_bias"));
  const auto ban_first = [](int n) {
    return [n](auto& p) {
      for (TokenId t = 0; t < n; ++t) p.logit_bias[t] = -100.0f;
    };
  };
  CHECK_THAT(message(ban_first(10), 10), Contains("logit_bias bans every token"));
  CHECK(message(ban_first(9), 10).empty());
  CHECK(message(ban_first(10)).empty());  // no n_vocab: not known to be every token

  SamplingParams bad;
  bad.top_p = 0.0f;
  CHECK_THROWS_AS(Sampler(bad, 10), tc::InvariantError);
  SamplingParams bias;
  bias.logit_bias[10] = 1.0f;
  CHECK_THROWS_AS(Sampler(bias, 10), tc::InvariantError);
  Sampler s(SamplingParams{}, 10);
  CHECK_THROWS_AS(s.accept(10), tc::InvariantError);
  CHECK_THROWS_AS(s.sample(std::vector<float>(9, 1.0f)), tc::InvariantError);
}
