// The Qwen3-Coder reply parser: <think> reasoning (ended by </think> or by
// a <tool_call>; reasoning_format none: content as written), XML tool
// calls turned into JSON arguments (text parameters as strings, every
// other value kind as JSON, falling back to a string), several calls, a
// call without its <tool_call> or its </tool_call>, what is no call kept
// as content, malformed and cut calls falling back to content as written;
// and every reply streamed byte by byte, cut once at every byte and cut at
// random (seeded), which must give what the whole gives.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/qwen3_coder_split.h"
#include "tests/server/split_parts_test_util.h"

using nlohmann::ordered_json;
using tc::server::test::calls_of_parts;
using tc::server::test::check_same_parts;
using tc::server::test::streamed_cut;
using tc::server::Qwen3CoderParts;
using tc::server::Qwen3CoderStream;
using tc::server::Qwen3CoderTools;
using tc::server::split_qwen3_coder;

namespace {

// get_weather's location and unit and search's query are text parameters.
const Qwen3CoderTools kTools = {{"get_time", "get_weather", "search"}, {{}, {"location", "unit"}, {"query"}}};

using Params = std::vector<std::pair<std::string, std::string>>;

std::string function(const std::string& name, const Params& params) {
  std::string out = "<function=" + name + ">\n";
  for (const auto& [key, value] : params) out += "<parameter=" + key + ">\n" + value + "\n</parameter>\n";
  return out + "</function>";
}
std::string call(const std::string& name, const Params& params) {
  return "<tool_call>\n" + function(name, params) + "\n</tool_call>";
}

struct Case {
  const char* name;
  std::string reply;
  std::string reasoning;
  std::string content;
  std::vector<std::pair<std::string, ordered_json>> calls;  // name, arguments
  bool split = true;
  bool tools = true;
  bool opens = false;
};

std::vector<Case> cases() {
  const std::string weather = call("get_weather", {{"location", "Paris"}});
  const ordered_json paris = {{"location", "Paris"}};
  const std::string time = call("get_time", {{"zone", "\"utc\""}});
  const std::string text = "say \"hi\" \\ {x}\n  <parameter=a> </parameter> \\n</parameter>\n\n<tool_call> é";
  return {
      {"plain text", "Hi! 2 < 3, #include <functional>", "", "Hi! 2 < 3, #include <functional>", {}},
      {"reasoning, then the answer", "<think>\nThe user greets me.\n</think>\n\nHi there.", "\nThe user greets me.\n",
       "Hi there.", {}},
      {"blanks before <think>", " \n<think>R</think>A", "R", "A", {}},
      {"the prompt opened the reasoning", "R</think>\n\nA", "R", "A", {}, true, true, true},
      {"reasoning never closed", "<think>still", "still", "", {}},
      {"the prompt's reasoning never closed", "still", "still", "", {}, true, true, true},
      {"a <think> later is content", "A<think>B</think>", "", "A<think>B</think>", {}},
      {"reasoning_format none keeps it as written", "<think>R</think>\nA", "", "<think>R</think>\nA", {}, false},
      {"none, the prompt's reasoning: content", "R</think>A", "", "R</think>A", {}, false, true, true},
      {"a <tool_call> ends the reasoning and is a call", "<think>Need it." + weather, "Need it.", "",
       {{"get_weather", paris}}},
      {"the prompt's reasoning ended by a call", "Need it.\n" + weather, "Need it.\n", "", {{"get_weather", paris}},
       true, true, true},
      {"a <tool_call> ends the reasoning, no tools", "<think>R<tool_call>x", "R", "<tool_call>x", {}, true, false},
      {"reasoning, then a call", "<think>R</think>\n\n" + weather, "R", "", {{"get_weather", paris}}},
      {"one call", weather, "", "", {{"get_weather", paris}}},
      {"text, then a call", "Let me check.\n\n" + weather, "", "Let me check.\n\n", {{"get_weather", paris}}},
      {"several calls, blanks after each dropped", weather + "\n" + time + "\n\n" + call("search", {}), "", "",
       {{"get_weather", paris}, {"get_time", {{"zone", "utc"}}}, {"search", ordered_json::object()}}},
      {"text after the calls stays", weather + "\nDone.", "", "Done.", {{"get_weather", paris}}},
      {"every value kind",
       call("get_time", {{"i", "42"}, {"n", "-7"}, {"f", "1.5"}, {"e", "2e3"}, {"t", "true"}, {"u", "false"},
                         {"z", "null"}, {"s", "\"quoted\""}, {"o", "{\"a\": [1, {\"b\": null}]}"},
                         {"arr", "[1, \"a\"]"},
                         {"pretty", "{\n  \"k\": 1\n}"}, {"word", "not json"}, {"empty", ""}, {"True", "True"},
                         {"big", "1e999"}, {"spaced", "  12 "}}),
       "", "",
       {{"get_time",
         {{"i", 42}, {"n", -7}, {"f", 1.5}, {"e", 2e3}, {"t", true}, {"u", false}, {"z", nullptr}, {"s", "quoted"},
          {"o", {{"a", {1, {{"b", nullptr}}}}}}, {"arr", {1, "a"}}, {"pretty", {{"k", 1}}}, {"word", "not json"},
          {"empty", ""}, {"True", "True"}, {"big", "1e999"}, {"spaced", 12}}}}},
      {"text parameters as written", call("search", {{"query", text}}), "", "", {{"search", {{"query", text}}}}},
      {"text parameters that look like JSON stay text", call("get_weather", {{"location", "42"}, {"unit", "[1]"}}),
       "", "", {{"get_weather", {{"location", "42"}, {"unit", "[1]"}}}}},
      {"multi-line text", call("search", {{"query", "line 1\nline 2\n"}}), "", "",
       {{"search", {{"query", "line 1\nline 2\n"}}}}},
      {"empty text values", "<tool_call>\n<function=search>\n<parameter=query>\n\n</parameter>\n<parameter=x>\n"
       "</parameter>\n<parameter=query>\n</parameter>\n</function>\n</tool_call>", "", "",
       {{"search", {{"query", ""}, {"x", ""}}}}},
      {"a value without its opening newline", "<tool_call><function=search><parameter=query>q\n</parameter>"
       "</function></tool_call>", "", "", {{"search", {{"query", "q"}}}}},
      {"blanks between tags", "<tool_call> \n<function=search>\n\n  <parameter=query>\nq\n</parameter> \n</function>"
       "\n\n</tool_call>", "", "", {{"search", {{"query", "q"}}}}},
      {"a key written twice keeps its last value", call("get_time", {{"a", "1"}, {"b", "2"}, {"a", "3"}}), "", "",
       {{"get_time", {{"a", 3}, {"b", 2}}}}},
      {"too deep a value stays a string", call("get_time", {{"a", std::string(70, '[') + std::string(70, ']')}}), "",
       "", {{"get_time", {{"a", std::string(70, '[') + std::string(70, ']')}}}}},
      {"no <tool_call>", function("get_time", {{"n", "1"}}) + "\n</tool_call>", "", "", {{"get_time", {{"n", 1}}}}},
      {"no <tool_call>, no </tool_call>", "Sure: " + function("get_time", {}), "", "Sure: ",
       {{"get_time", ordered_json::object()}}},
      {"no </tool_call> at the end", "<tool_call>\n" + function("get_time", {}) + "\n", "", "",
       {{"get_time", ordered_json::object()}}},
      {"no </tool_call>, then text", "<tool_call>\n" + function("get_time", {}) + "\nthen", "", "then",
       {{"get_time", ordered_json::object()}}},
      {"a cut </tool_call>", "<tool_call>\n" + function("get_time", {}) + "\n</tool_", "", "</tool_",
       {{"get_time", ordered_json::object()}}},
      {"calls without tools are content", weather, "", weather, {}, true, false},
      {"an undeclared function stays content", call("nope", {}) + "x", "", call("nope", {}) + "x", {}},
      {"an undeclared <function= stays content", "<function=nope>\n</function>", "", "<function=nope>\n</function>",
       {}},
      {"a name cut short of a declared one stays content", call("get", {}), "", call("get", {}), {}},
      {"Hermes JSON in <tool_call> stays content", "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n"
       "</tool_call>", "", "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", {}},
      {"a call cut in a value stays content", "<tool_call>\n<function=search>\n<parameter=query>\nhal", "",
       "<tool_call>\n<function=search>\n<parameter=query>\nhal", {}},
      {"a call without </function> stays content", "<tool_call>\n<function=search>\n</tool_call>", "",
       "<tool_call>\n<function=search>\n</tool_call>", {}},
      {"text inside a function stays content", "<tool_call>\n<function=search>\nhi\n</function>\n</tool_call>", "",
       "<tool_call>\n<function=search>\nhi\n</function>\n</tool_call>", {}},
      {"an empty key stays content", "<function=search>\n<parameter=>\n1\n</parameter>\n</function>", "",
       "<function=search>\n<parameter=>\n1\n</parameter>\n</function>", {}},
      {"a broken call, then a good one", "<tool_call>\n<function=search>\n<oops>" + weather, "",
       "<tool_call>\n<function=search>\n<oops>", {{"get_weather", paris}}},
      {"a broken call holding a call without <tool_call>", "<tool_call>\nx" + function("get_time", {}), "",
       "<tool_call>\nx", {{"get_time", ordered_json::object()}}},
  };
}

Qwen3CoderTools tools_of(const Case& c) { return c.tools ? kTools : Qwen3CoderTools(); }

std::vector<std::pair<std::string, ordered_json>> calls_of(const Qwen3CoderParts& p) {
  return calls_of_parts<ordered_json>(p);
}

// The reply pushed in pieces cut at `cuts` (ascending offsets).
Qwen3CoderParts streamed(const Case& c, const std::vector<size_t>& cuts) {
  Qwen3CoderStream s(c.opens, c.split, tools_of(c));
  return streamed_cut<Qwen3CoderParts>(s, c.reply, cuts);
}

// Pieces of Qwen3-Coder replies, well-formed and not, for random replies.
const std::vector<std::string> kPieces = {
    "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", "<think>", "</think>",
    "get_time",    "search",       "query",      "x",           ">",           "\n",           " ",       "<",
    "1",           "\"a\"",        "[",          "{",           "}",           "]",            "null",    "é",
    "\\",          "tool_call>",   "get",        "=",           "/"};

}  // namespace

