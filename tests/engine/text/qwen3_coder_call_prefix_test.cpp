// Qwen3-Coder's XML tool calls (<tool_call>\n<function=NAME>\n
// <parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>):
// Qwen3CoderCallPrefix takes a declared name, then parameters whose values
// are checked as the JSON they stand for (text parameters as strings, the
// others as JSON values, against the function's parameters when it has
// them), then the closing tags; the lazy constraint leaves the text free
// until "<tool_call>" or a declared "<function=NAME>" (a <tool_call> also
// ends a <think> block, inside which nothing else triggers), holds the
// call, then is free again; on random logits (seeded) every call it
// starts names a declared function and reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/output_constraint.h"
#include "engine/text/json_schema.h"
#include "engine/text/qwen3_coder_call_prefix.h"
#include "tests/engine/text/call_replay_test_util.h"
#include "tests/engine/text/text_test_util.h"

using tc::text::Qwen3CoderCallPrefix;

namespace {

// Sorted: "get" is a prefix of "get_time", whose parameters are a schema:
// zone and note are text parameters (note at most 8 characters), n an integer.
std::shared_ptr<const tc::text::ToolCallGrammar> grammar() {
  static const auto g = std::make_shared<const tc::text::ToolCallGrammar>(
      std::vector<std::string>{"add", "get", "get_time"},
      std::vector<std::shared_ptr<const tc::text::JsonSchema>>{
          nullptr, nullptr,
          tc::text::JsonSchema::compile(nlohmann::ordered_json::parse(
              R"({"type": "object", "properties": {"zone": {"enum": ["utc", "local"]}, "n": {"type": "integer"},
                  "note": {"type": "string", "maxLength": 8}}, "required": ["zone"],
                  "additionalProperties": false})"))},
      std::vector<std::vector<std::string>>{{}, {}, {"note", "zone"}});
  return g;
}

std::string param(const std::string& key, const std::string& value) {
  return "<parameter=" + key + ">\n" + value + "\n</parameter>\n";
}

const std::vector<std::string> kMarkers = {"<tool_call>", "</tool_call>", "<think>", "</think>"};

// Text pieces, the call's pieces and the markers as user-defined tokens.
const tc::text::Tokenizer& qwen_tokenizer() {
  static const auto tokenizer = [] {
    std::vector<std::pair<std::string, float>> pieces = {
        {"Sure", 0},  {".", 0},     {"\n", 0},    {"<", 0},         {"function", 0}, {"=", 0},  {">", 0},
        {"get", 0},   {"_time", 0}, {"add", 0},   {"parameter", 0}, {"</", 0},       {"zone", 0}, {"utc", 0},
        {"n", 0},     {"1", 0},     {"x", 0},     {"\u2581", 0},    {"note", 0},     {"\"", 0},  {"{", 0},
        {"}", 0},     {"<function=", 0}, {"</parameter>", 0}, {"</function>", 0}, {"<parameter=", 0}};
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
  return tc::text::test::ids_of(qwen_tokenizer().vocab(), {piece})[0];
}

tc::runtime::OutputForm qwen3_coder_form(bool reasoning_open = false) {
  auto form = tc::runtime::OutputForm::call(grammar(), "<tool_call>");
  form.qwen3_coder = true;
  form.skip_reasoning = true;
  form.reasoning_open = reasoning_open;
  return form;
}

}  // namespace

TEST_CASE("Qwen3CoderCallPrefix: a declared function, its parameters' values as JSON, the closing tags",
          "[json][tools]") {
  Qwen3CoderCallPrefix p(grammar().get());
  CHECK_FALSE(p.accepts("get>"));  // "<function=" first
  CHECK_FALSE(p.accepts("\n\n\n\n\n<function="));  // at most 4 blanks
  REQUIRE(p.push("\n<function="));
  CHECK_FALSE(p.accepts("x"));
  CHECK_FALSE(p.accepts("ge>"));  // not a whole name
  CHECK(p.accepts("get>\n</function>\n</tool_call>"));
  // A function without a schema: any keys, every value text.
  CHECK(p.accepts("add>\n" + param("s", "any \"text\" \\ {}\n<x> </parameter>") + param("o", "{\"a\": 1}") +
                  "</function>\n</tool_call>"));
  CHECK(p.accepts("add>\n" + param("s", "") + "</function></tool_call>"));
  CHECK_FALSE(p.accepts("add>\n<parameter=>\n"));   // an empty key
  CHECK_FALSE(p.accepts("add>\n<parameter=s>x"));   // a newline after the key's tag
  CHECK_FALSE(p.accepts("add>\nhello"));            // text between the tags
  CHECK_FALSE(p.accepts("add>\n</function> x"));    // text before </tool_call>
  REQUIRE(p.push("get_time>\n"));
  // get_time's parameters: zone (text, one of two), then optionally n (a JSON integer) and note (text).
  CHECK_FALSE(p.accepts("</function>"));  // zone is required
  CHECK_FALSE(p.accepts("<parameter=x>"));
  CHECK_FALSE(p.accepts(param("zone", "mars")));
  CHECK_FALSE(p.accepts(param("zone", "\"utc\"")));  // a text parameter's value is the text, not its JSON
  CHECK(p.accepts(param("zone", "local") + "</function>\n</tool_call>"));
  CHECK_FALSE(p.accepts(param("zone", "utc") + param("n", "\"1\"")));  // a JSON parameter's value is JSON
  CHECK_FALSE(p.accepts(param("zone", "utc") + param("n", "1.5")));
  CHECK_FALSE(p.accepts(param("zone", "utc") + "<parameter=n>\n1}"));  // the value's bytes stay the value's
  CHECK_FALSE(p.accepts(param("zone", "utc") + "<parameter=n>\n1,"));
  CHECK_FALSE(p.accepts(param("zone", "utc") + param("note", "123456789")));  // longer than 8
  CHECK_FALSE(p.accepts(param("n", "1") + param("zone", "utc")));  // in the order declared
  REQUIRE(p.push("<parameter=zone>\nut"));
  CHECK_FALSE(p.in_free_string());  // an enum's string
  CHECK_FALSE(p.accepts("x"));
  REQUIRE(p.push("c\n</parameter>\n<parameter=n>\n"));
  CHECK_FALSE(p.accepts("\n</parameter>"));  // a JSON value must be written
  REQUIRE(p.push("12"));
  CHECK(p.accepts("3\n</parameter>"));
  CHECK(p.accepts("\n<"));
  CHECK_FALSE(p.accepts("\n<x"));  // after "\n<" only "/parameter>"
  REQUIRE(p.push("\n</parameter>\n"));
  CHECK_FALSE(p.complete());
  REQUIRE(p.push("</function>\n</tool_call>"));
  CHECK(p.complete());
  CHECK_FALSE(p.accepts("x"));

  // Inside a text value of any length: free between characters; a newline may begin its end.
  Qwen3CoderCallPrefix q(grammar().get());
  REQUIRE(q.push("<function=add>\n<parameter=s>\n"));
  CHECK_FALSE(q.in_free_string());  // "</parameter>" right at the start ends it
  REQUIRE(q.push("ab"));
  CHECK(q.in_free_string());
  CHECK(q.accepts("\n</par x\n</parameter>\n</function>\n</tool_call>"));  // "\n</par x": text
  REQUIRE(q.push("\n</param"));
  CHECK_FALSE(q.in_free_string());
  CHECK_FALSE(q.push(static_cast<uint8_t>(0xFF)));  // not UTF-8
  REQUIRE(q.push("eter>"));
  CHECK(q.accepts("</function></tool_call>"));
}

TEST_CASE("Lazy Qwen3-Coder call: free until <tool_call> or <function=NAME>, held to a declared call, free after",
          "[sampler][tools]") {
  const auto& tokenizer = qwen_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  tc::runtime::OutputConstraint c(table, qwen3_coder_form());
  auto allowed = [&](const std::string& piece) {
    std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
    c.mask(logits);
    return logits[static_cast<size_t>(id_of(piece))] == 0.0f;
  };
  auto feed = [&](const std::vector<std::string>& pieces) {
    for (const auto& p : pieces) c.accept(id_of(p));
  };
  // Reasoning first: a <function=NAME> inside it triggers nothing...
  feed({"<think>", "Sure", "<function=", "get", ">", "</think>", "Sure", "."});
  CHECK_FALSE(c.active());
  CHECK(allowed("x"));
  // ...nor does an undeclared function, outside it.
  feed({"<function=", "x", ">", "<", "function", "=", "n", ">"});
  CHECK_FALSE(c.active());
  // A declared one does, from its '<'.
  feed({"<", "function", "=", "add", ">"});
  REQUIRE(c.active());
  CHECK(allowed("\n"));
  CHECK_FALSE(allowed("Sure"));
  feed({"\n", "</function>", "\n", "</tool_call>"});
  CHECK_FALSE(c.active());  // whole: free again
  feed({"<tool_call>"});
  REQUIRE(c.active());
  CHECK(allowed("<function="));
  CHECK_FALSE(allowed("Sure"));
  CHECK_FALSE(allowed("</tool_call>"));
  for (const std::string p : {"\n", "<function=", "get", "_time", ">", "\n", "<parameter=", "zone", ">", "\n",
                              "utc", "\n", "</parameter>", "\n"}) {
    INFO("piece " << p);
    REQUIRE(allowed(p));
    feed({p});
  }
  CHECK_FALSE(allowed("x"));
  CHECK_FALSE(allowed("</tool_call>"));
  REQUIRE(allowed("</function>"));
  feed({"</function>", "\n"});
  REQUIRE(allowed("</tool_call>"));
  feed({"</tool_call>"});
  CHECK_FALSE(c.active());
  CHECK_FALSE(c.complete());
  CHECK(allowed("Sure"));

  // A <tool_call> ends the reasoning the prompt opened, and is held as a call.
  tc::runtime::OutputConstraint r(table, qwen3_coder_form(true));
  r.accept(id_of("Sure"));
  CHECK_FALSE(r.active());
  r.accept(id_of("<tool_call>"));
  CHECK(r.active());
}

TEST_CASE("Lazy Qwen3-Coder call: on random logits every call names a declared function and reads",
          "[sampler][tools]") {
  const auto& tokenizer = qwen_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const tc::text::TokenId open = id_of("<tool_call>"), end = id_of("</parameter>"), newline = id_of("\n");
  const tc::text::TokenId close = id_of("</function>"), call_close = id_of("</tool_call>");
  std::mt19937 rng(29);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  int whole = 0;
  for (int walk = 0; walk < 40; ++walk) {
    tc::runtime::OutputConstraint c(table, qwen3_coder_form());
    std::string text;
    for (int step = 0; step < 300; ++step) {
      std::vector<float> logits(static_cast<size_t>(n_vocab));
      for (auto& l : logits) l = noise(rng);
      if (!c.active()) logits[static_cast<size_t>(open)] += 3.0f;
      // Values and calls end now and then (allowed only where they may).
      logits[static_cast<size_t>(newline)] += 2.0f;
      for (const auto t : {end, close, call_close}) logits[static_cast<size_t>(t)] += 5.0f;
      c.mask(logits);
      const auto best = std::max_element(logits.begin(), logits.end());
      INFO(text);
      REQUIRE(*best > -std::numeric_limits<float>::infinity());
      const auto token = static_cast<tc::text::TokenId>(best - logits.begin());
      if (tokenizer.vocab().is_end_of_generation(token)) continue;
      c.accept(token);
      text += tokenizer.token_to_piece(token);
    }
    // Replayed: after each <tool_call>, a call (or one cut off by the walk's end).
    whole += tc::text::test::replayed_calls<Qwen3CoderCallPrefix>(text, "<tool_call>", grammar().get());
  }
  CHECK(whole >= 20);
}
