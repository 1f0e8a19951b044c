// The GBNF token mask: on trained SPM and BPE vocabularies (byte tokens
// that split characters included) and several grammars, the trie walk with
// its cache of states allows exactly the tokens whose bytes the matcher
// takes when tried one by one, end-of-generation exactly where the grammar
// may end, and token elements their tokens; a sampler constrained by a
// grammar writes only texts the grammar generates and stops where nothing
// can follow.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "engine/runtime/output_constraint.h"
#include "engine/runtime/sampler.h"
#include "engine/text/gbnf_grammar.h"
#include "engine/text/gbnf_prefix.h"
#include "tests/engine/text/text_test_util.h"

using tc::runtime::ConstraintTokenTable;
using tc::runtime::OutputConstraint;
using tc::runtime::OutputForm;
using tc::text::GbnfGrammar;
using tc::text::GbnfPrefix;

namespace {

// A JSON-like grammar, free text, a word list with UTF-8, and one with a
// token element, as llama.cpp users write them.
const std::vector<std::string>& grammars() {
  static const std::vector<std::string> g = {
      R"(root   ::= object
object ::= "{" ws ( string ":" ws value ( "," ws string ":" ws value )* )? "}"
value  ::= object | string | number | ("true" | "false" | "null")
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ws
ws ::= [ \t\n]{0,2})",
      "root ::= [^\\n]{1,40} \"\\n\"",
      "root ::= item (\", \" item){0,5} \".\"\nitem ::= [a-zé]+ | \"the \" [a-z]+ | [\\u00C0-\\u024F]{1,3}",
      "root ::= [a-z ]{2,12} <[300]> | \"x\" !<[301]> [a-z]{1,3}",
      "root ::= [a-z]+ ([ ,.]+ [a-z]*)*",
  };
  return g;
}

bool fits_reference(const GbnfPrefix& state, const ConstraintTokenTable& table, size_t t) {
  switch (table.kind[t]) {
    case ConstraintTokenTable::Kind::EndOfGeneration: return state.may_end();
    case ConstraintTokenTable::Kind::Text:
      return state.accepts(table.bytes[t]) || state.token_fits(static_cast<int32_t>(t));
    case ConstraintTokenTable::Kind::Never: return state.token_fits(static_cast<int32_t>(t));
  }
  return false;
}

}  // namespace

TEST_CASE("Grammar mask: the trie walk allows exactly the tokens that fit when tried one by one", "[gbnf][sampler]") {
  using tc::text::TokenizerKind;
  std::mt19937 rng(53);
  int compared = 0, ended = 0, may_end_seen = 0;
  for (TokenizerKind kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
    const auto& tokenizer = tc::text::test::trained_tokenizer(kind, 600);
    const int32_t n_vocab = tokenizer.n_vocab();
    const auto table = ConstraintTokenTable::from(tokenizer, n_vocab);
    for (const std::string& text : grammars()) {
      CAPTURE(text);
      const auto grammar = GbnfGrammar::parse(text);
      for (int walk = 0; walk < 12; ++walk) {
        OutputConstraint constraint(table, OutputForm::grammar(grammar));
        GbnfPrefix state(grammar.get());
        std::string written;
        for (int step = 0; step < 60 && !constraint.complete(); ++step) {
          std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
          constraint.mask(logits);
          std::vector<int32_t> allowed;
          bool may_end = false;
          for (size_t t = 0; t < logits.size(); ++t) {
            CAPTURE(written, t, table->bytes[t]);
            const bool expected = fits_reference(state, *table, t);
            REQUIRE((logits[t] == 0.0f) == expected);
            if (!expected) continue;
            if (table->kind[t] == ConstraintTokenTable::Kind::EndOfGeneration) {
              may_end = true;
            } else {
              allowed.push_back(static_cast<int32_t>(t));
            }
          }
          ++compared;
          may_end_seen += may_end ? 1 : 0;
          if (allowed.empty() || (may_end && rng() % 8 == 0)) {
            REQUIRE(may_end);  // the grammar never leaves a text that cannot go on or end
            ++ended;
            break;
          }
          const int32_t t = allowed[rng() % allowed.size()];
          constraint.accept(t);
          const auto i = static_cast<size_t>(t);
          REQUIRE(state.push_token(t, table->bytes[i], table->kind[i] == ConstraintTokenTable::Kind::Text));
          written += table->bytes[i];
        }
        ended += constraint.complete() ? 1 : 0;
      }
    }
  }
  CHECK(compared > 500);
  CHECK(ended > 20);
  CHECK(may_end_seen > 100);
}

TEST_CASE("Grammar mask: a constrained sampler writes texts of the grammar and stops where nothing can follow",
          "[gbnf][sampler]") {
  const auto& tokenizer = tc::text::test::trained_tokenizer(tc::text::TokenizerKind::Spm, 600);
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = ConstraintTokenTable::from(tokenizer, n_vocab);
  const auto grammar = GbnfGrammar::parse("root ::= (\"yes\" | \"no\" | \"maybe so\") \", \" [0-9]{1,2} \"!\"");
  std::mt19937 rng(59);
  std::normal_distribution<float> noise(0.0f, 3.0f);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    tc::runtime::SamplingParams params;
    params.temperature = 1.0f;
    params.seed = seed;
    tc::runtime::Sampler sampler(params, n_vocab);
    sampler.constrain(table, OutputForm::grammar(grammar));
    std::string text;
    int steps = 0;
    while (!sampler.constraint_complete()) {
      REQUIRE(++steps < 40);
      std::vector<float> logits(static_cast<size_t>(n_vocab));
      for (float& x : logits) x = noise(rng);
      const auto result = sampler.sample(logits);
      REQUIRE(result.status == tc::runtime::SampleStatus::Ok);
      REQUIRE(table->kind[static_cast<size_t>(result.token)] == ConstraintTokenTable::Kind::Text);
      sampler.accept(result.token);
      text += table->bytes[static_cast<size_t>(result.token)];
    }
    CAPTURE(text);
    GbnfPrefix check(grammar.get());
    REQUIRE(check.push(text));
    REQUIRE(check.complete());
  }
}
