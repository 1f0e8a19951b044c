// ToolCallPrefix and forced tool calls through the Sampler: calls to every
// declared name accepted byte by byte and complete only at the end; other
// names, name prefixes and bytes outside the form refused; random calls as
// nlohmann writes their arguments accepted, and fitting the function's
// parameters schema where it has one; on random logits every sampled
// text stays a prefix and, once closed, parses as a call to a declared name.
// Lazy calls (a trigger text, e.g. <tool_call>, turns the form on until the
// call closes): free text before, the call held to its form, free again
// after, and on random logits every call after a trigger a declared one.
// A held form after the reasoning the prompt opened: the reasoning free
// (but not its end) up to </think>, the form holding what follows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/output_constraint.h"
#include "engine/runtime/sampler.h"
#include "engine/text/json_schema.h"
#include "engine/text/tool_call_prefix.h"
#include "tests/engine/text/constrained_walk.h"
#include "tests/engine/text/text_test_util.h"

using tc::text::ToolCallPrefix;

namespace {

// Sorted: "get" is a prefix of two others.
const std::vector<std::string>& names() {
  static const std::vector<std::string> n = {"add", "get", "get_time", "get_weather", "z-9"};
  return n;
}
const tc::text::ToolCallGrammar& grammar() {
  static const tc::text::ToolCallGrammar g(names());
  return g;
}

std::string call(const std::string& name, const std::string& arguments) {
  std::string text(ToolCallPrefix::kHead);
  text.append(name);
  text.append(ToolCallPrefix::kMiddle);
  text.append(arguments);
  text.append(ToolCallPrefix::kTail);
  return text;
}

// The index of the first byte refused, or -1.
int first_refused(const std::string& text) {
  ToolCallPrefix p(&grammar());
  for (size_t i = 0; i < text.size(); ++i) {
    if (!p.push(static_cast<uint8_t>(text[i]))) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

TEST_CASE("ToolCallPrefix: a call to each declared name is accepted and complete only at its last byte",
          "[json][tools]") {
  for (const auto& name : names()) {
    const std::string text = call(name, R"({"city": "Paris", "n": [1, 2.5e3, {"x": null}]})");
    CAPTURE(text);
    ToolCallPrefix p(&grammar());
    for (size_t i = 0; i < text.size(); ++i) {
      REQUIRE_FALSE(p.complete());
      REQUIRE(p.push(static_cast<uint8_t>(text[i])));
    }
    CHECK(p.complete());
    CHECK_FALSE(p.accepts(" "));  // nothing after the call
    CHECK_FALSE(p.accepts("}"));
  }
  CHECK(first_refused(call("get", "{}")) == -1);
  CHECK(first_refused("\n " + call("get", "{}")) == -1);  // a little whitespace may lead
  CHECK(first_refused("  " + call("get", "{}")) == 1);     // not padding
  // Llama 3.x's key for the arguments, and no other.
  CHECK(first_refused(R"({"name": "get", "parameters": {"a": 1}})") == -1);
  CHECK(first_refused(R"({"name": "get", "params": {}})") == 22);
  CHECK(first_refused(R"({"name": "get", "argumentsx": {}})") == 26);
}

TEST_CASE("ToolCallPrefix: refuses undeclared names and text outside the form at the first bad byte",
          "[json][tools]") {
  const auto head = static_cast<int>(ToolCallPrefix::kHead.size());
  struct Case {
    std::string text;
    int refused;
  };
  const std::vector<Case> cases = {
      {"{ \"name\"", 1},                                // the head is fixed text
      {"[", 0},
      {call("ge", "{}"), head + 2},                     // a prefix of a name is not a name
      {call("get_", "{}"), head + 4},
      {call("get_weathe", "{}"), head + 10},
      {call("getx", "{}"), head + 3},                   // no name goes on with 'x'
      {call("b", "{}"), head},
      {call("add", "[]"), head + 3 + static_cast<int>(ToolCallPrefix::kMiddle.size())},  // arguments: an object
      {call("add", "{\"a\":}"), head + 3 + static_cast<int>(ToolCallPrefix::kMiddle.size()) + 5},
      {call("add", "{}") + " ", head + 3 + static_cast<int>(ToolCallPrefix::kMiddle.size()) + 3},
      {std::string(ToolCallPrefix::kHead) + "\"", head},  // an empty name
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(first_refused(c.text) == c.refused);
  }
  // A refused byte leaves the state as it was.
  ToolCallPrefix p(&grammar());
  REQUIRE(p.push(std::string(ToolCallPrefix::kHead) + "get"));
  CHECK_FALSE(p.push(static_cast<uint8_t>('x')));
  CHECK(p.push(static_cast<uint8_t>('"')));
}

TEST_CASE("ToolCallPrefix: a function with a parameters schema gets arguments that fit it", "[json][tools][schema]") {
  const tc::text::ToolCallGrammar with_schema(
      {"get_time", "get_weather"},
      {nullptr, tc::text::JsonSchema::compile(nlohmann::ordered_json::parse(
                    R"({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
                        "required": ["city"], "additionalProperties": false})"))});
  auto accepted = [&](const std::string& name, const std::string& args) {
    return ToolCallPrefix(&with_schema).push(call(name, args));
  };
  CHECK(accepted("get_weather", R"({"city": "Oslo", "unit": "C"})"));
  CHECK(accepted("get_weather", R"({"city": "Oslo"})"));
  CHECK_FALSE(accepted("get_weather", R"({"unit": "C"})"));                // city is required
  CHECK_FALSE(accepted("get_weather", R"({"city": "Oslo", "unit": "K"})"));  // not in the enum
  CHECK_FALSE(accepted("get_weather", R"({"city": 5})"));
  CHECK(accepted("get_time", R"({"anything": [1]})"));  // no schema: any object
  ToolCallPrefix p(&with_schema);
  REQUIRE(p.push(call("get_weather", R"({"city": "A"})")));
  CHECK(p.complete());
}

TEST_CASE("ToolCallPrefix: random arguments as nlohmann writes them are accepted", "[json][tools]") {
  std::mt19937 rng(11);
  for (int i = 0; i < 500; ++i) {
    nlohmann::json args = nlohmann::json::object();
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      std::string key = "k";
      key.append(std::to_string(rng() % 20));
      args[key] = (rng() % 2 == 0) ? nlohmann::json(static_cast<int>(rng() % 1000)) : nlohmann::json("v\"\xc3\xa9\n");
    }
    const std::string text = call(names()[rng() % names().size()], args.dump());
    CAPTURE(text);
    ToolCallPrefix p(&grammar());
    REQUIRE(p.push(text));
    REQUIRE(p.complete());
    // Indented arguments too; padding is refused.
    CHECK(ToolCallPrefix(&grammar()).push(call(names()[0], args.dump(2))));
    CHECK_FALSE(ToolCallPrefix(&grammar()).push(call(names()[0], "{  }")));
  }
}

namespace {

const tc::text::Tokenizer& tool_tokenizer() {
  static const auto tokenizer = tc::text::Tokenizer::create(tc::text::test::spm_vocab({
      {"{", 0}, {"}", 0}, {"\"", 0}, {":", 0}, {",", 0}, {"a", 0}, {"d", 0}, {"g", 0}, {"e", 0}, {"t", 0},
      {"_", 0}, {"w", 0}, {"get", 0}, {"name", 0}, {"arguments", 0}, {"{\"", 0}, {"\":", 0}, {"\u2581", 0},
      {"1", 0}, {"x", 0}, {"\"}", 0}, {"}}", 0}, {"\u2581\"", 0}, {"ather", 0}, {"ime", 0}, {"z-9", 0},
  }));
  return *tokenizer;
}

}  // namespace

TEST_CASE("Forced tool call: random logits give texts that close as calls to declared names", "[sampler][tools]") {
  const auto& tokenizer = tool_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const auto declared = std::make_shared<const tc::text::ToolCallGrammar>(names());
  const tc::text::TokenId eos = tokenizer.vocab().eos_id;
  std::mt19937 rng(5);
  std::set<std::string> called;
  int closed = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const auto walk = tc::text::test::constrained_walk(
        table, tc::runtime::OutputForm::call(declared), eos, seed, rng,
        [&](const std::string& text) { return ToolCallPrefix(declared.get()).accepts(text); });
    if (!walk.closed) continue;
    ++closed;
    const std::string& text = walk.text;
    CAPTURE(text);
    const auto parsed = nlohmann::json::parse(text);
    REQUIRE(parsed.size() == 2);
    REQUIRE(parsed.contains(parsed.contains("arguments") ? "arguments" : "parameters"));
    REQUIRE(parsed.at(parsed.contains("arguments") ? "arguments" : "parameters").is_object());
    const std::string name = parsed.at("name").get<std::string>();
    REQUIRE(std::find(names().begin(), names().end(), name) != names().end());
    called.insert(name);
  }
  CHECK(closed >= 50);
  CHECK(called.size() >= 3);  // the draw reaches several names, not one path
}

namespace {

// Text pieces, the Hermes / Qwen call markers and a call's pieces.
const tc::text::Tokenizer& lazy_tokenizer() {
  static const auto tokenizer = tc::text::Tokenizer::create(tc::text::test::spm_vocab({
      {"Sure", 0},  {"\u2581it", 0}, {"\u2581is", 0}, {".", 0},     {"\n", 0},        {"<tool_call>", 0},
      {"<tool", 0}, {"_call>", 0},   {"</tool_call>", 0}, {"{", 0}, {"}", 0},        {"\"", 0},
      {":", 0},     {",", 0},        {"\u2581", 0},  {"name", 0},   {"arguments", 0}, {"get", 0},
      {"_time", 0}, {"add", 0},      {"x", 0},       {"1", 0},      {"}}", 0},        {"<tool_call>{", 0},
      {"<think>", 0}, {"</think>", 0}, {"<th", 0}, {"ink>", 0}, {"</th", 0},
  }));
  return *tokenizer;
}

tc::text::TokenId id_of(const tc::text::Tokenizer& tokenizer, const std::string& piece) {
  return tc::text::test::ids_of(tokenizer.vocab(), {piece})[0];
}

// How many of `logits` mask() left finite.
size_t n_allowed(const tc::runtime::OutputConstraint& c, int32_t n_vocab) {
  std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
  c.mask(logits);
  return static_cast<size_t>(std::count_if(logits.begin(), logits.end(), [](float l) { return l == 0.0f; }));
}

}  // namespace

TEST_CASE("Lazy tool call: free text until the trigger, the call held to its form, free again after",
          "[sampler][tools]") {
  const auto& tokenizer = lazy_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const auto declared = std::make_shared<const tc::text::ToolCallGrammar>(names());
  tc::runtime::OutputConstraint c(table, tc::runtime::OutputForm::call(declared, "<tool_call>"));
  const size_t free = n_allowed(c, n_vocab);
  auto feed = [&](const std::vector<std::string>& pieces) {
    for (const auto& p : pieces) c.accept(id_of(tokenizer, p));
  };
  auto allowed = [&](const std::string& piece) {
    std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
    c.mask(logits);
    return logits[static_cast<size_t>(id_of(tokenizer, piece))] == 0.0f;
  };

  CHECK_FALSE(c.active());
  CHECK(free == static_cast<size_t>(n_vocab));  // nothing masked while off
  feed({"Sure", ".", "\n"});
  CHECK_FALSE(c.active());
  CHECK(n_allowed(c, n_vocab) == free);
  // The trigger: the call's form from the next byte on.
  feed({"<tool_call>"});
  REQUIRE(c.active());
  CHECK(allowed("{"));
  CHECK(allowed("\n"));  // a newline before the object (Qwen writes one)
  CHECK_FALSE(allowed("x"));
  CHECK_FALSE(allowed("Sure"));
  CHECK_FALSE(allowed("</tool_call>"));
  CHECK_FALSE(c.complete());
  // {"name": "get_time", "arguments": {}} token by token, each piece allowed before it is taken.
  for (const std::string p : {"\n", "{", "\"", "name", "\"", ":", "\u2581", "\"", "get", "_time", "\"", ",", "\u2581",
                              "\"", "arguments", "\"", ":", "\u2581", "{", "}}"}) {
    INFO("piece " << p);
    REQUIRE(c.active());
    REQUIRE(allowed(p));
    feed({p});
  }
  // Closed: free again, and never complete (a lazy form does not end the output).
  CHECK_FALSE(c.active());
  CHECK_FALSE(c.complete());
  CHECK(n_allowed(c, n_vocab) == free);
  feed({"\n", "</tool_call>", "\n"});
  CHECK_FALSE(c.active());

  SECTION("a trigger cut over two tokens, and one token running on past it") {
    feed({"<tool", "_call>"});
    CHECK(c.active());
    c.reset();
    CHECK_FALSE(c.active());
    feed({"<tool_call>{"});
    REQUIRE(c.active());
    CHECK(allowed("\""));
    CHECK_FALSE(allowed("{"));  // the object is open already
  }
  SECTION("an undeclared name cannot be written") {
    feed({"<tool_call>", "{", "\"", "name", "\"", ":", "\u2581", "\""});
    CHECK(allowed("get"));
    CHECK(allowed("add"));
    CHECK_FALSE(allowed("x"));
  }
}

TEST_CASE("Lazy tool call: a thinking model's <tool_call> inside its reasoning is thought, not a call",
          "[sampler][tools]") {
  const auto& tokenizer = lazy_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const auto declared = std::make_shared<const tc::text::ToolCallGrammar>(names());
  auto form = tc::runtime::OutputForm::call(declared, "<tool_call>");
  form.skip_reasoning = true;
  SECTION("reasoning that opens the reply, cut over tokens") {
    tc::runtime::OutputConstraint c(table, form);
    for (const std::string p : {"\n", "<th", "ink>", "Sure", "<tool_call>"}) c.accept(id_of(tokenizer, p));
    CHECK_FALSE(c.active());
    for (const std::string p : {".", "</think>", "\n", "<tool_call>"}) c.accept(id_of(tokenizer, p));
    CHECK(c.active());
  }
  SECTION("reasoning the prompt opened: to </think>") {
    form.reasoning_open = true;
    tc::runtime::OutputConstraint c(table, form);
    c.accept(id_of(tokenizer, "<tool_call>"));
    CHECK_FALSE(c.active());
    c.accept(id_of(tokenizer, "</think>"));
    c.accept(id_of(tokenizer, "<tool_call>"));
    CHECK(c.active());
  }
  SECTION("a reply without reasoning, and a <think> later in it (text, as the reasoning split reads it)") {
    tc::runtime::OutputConstraint c(table, form);
    for (const std::string p : {"Sure", "<think>", "<tool_call>"}) c.accept(id_of(tokenizer, p));
    CHECK(c.active());
  }
}

TEST_CASE("Lazy tool call at the start: held when the reply opens with the call, else free to the end",
          "[sampler][tools]") {
  const auto& tokenizer = lazy_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const auto declared = std::make_shared<const tc::text::ToolCallGrammar>(names());
  tc::runtime::OutputConstraint c(table, tc::runtime::OutputForm::call(declared, "", /*at_start=*/true));
  auto feed = [&](const std::vector<std::string>& pieces) {
    for (const auto& p : pieces) c.accept(id_of(tokenizer, p));
  };
  CHECK_FALSE(c.active());
  CHECK(n_allowed(c, n_vocab) == static_cast<size_t>(n_vocab));
  SECTION("blanks, then the call's opening: held from there until it closes") {
    feed({"\n", "\n", "{", "\"", "name", "\"", ":", "\u2581"});
    CHECK_FALSE(c.active());  // may still become the opening: nothing decided, nothing masked
    CHECK(n_allowed(c, n_vocab) == static_cast<size_t>(n_vocab));
    feed({"\""});  // {"name": " -- the opening, as llama.cpp's trigger
    REQUIRE(c.active());
    CHECK(n_allowed(c, n_vocab) < static_cast<size_t>(n_vocab));
    feed({"add", "\"", ",", "\u2581", "\"", "arguments", "\"", ":", "\u2581", "{", "}}"});
    CHECK_FALSE(c.active());
    CHECK_FALSE(c.complete());
    feed({"{", "\"", "name", "\"", ":", "\u2581", "\""});  // once only: a second call later is text
    CHECK_FALSE(c.active());
  }
  SECTION("a brace that does not go on into the opening leaves the reply free") {
    feed({"{", "}}"});
    CHECK_FALSE(c.active());
    feed({"\"", "name", "\"", ":", "\u2581", "\""});
    CHECK_FALSE(c.active());
  }
  SECTION("a reply that opens with text stays free, braces and all") {
    feed({"Sure", "{"});
    CHECK_FALSE(c.active());
    CHECK(n_allowed(c, n_vocab) == static_cast<size_t>(n_vocab));
  }
}

TEST_CASE("Lazy tool call: on random logits every call after a trigger is a declared one", "[sampler][tools]") {
  const auto& tokenizer = lazy_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const auto declared = std::make_shared<const tc::text::ToolCallGrammar>(names());
  const tc::text::TokenId trigger = id_of(tokenizer, "<tool_call>");
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  int calls = 0;
  for (int walk = 0; walk < 40; ++walk) {
    tc::runtime::OutputConstraint c(table, tc::runtime::OutputForm::call(declared, "<tool_call>"));
    std::string text;
    for (int step = 0; step < 400; ++step) {
      std::vector<float> logits(static_cast<size_t>(n_vocab));
      for (auto& l : logits) l = noise(rng);
      if (!c.active()) logits[static_cast<size_t>(trigger)] += 3.0f;  // calls now and then
      c.mask(logits);
      const auto best = std::max_element(logits.begin(), logits.end());
      REQUIRE(*best > -std::numeric_limits<float>::infinity());
      const auto token = static_cast<tc::text::TokenId>(best - logits.begin());
      if (tokenizer.vocab().is_end_of_generation(token)) continue;  // (the text goes on)
      c.accept(token);
      text += tokenizer.token_to_piece(token);
    }
    CAPTURE(text);
    // After each trigger in the free text: a call to a declared name (or
    // the prefix of one, at the end); the search goes on after the call (a
    // trigger inside its strings is text).
    const std::string trigger = "<tool_call>";
    for (size_t at = text.find(trigger); at != std::string::npos;) {
      const std::string after = text.substr(at + trigger.size());
      ToolCallPrefix prefix(declared.get());
      size_t n = 0;
      while (n < after.size() && !prefix.complete() && prefix.push(static_cast<uint8_t>(after[n]))) ++n;
      if (!prefix.complete()) {
        REQUIRE(n == after.size());  // cut off by the walk's end, never broken
        break;
      }
      ++calls;
      const auto call = nlohmann::json::parse(after.substr(0, n));
      CHECK(std::find(names().begin(), names().end(), call.at("name").get<std::string>()) != names().end());
      at = text.find(trigger, at + trigger.size() + n);
    }
  }
  CHECK(calls >= 20);
}

TEST_CASE("A held form after the prompt's opened reasoning: free but unending up to </think>, then held",
          "[sampler][tools]") {
  const auto& tokenizer = lazy_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const auto declared = std::make_shared<const tc::text::ToolCallGrammar>(names());
  const tc::text::TokenId eos = tokenizer.vocab().eos_id;
  REQUIRE(eos >= 0);
  for (auto form : {tc::runtime::OutputForm::json_object(), tc::runtime::OutputForm::call(declared)}) {
    INFO((form.tool_call ? "forced call" : "JSON object"));
    form.skip_reasoning = true;
    form.reasoning_open = true;
    tc::runtime::OutputConstraint c(table, form);
    auto allowed = [&](tc::text::TokenId id) {
      std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
      c.mask(logits);
      return logits[static_cast<size_t>(id)] == 0.0f;
    };
    auto feed = [&](const std::vector<std::string>& pieces) {
      for (const auto& p : pieces) c.accept(id_of(tokenizer, p));
    };
    for (int round = 0; round < 2; ++round) {  // the second after reset()
      // The reasoning: any text, a call marker and a '{' included, but not the end.
      CHECK_FALSE(c.active());
      CHECK(allowed(id_of(tokenizer, "Sure")));
      CHECK(allowed(id_of(tokenizer, "x")));
      CHECK_FALSE(allowed(eos));
      CHECK(n_allowed(c, n_vocab) == static_cast<size_t>(n_vocab) - 1);
      feed({"Sure", "{", "<tool_call>", "</th"});
      CHECK_FALSE(c.active());
      CHECK_FALSE(c.complete());
      // </think> (here cut over tokens): the form holds from the next token.
      feed({"ink>"});
      REQUIRE(c.active());
      CHECK(allowed(id_of(tokenizer, "\n")));
      CHECK(allowed(id_of(tokenizer, "{")));
      CHECK_FALSE(allowed(id_of(tokenizer, "Sure")));
      CHECK_FALSE(allowed(id_of(tokenizer, "</think>")));
      CHECK_FALSE(allowed(eos));
      if (form.tool_call) {
        feed({"\n", "{", "\"", "name", "\"", ":", "\u2581", "\"", "add", "\"", ",", "\u2581", "\"", "arguments", "\"",
              ":", "\u2581", "{", "}}"});
      } else {
        feed({"{", "\"", "x", "\"", ":", "1", "}"});
      }
      CHECK(c.complete());
      CHECK(allowed(eos));
      c.reset();
    }
  }
}
