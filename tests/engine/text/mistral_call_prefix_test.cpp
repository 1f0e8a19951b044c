// Mistral's tool calls ([TOOL_CALLS]NAME[ARGS]{...}, the markers control
// tokens): MistralCallPrefix takes a declared name byte by byte, its
// arguments after begin_arguments, and is complete when they close; the
// lazy constraint leaves the text free until [TOOL_CALLS], then allows
// [ARGS] only after a whole declared name, then holds the arguments to the
// function's parameters, then is free again; on random logits every call
// after a [TOOL_CALLS] names a declared function with arguments that parse.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/output_constraint.h"
#include "engine/text/json_schema.h"
#include "engine/text/mistral_call_prefix.h"
#include "tests/engine/text/text_test_util.h"

using tc::text::MistralCallPrefix;

namespace {

// Sorted: "get" is a prefix of "get_time".
std::shared_ptr<const tc::text::ToolCallGrammar> grammar() {
  static const auto g = std::make_shared<const tc::text::ToolCallGrammar>(
      std::vector<std::string>{"add", "get", "get_time"},
      std::vector<std::shared_ptr<const tc::text::JsonSchema>>{
          nullptr, nullptr,
          tc::text::JsonSchema::compile(nlohmann::json::parse(
              R"({"type": "object", "properties": {"zone": {"enum": ["utc", "local"]}}, "required": ["zone"],
                  "additionalProperties": false})"))});
  return g;
}

// Text pieces, the call's pieces and Mistral's two markers as control tokens.
const tc::text::Tokenizer& mistral_tokenizer() {
  static const auto tokenizer = [] {
    auto vocab = tc::text::test::spm_vocab({
        {"Sure", 0},
        {".", 0},
        {"\n", 0},
        {"[TOOL_CALLS]", 0},
        {"[ARGS]", 0},
        {"{", 0},
        {"}", 0},
        {"\"", 0},
        {":", 0},
        {",", 0},
        {"\u2581", 0},
        {"get", 0},
        {"_time", 0},
        {"add", 0},
        {"zone", 0},
        {"utc", 0},
        {"x", 0},
        {"1", 0},
    });
    for (const std::string marker : {"[TOOL_CALLS]", "[ARGS]"}) {
      const auto at = std::find(vocab.tokens.begin(), vocab.tokens.end(), marker) - vocab.tokens.begin();
      vocab.types[static_cast<size_t>(at)] = tc::text::TokenType::Control;
    }
    return tc::text::Tokenizer::create(vocab);
  }();
  return *tokenizer;
}

tc::text::TokenId id_of(const std::string& piece) {
  return tc::text::test::ids_of(mistral_tokenizer().vocab(), {piece})[0];
}

}  // namespace

TEST_CASE("MistralCallPrefix: a declared name, then after [ARGS] its arguments", "[json][tools]") {
  MistralCallPrefix p(grammar().get());
  CHECK_FALSE(p.name_complete());
  CHECK_FALSE(p.accepts("x"));
  CHECK_FALSE(p.accepts("\"get"));  // no quotes or blanks around the name
  CHECK_FALSE(p.accepts(" get"));
  REQUIRE(p.push("get"));
  CHECK(p.name_complete());  // "get" is declared...
  REQUIRE(p.push("_t"));
  CHECK_FALSE(p.name_complete());  // ..."get_t" is not
  REQUIRE(p.push("ime"));
  CHECK(p.name_complete());
  CHECK_FALSE(p.accepts("s"));
  p.begin_arguments();
  CHECK_FALSE(p.in_name());
  CHECK_FALSE(p.accepts(R"({"zone": "mars"})"));  // get_time's parameters
  CHECK_FALSE(p.accepts(R"({})"));
  REQUIRE(p.push(R"({"zone": "utc")"));
  CHECK_FALSE(p.complete());
  REQUIRE(p.push("}"));
  CHECK(p.complete());
  CHECK_FALSE(p.accepts("}"));  // nothing after the object
}

TEST_CASE("Lazy Mistral call: free until [TOOL_CALLS], [ARGS] after a whole name, arguments held, free after",
          "[sampler][tools]") {
  const auto& tokenizer = mistral_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  tc::runtime::OutputConstraint c(
      table, tc::runtime::OutputForm::mistral_call(grammar(), id_of("[TOOL_CALLS]"), id_of("[ARGS]")));
  auto allowed = [&](const std::string& piece) {
    std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
    c.mask(logits);
    return logits[static_cast<size_t>(id_of(piece))] == 0.0f;
  };
  auto feed = [&](const std::vector<std::string>& pieces) {
    for (const auto& p : pieces) c.accept(id_of(p));
  };
  CHECK_FALSE(c.active());
  CHECK(allowed("Sure"));
  CHECK(allowed("[ARGS]"));  // free: nothing masked
  feed({"Sure", ".", "\n", "[TOOL_CALLS]"});
  REQUIRE(c.active());
  CHECK(allowed("get"));
  CHECK(allowed("add"));
  CHECK_FALSE(allowed("x"));
  CHECK_FALSE(allowed("[ARGS]"));  // no name yet
  CHECK_FALSE(allowed("\n"));
  feed({"get"});
  CHECK(allowed("[ARGS]"));  // "get" is whole
  CHECK(allowed("_time"));   // and "get_time" may follow
  feed({"_time"});
  REQUIRE(allowed("[ARGS]"));
  feed({"[ARGS]"});
  CHECK(allowed("{"));
  CHECK_FALSE(allowed("[ARGS]"));
  CHECK_FALSE(allowed("Sure"));
  for (const std::string p : {"{", "\"", "zone", "\"", ":", "\u2581", "\"", "utc", "\""}) {
    INFO("piece " << p);
    REQUIRE(allowed(p));
    feed({p});
  }
  CHECK_FALSE(allowed("x"));
  REQUIRE(allowed("}"));
  feed({"}"});
  CHECK_FALSE(c.active());  // whole: free again
  CHECK_FALSE(c.complete());
  CHECK(allowed("Sure"));
  feed({"[TOOL_CALLS]"});
  CHECK(c.active());
}

TEST_CASE("Lazy Mistral call: on random logits every call names a declared function", "[sampler][tools]") {
  const auto& tokenizer = mistral_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const tc::text::TokenId calls = id_of("[TOOL_CALLS]"), args = id_of("[ARGS]");
  std::mt19937 rng(21);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  int whole = 0;
  for (int walk = 0; walk < 40; ++walk) {
    tc::runtime::OutputConstraint c(table, tc::runtime::OutputForm::mistral_call(grammar(), calls, args));
    std::vector<tc::text::TokenId> tokens;
    for (int step = 0; step < 300; ++step) {
      std::vector<float> logits(static_cast<size_t>(n_vocab));
      for (auto& l : logits) l = noise(rng);
      if (!c.active()) logits[static_cast<size_t>(calls)] += 3.0f;
      logits[static_cast<size_t>(args)] += 3.0f;  // tempts every step; allowed only after a whole name
      c.mask(logits);
      const auto best = std::max_element(logits.begin(), logits.end());
      REQUIRE(*best > -std::numeric_limits<float>::infinity());
      const auto token = static_cast<tc::text::TokenId>(best - logits.begin());
      if (tokenizer.vocab().is_end_of_generation(token)) continue;
      c.accept(token);
      tokens.push_back(token);
    }
    // Replayed: after each [TOOL_CALLS], a declared name, [ARGS], and
    // arguments that close (or a call cut off by the walk's end).
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] != calls) continue;
      MistralCallPrefix p(grammar().get());
      size_t j = i + 1;
      for (; j < tokens.size() && tokens[j] != args; ++j) {
        REQUIRE(p.push(tokenizer.token_to_piece(tokens[j])));
      }
      if (j == tokens.size()) break;
      REQUIRE(p.name_complete());
      p.begin_arguments();
      for (++j; j < tokens.size() && !p.complete(); ++j) REQUIRE(p.push(tokenizer.token_to_piece(tokens[j])));
      if (!p.complete()) break;
      ++whole;
      i = j - 1;
    }
  }
  CHECK(whole >= 20);
}
