// DRY (dry_penalty.h): llama.cpp's worked example, random windows against a
// brute-force float64 reference (with and without breakers of one and of
// two tokens), breakers found in a vocabulary by text, and DRY in the
// Sampler (the prompt counts, the window bounds it, validate names its
// fields).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "engine/runtime/dry_penalty.h"
#include "engine/runtime/sampler.h"
#include "engine/text/tokenizer.h"
#include "tests/engine/text/text_test_util.h"

using namespace tc::runtime;

namespace {

// The brute-force reference: for every earlier position j whose next token
// is t, the number of tokens ending at j equal to those ending at the latest
// token (at most `limit`); the longest per t of at least allowed_length
// costs multiplier * base^(length - allowed_length), breakers excepted.
std::vector<double> reference(const std::vector<TokenId>& h, const DryParams& p, int32_t limit, size_t n_vocab,
                              const std::vector<TokenId>& single_breakers = {}) {
  std::vector<double> out(n_vocab, 0.0);
  const auto n = static_cast<int32_t>(h.size());
  if (n <= p.allowed_length || limit < p.allowed_length) return out;
  std::map<TokenId, int32_t> longest;
  for (int32_t j = 0; j + 1 < n; ++j) {
    int32_t len = 0;
    while (len <= j && h[static_cast<size_t>(j - len)] == h[static_cast<size_t>(n - 1 - len)]) ++len;
    len = std::min(len, limit);
    if (len < p.allowed_length) continue;
    const TokenId t = h[static_cast<size_t>(j + 1)];
    longest[t] = std::max(longest[t], len);
  }
  for (const auto& [t, len] : longest) {
    if (std::find(single_breakers.begin(), single_breakers.end(), t) != single_breakers.end()) continue;
    out[static_cast<size_t>(t)] = p.multiplier * std::pow(static_cast<double>(p.base), len - p.allowed_length);
  }
  return out;
}

void check_against_reference(const std::vector<TokenId>& h, const DryParams& p, const DryBreakers* breakers,
                             int32_t limit, size_t n_vocab, const std::vector<TokenId>& single_breakers = {}) {
  std::vector<float> logits(n_vocab, 0.5f);
  std::vector<int32_t> scratch;
  apply_dry_penalty(h, p, breakers, logits, scratch);
  const auto want = reference(h, p, limit, n_vocab, single_breakers);
  for (size_t t = 0; t < n_vocab; ++t) {
    INFO("token " << t);
    CHECK(0.5 - static_cast<double>(logits[t]) == Approx(want[t]).epsilon(1e-5).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("DRY: llama.cpp's example, a b c c b c y a b c", "[sampler][dry]") {
  // a=0 b=1 c=2 y=3. "a b c" ends the window and occurs at the start: c
  // would make it 4 long (3 repeated); "c" before b: 1 (free); "b c"
  // before y: 2 (at the allowed length: the multiplier alone).
  const std::vector<TokenId> h = {0, 1, 2, 2, 1, 2, 3, 0, 1, 2};
  const DryParams p{0.8f, 1.75f, 2};
  std::vector<float> logits(4, 0.0f);
  std::vector<int32_t> scratch;
  apply_dry_penalty(h, p, nullptr, logits, scratch);
  CHECK(logits[0] == 0.0f);
  CHECK(logits[1] == 0.0f);
  CHECK(logits[2] == Approx(-0.8 * 1.75));
  CHECK(logits[3] == Approx(-0.8));
  // Off, or a window no longer than the allowed length: nothing.
  std::vector<float> untouched(4, 0.0f);
  apply_dry_penalty(h, {0.0f, 1.75f, 2}, nullptr, untouched, scratch);
  apply_dry_penalty(std::span(h).last(2), p, nullptr, untouched, scratch);
  CHECK(untouched == std::vector<float>(4, 0.0f));
}

TEST_CASE("DRY matches a brute-force reference on random windows", "[sampler][dry]") {
  std::mt19937 rng(20261130);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n_vocab = 2 + rng() % 4;
    std::vector<TokenId> h(1 + rng() % 60);
    for (auto& t : h) t = static_cast<TokenId>(rng() % n_vocab);
    const DryParams p{0.25f + static_cast<float>(rng() % 8) / 4.0f, 1.0f + static_cast<float>(rng() % 8) / 8.0f,
                      static_cast<int32_t>(rng() % 4)};
    INFO("trial " << trial);
    check_against_reference(h, p, nullptr, static_cast<int32_t>(h.size()), n_vocab);

    // Token 0 as a one-token breaker: nothing spans its latest place, and
    // it is never penalised itself.
    DryBreakers one;
    one.tails.emplace(0, std::vector<TokenId>{});
    int32_t limit = static_cast<int32_t>(h.size());
    for (int32_t i = 0; i < static_cast<int32_t>(h.size()); ++i) {
      if (h[h.size() - 1 - static_cast<size_t>(i)] == 0) {
        limit = i;
        break;
      }
    }
    check_against_reference(h, p, &one, limit, n_vocab, {0});

    // "1 then 0" as a two-token breaker (head 1, tail {0}): the window is
    // cut after its latest whole occurrence.
    DryBreakers two;
    two.tails.emplace(1, std::vector<TokenId>{0});
    limit = static_cast<int32_t>(h.size());
    for (int32_t i = 1; i < static_cast<int32_t>(h.size()); ++i) {
      const size_t at = h.size() - 1 - static_cast<size_t>(i);
      if (h[at] == 1 && h[at + 1] == 0) {
        limit = i - 1;
        break;
      }
    }
    check_against_reference(h, p, &two, limit, n_vocab);
  }
}

TEST_CASE("DRY breakers: tokens holding a breaker, and heads whose rest must follow", "[sampler][dry]") {
  using tc::text::test::ids_of;
  const auto vocab = tc::text::test::spm_vocab(
      {{"\xE2\x96\x81", -1}, {"x:", -2}, {":", -3}, {"ab", -4}, {"c", -5}, {"b", -6}, {"a", -7}, {"q", -8}});
  const auto tok = tc::text::Tokenizer::create(vocab);
  const auto ids = ids_of(tok->vocab(), {"x:", ":", "ab", "c", "b", "a", "q"});
  const auto breakers = make_dry_breakers(*tok, {":", "abc", ""});
  CHECK(breakers->is_single_token_breaker(ids[0]));  // "x:" holds ":"
  CHECK(breakers->is_single_token_breaker(ids[1]));
  CHECK_FALSE(breakers->is_single_token_breaker(ids[2]));
  CHECK_FALSE(breakers->is_single_token_breaker(ids[6]));
  // "ab" begins "abc": its tail is the tokens of "c"; "b" ends with no
  // beginning of "abc" ("b" is not "a..."); "a" begins it too, tail "bc".
  const auto tails_of = [&](TokenId id) {
    std::vector<std::vector<TokenId>> out;
    auto [a, b] = breakers->tails.equal_range(id);
    for (; a != b; ++a) out.push_back(a->second);
    return out;
  };
  tc::text::EncodeOptions plain;
  plain.add_special = false;
  CHECK(tails_of(ids[2]) == std::vector<std::vector<TokenId>>{tok->encode("c", plain)});
  CHECK(tails_of(ids[4]).empty());
  CHECK(tails_of(ids[5]) == std::vector<std::vector<TokenId>>{tok->encode("bc", plain)});
}

TEST_CASE("DRY in the Sampler: the prompt counts, the window bounds it", "[sampler][dry]") {
  // Token 2 would continue "0 1 2" (the prompt's start) after "... 0 1":
  // greedy picks it unless DRY lowers it by more than its lead.
  std::vector<float> logits = {0.0f, 0.0f, 1.0f, 0.5f};
  const std::vector<TokenId> prompt = {0, 1, 2, 3, 3, 0, 1};
  SamplingParams p;
  p.temperature = 0.0f;
  p.dry_multiplier = 2.0f;
  p.dry_sequence_breakers.clear();
  {
    Sampler s(p, 4);
    s.accept_prompt(prompt);
    CHECK(s.sample(logits).token == 3);
  }
  {
    SamplingParams off = p;
    off.dry_multiplier = 0.0f;
    Sampler s(off, 4);
    s.accept_prompt(prompt);
    CHECK(s.sample(logits).token == 2);
  }
  {
    // A window of 4 (3 3 0 1) no longer holds "0 1 2".
    SamplingParams window = p;
    window.dry_penalty_last_n = 4;
    Sampler s(window, 4);
    s.accept_prompt(prompt);
    CHECK(s.sample(logits).token == 2);
  }
  {
    // Generated tokens count too, and reset() forgets them.
    Sampler s(p, 4);
    for (TokenId t : prompt) s.accept(t);
    CHECK(s.sample(logits).token == 3);
    s.reset();
    CHECK(s.sample(logits).token == 2);
  }
  using Catch::Matchers::Contains;
  SamplingParams bad;
  bad.dry_multiplier = -1.0f;
  CHECK_THAT(validate(bad), Contains("dry_multiplier"));
  bad = SamplingParams{};
  bad.dry_base = 0.5f;
  CHECK_THAT(validate(bad), Contains("dry_base must be >= 1"));
  bad = SamplingParams{};
  bad.dry_penalty_last_n = -2;
  CHECK_THAT(validate(bad), Contains("dry_penalty_last_n"));
  bad = SamplingParams{};
  bad.dry_sequence_breakers.assign(65, "x");
  CHECK_THAT(validate(bad), Contains("dry_sequence_breakers"));
}
