// JSON mode (OutputConstraint through the Sampler): on random logits every
// sampled text stays a JSON prefix and, once closed, parses as an object;
// end-of-generation tokens only then, and then nothing else; greedy picks
// the best token that fits; reported log-probabilities are the constrained
// distribution's.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/output_constraint.h"
#include "engine/runtime/sampler.h"
#include "engine/text/json_prefix.h"
#include "tests/engine/text/constrained_walk.h"
#include "tests/engine/text/text_test_util.h"

using tc::runtime::ConstraintTokenTable;
using tc::runtime::Sampler;
using tc::runtime::SamplingParams;
using tc::text::TokenId;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A vocab with JSON's pieces, some several bytes long, some that never fit.
const tc::text::Tokenizer& json_tokenizer() {
  static const auto tokenizer = tc::text::Tokenizer::create(tc::text::test::spm_vocab({
      {"{", 0}, {"}", 0}, {"[", 0}, {"]", 0}, {"\"", 0}, {":", 0}, {",", 0}, {"a", 0}, {"bc", 0}, {"1", 0},
      {"0", 0}, {".", 0}, {"e", 0}, {"-", 0}, {"true", 0}, {"null", 0}, {"\u2581", 0}, {"\n", 0},
      {"{\"", 0}, {"\"}", 0}, {"\":", 0}, {"\\", 0}, {"\\n", 0}, {"\"]", 0}, {"},", 0}, {"]}", 0},
      {"\u2581{", 0}, {"x\"", 0}, {"=", 0}, {"'", 0},
  }));
  return *tokenizer;
}

}  // namespace

TEST_CASE("JSON mode: random logits give texts that stay JSON prefixes and close as objects", "[sampler][json]") {
  const auto& tokenizer = json_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = ConstraintTokenTable::from(tokenizer, n_vocab);
  const TokenId eos = tokenizer.vocab().eos_id;
  std::mt19937 rng(7);
  int closed = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const auto walk = tc::text::test::constrained_walk(
        table, tc::runtime::OutputForm::json_object(), eos, seed, rng,
        [](const std::string& text) { return tc::text::JsonPrefix().accepts(text); }, 4000);
    if (!walk.closed) continue;
    ++closed;
    CAPTURE(walk.text);
    REQUIRE(nlohmann::json::parse(walk.text).is_object());
  }
  CHECK(closed >= 50);
}

TEST_CASE("JSON mode: greedy takes the most likely token that fits and finishes with the end token", "[sampler][json]") {
  const auto& tokenizer = json_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto& vocab = tokenizer.vocab();
  auto id = [&](const std::string& piece) { return tc::text::test::ids_of(vocab, {piece})[0]; };
  SamplingParams params;
  params.temperature = 0.0f;
  params.n_probs = 2;
  Sampler sampler(params, n_vocab);
  sampler.constrain(ConstraintTokenTable::from(tokenizer, n_vocab), tc::runtime::OutputForm::json_object());
  std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
  // "a" and the end token are likelier, but only "{" (or " {", "{\"") can
  // open the text: the best of those wins.
  logits[static_cast<size_t>(id("a"))] = 9.0f;
  logits[static_cast<size_t>(vocab.eos_id)] = 9.0f;
  logits[static_cast<size_t>(id("{"))] = 2.0f;
  logits[static_cast<size_t>(id("{\""))] = 3.0f;
  auto r = sampler.sample(logits);
  CHECK(r.token == id("{\""));
  // Log-probabilities over what fits: the allowed tokens' probabilities sum to 1.
  {
    std::vector<float> masked = logits;
    tc::runtime::OutputConstraint c(ConstraintTokenTable::from(tokenizer, n_vocab),
                                    tc::runtime::OutputForm::json_object());
    c.mask(masked);
    double z = 0;
    for (float v : masked) z += std::exp(static_cast<double>(v) - 3.0);
    CHECK(r.logprob == Approx(-std::log(z)).margin(1e-5));
    CHECK(masked[static_cast<size_t>(id("a"))] == -kInf);
    CHECK(masked[static_cast<size_t>(id("\u2581{"))] == 0.0f);  // a leading space fits
  }
  sampler.accept(r.token);
  for (const std::string piece : {"a", "\":", "1", "}"}) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    logits[static_cast<size_t>(id(piece))] = 5.0f;
    r = sampler.sample(logits);
    REQUIRE(r.token == id(piece));
    sampler.accept(r.token);
  }
  REQUIRE(sampler.constraint_complete());
  // Closed: only the end token, whatever the logits say.
  std::fill(logits.begin(), logits.end(), 1.0f);
  logits[static_cast<size_t>(vocab.eos_id)] = -5.0f;
  r = sampler.sample(logits);
  CHECK(r.token == vocab.eos_id);
  // reset() starts the text again.
  sampler.reset();
  CHECK_FALSE(sampler.constraint_complete());
}
