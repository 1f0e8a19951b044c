// Gemma 4's tool calls (<|tool_call>call:NAME{key:value}<tool_call|>, the
// markers user-defined tokens as a converted file has them):
// Gemma4CallPrefix takes "call:", a declared name, then arguments in
// Gemma's syntax checked as the JSON they stand for (the function's
// parameters when it has them), then the closing marker; the lazy
// constraint leaves the text free until "<|tool_call>" (and inside a
// <|channel>thought block), holds the call, then is free again; on random
// logits (seeded) every call it starts names a declared function and reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/output_constraint.h"
#include "engine/text/gemma4_call_prefix.h"
#include "engine/text/json_schema.h"
#include "tests/engine/text/call_replay_test_util.h"
#include "tests/engine/text/text_test_util.h"

using tc::text::Gemma4CallPrefix;

namespace {

const std::string kQ = "<|\"|>";

// Sorted: "get" is a prefix of "get_time"; get_time's parameters are a schema.
std::shared_ptr<const tc::text::ToolCallGrammar> grammar() {
  static const auto g = std::make_shared<const tc::text::ToolCallGrammar>(
      std::vector<std::string>{"add", "get", "get_time"},
      std::vector<std::shared_ptr<const tc::text::JsonSchema>>{
          nullptr, nullptr,
          tc::text::JsonSchema::compile(nlohmann::ordered_json::parse(
              R"({"type": "object", "properties": {"zone": {"enum": ["utc", "local"]}, "n": {"type": "integer"}},
                  "required": ["zone"], "additionalProperties": false})"))});
  return g;
}

const std::vector<std::string> kMarkers = {"<|tool_call>", "<tool_call|>", "<|\"|>", "<|channel>", "<channel|>"};

// Text pieces, the call's pieces and Gemma 4's markers as user-defined tokens.
const tc::text::Tokenizer& gemma4_tokenizer() {
  static const auto tokenizer = [] {
    std::vector<std::pair<std::string, float>> pieces = {
        {"Sure", 0}, {".", 0},    {"\n", 0},   {"call", 0}, {":", 0},     {"{", 0},    {"}", 0},    {"[", 0},
        {"]", 0},    {",", 0},    {"\u2581", 0}, {"get", 0}, {"_time", 0}, {"add", 0},  {"zone", 0}, {"utc", 0},
        {"x", 0},    {"1", 0},    {"true", 0}, {"thought", 0}, {"n", 0},   {"\"", 0}};
    for (const auto& m : kMarkers) pieces.emplace_back(m, 0);
    auto vocab = tc::text::test::spm_vocab(pieces);
    for (const auto& marker : kMarkers) {
      const auto at = std::find(vocab.tokens.begin(), vocab.tokens.end(), marker) - vocab.tokens.begin();
      vocab.types[static_cast<size_t>(at)] = tc::text::TokenType::UserDefined;
    }
    return tc::text::Tokenizer::create(vocab);
  }();
  return *tokenizer;
}

tc::text::TokenId id_of(const std::string& piece) {
  return tc::text::test::ids_of(gemma4_tokenizer().vocab(), {piece})[0];
}

tc::runtime::OutputForm gemma4_form() {
  auto form = tc::runtime::OutputForm::call(grammar(), "<|tool_call>");
  form.gemma4 = true;
  form.skip_reasoning = true;
  return form;
}

}  // namespace

TEST_CASE("Gemma4CallPrefix: call:, a declared name, Gemma arguments as JSON, the closing marker",
          "[json][tools]") {
  Gemma4CallPrefix p(grammar().get());
  CHECK_FALSE(p.accepts("get{"));  // "call:" first
  REQUIRE(p.push("call:"));
  CHECK_FALSE(p.accepts("x"));
  CHECK_FALSE(p.accepts("ge{"));  // not a whole name
  CHECK(p.accepts("get{}<tool_call|>"));
  CHECK(p.accepts("add{s:" + kQ + "any \"text\" \\ {}\n" + kQ + ",o:{a:[1,-2.5e3,true,null,[]]},e:{}}<tool_call|>"));
  CHECK_FALSE(p.accepts("add{s:\"json\"}"));  // a JSON string is no Gemma string
  CHECK_FALSE(p.accepts("add{a:1,}"));
  CHECK_FALSE(p.accepts("add{a:01}"));
  CHECK_FALSE(p.accepts("add{a:x}"));
  CHECK_FALSE(p.accepts("add{:1}"));
  CHECK_FALSE(p.accepts("add{} <tool_call|>"));
  REQUIRE(p.push("get_time{"));
  // get_time's parameters: zone, one of two strings, then an optional integer.
  CHECK_FALSE(p.accepts("}"));  // zone is required
  CHECK_FALSE(p.accepts("x:"));
  CHECK_FALSE(p.accepts("zone:" + kQ + "mars" + kQ));
  CHECK_FALSE(p.accepts("zone:1"));
  CHECK(p.accepts("zone:" + kQ + "local" + kQ + "}"));
  REQUIRE(p.push("zone:<|"));  // a string marker under way
  CHECK_FALSE(p.in_free_string());
  REQUIRE(p.push("\"|>ut"));
  CHECK_FALSE(p.accepts("x"));
  REQUIRE(p.push("c" + kQ));
  CHECK_FALSE(p.accepts(",n:1.5"));
  REQUIRE(p.push(",n:12}"));
  CHECK_FALSE(p.complete());
  CHECK_FALSE(p.accepts("}"));
  REQUIRE(p.push("<tool_call|>"));
  CHECK(p.complete());
  CHECK_FALSE(p.accepts("x"));

  // Inside a string of any text, between characters: free.
  Gemma4CallPrefix q(grammar().get());
  REQUIRE(q.push("call:add{s:" + kQ + "ab"));
  CHECK(q.in_free_string());
  CHECK(q.accepts("<|x" + kQ + "}<tool_call|>"));  // "<|x": text, not the marker
  CHECK_FALSE(q.push(static_cast<uint8_t>(0xFF)));  // not UTF-8
  CHECK(q.in_free_string());                        // (a refused byte changes nothing)
}

TEST_CASE("Lazy Gemma 4 call: free until <|tool_call>, held to a declared call, free after", "[sampler][tools]") {
  const auto& tokenizer = gemma4_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  tc::runtime::OutputConstraint c(table, gemma4_form());
  auto allowed = [&](const std::string& piece) {
    std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
    c.mask(logits);
    return logits[static_cast<size_t>(id_of(piece))] == 0.0f;
  };
  auto feed = [&](const std::vector<std::string>& pieces) {
    for (const auto& p : pieces) c.accept(id_of(p));
  };
  // A thought first: a call marker inside it triggers nothing.
  feed({"<|channel>", "thought", "\n", "<|tool_call>"});
  CHECK_FALSE(c.active());
  feed({"<channel|>", "Sure", "."});
  CHECK_FALSE(c.active());
  CHECK(allowed("x"));
  feed({"<|tool_call>"});
  REQUIRE(c.active());
  CHECK(allowed("call"));
  CHECK_FALSE(allowed("Sure"));
  CHECK_FALSE(allowed("<tool_call|>"));
  for (const std::string p : {"call", ":", "get", "_time", "{", "zone", ":", "<|\"|>", "utc", "<|\"|>", "}"}) {
    INFO("piece " << p);
    REQUIRE(allowed(p));
    feed({p});
  }
  CHECK_FALSE(allowed("x"));
  REQUIRE(allowed("<tool_call|>"));
  feed({"<tool_call|>"});
  CHECK_FALSE(c.active());  // whole: free again
  CHECK_FALSE(c.complete());
  CHECK(allowed("Sure"));
}

TEST_CASE("Lazy Gemma 4 call: on random logits every call names a declared function and reads",
          "[sampler][tools]") {
  const auto& tokenizer = gemma4_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const tc::text::TokenId open = id_of("<|tool_call>"), quote = id_of("<|\"|>"), close = id_of("<tool_call|>");
  std::mt19937 rng(23);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  int whole = 0;
  for (int walk = 0; walk < 40; ++walk) {
    tc::runtime::OutputConstraint c(table, gemma4_form());
    std::string text;
    for (int step = 0; step < 300; ++step) {
      std::vector<float> logits(static_cast<size_t>(n_vocab));
      for (auto& l : logits) l = noise(rng);
      if (!c.active()) logits[static_cast<size_t>(open)] += 3.0f;
      logits[static_cast<size_t>(quote)] += 2.0f;  // strings end now and then
      logits[static_cast<size_t>(close)] += 3.0f;  // allowed only once the arguments close
      c.mask(logits);
      const auto best = std::max_element(logits.begin(), logits.end());
      REQUIRE(*best > -std::numeric_limits<float>::infinity());
      const auto token = static_cast<tc::text::TokenId>(best - logits.begin());
      if (tokenizer.vocab().is_end_of_generation(token)) continue;
      c.accept(token);
      text += tokenizer.token_to_piece(token);
    }
    // Replayed: after each <|tool_call>, a call (or one cut off by the walk's end).
    whole += tc::text::test::replayed_calls<Gemma4CallPrefix>(text, "<|tool_call>", grammar().get());
  }
  CHECK(whole >= 20);
}