TEST_CASE("qwen3-coder: whole replies give reasoning, content and tool calls", "[server][qwen3_coder]") {
  for (const Case& c : cases()) {
    INFO(c.name << ": " << c.reply);
    const Qwen3CoderParts p = split_qwen3_coder(c.reply, c.opens, c.split, tools_of(c));
    CHECK(p.reasoning == c.reasoning);
    CHECK(p.content == c.content);
    CHECK(calls_of(p) == c.calls);
  }
}

TEST_CASE("qwen3-coder: a reply streamed in any pieces gives what the whole gives", "[server][qwen3_coder]") {
  std::mt19937 rng(31);
  for (const Case& c : cases()) {
    INFO(c.name << ": " << c.reply);
    const Qwen3CoderParts whole = split_qwen3_coder(c.reply, c.opens, c.split, tools_of(c));
    std::vector<size_t> every;
    for (size_t i = 1; i < c.reply.size(); ++i) every.push_back(i);
    check_same_parts(streamed(c, every), whole);  // byte by byte
    for (size_t i = 1; i < c.reply.size(); ++i) {
      INFO("cut at " << i);
      check_same_parts(streamed(c, {i}), whole);
    }
    for (int trial = 0; trial < 30 && !c.reply.empty(); ++trial) {
      std::vector<size_t> cuts;
      for (size_t at = 1 + rng() % 7; at < c.reply.size(); at += 1 + rng() % 7) cuts.push_back(at);
      check_same_parts(streamed(c, cuts), whole);
    }
  }
}

TEST_CASE("qwen3-coder: random replies never break the parser and stream as they parse whole",
          "[server][qwen3_coder]") {
  std::mt19937 rng(20250301);
  for (int trial = 0; trial < 600; ++trial) {
    Case c{"random", "", "", "", {}};
    const size_t n = 1 + rng() % 32;
    for (size_t i = 0; i < n; ++i) c.reply += kPieces[rng() % kPieces.size()];
    if (rng() % 3 == 0) c.reply.insert(rng() % (c.reply.size() + 1), call("search", {{"query", "q"}}));
    c.split = rng() % 4 != 0;
    c.tools = rng() % 4 != 0;
    c.opens = rng() % 5 == 0;
    INFO(c.reply << " split " << c.split << " tools " << c.tools << " opens " << c.opens);
    const Qwen3CoderParts whole = split_qwen3_coder(c.reply, c.opens, c.split, tools_of(c));
    CHECK(whole.reasoning.size() + whole.content.size() <= c.reply.size());  // adds nothing
    if (!c.split) CHECK(whole.reasoning.empty());
    if (!c.tools) CHECK(whole.calls.empty());
    for (const auto& call : whole.calls) CHECK(ordered_json::parse(call.arguments).is_object());
    std::vector<size_t> cuts;
    for (size_t at = 1 + rng() % 5; at < c.reply.size(); at += 1 + rng() % 5) cuts.push_back(at);
    check_same_parts(streamed(c, cuts), whole);
  }
}

TEST_CASE("qwen3-coder: a stream shows reasoning and content as they come and holds calls",
          "[server][qwen3_coder]") {
  Qwen3CoderStream s(true, true, kTools);
  Qwen3CoderParts p = s.push("Thinking");
  CHECK(p.reasoning == "Thinking");
  p = s.push(" more</thi");
  CHECK(p.reasoning == " more");  // a possible </think> waits
  p = s.push("nk>\n\nThe answer");
  CHECK(p.content == "The answer");
  p = s.push(" is <tool");
  CHECK(p.content == " is ");
  p = s.push("_call>\n<function=get_weather>\n<parameter=location>\nPar");
  CHECK((p.content.empty() && p.calls.empty()));
  p = s.push("is\n</parameter>\n</function>\n</tool_call");
  CHECK((p.content.empty() && p.calls.empty()));
  p = s.push(">\n");
  REQUIRE(p.calls.size() == 1);  // whole: out at once
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.calls[0].arguments == R"({"location":"Paris"})");
  p = s.finish();
  CHECK((p.content.empty() && p.reasoning.empty() && p.calls.empty()));

  // A call that breaks is content as soon as it does.
  Qwen3CoderStream t(false, true, kTools);
  p = t.push("<tool_call>\n<function=nope");
  CHECK(p.content == "<tool_call>\n<function=nope");
  // A call without </tool_call> is whole once something else follows.
  Qwen3CoderStream u(false, true, kTools);
  p = u.push("<function=get_time>\n</function>\n");
  CHECK(p.calls.empty());
  p = u.push("Done");
  REQUIRE(p.calls.size() == 1);
  CHECK(p.content == "Done");
}
