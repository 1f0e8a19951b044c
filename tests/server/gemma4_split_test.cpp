// The Gemma 4 reply parser: thoughts as reasoning (reasoning_format none:
// content as written), tool calls in Gemma's own value syntax (every value
// kind, nesting, several calls) turned into JSON arguments, what is no
// thought or call kept as content, malformed calls falling back to content
// as written; and every reply streamed byte by byte, cut once at every
// byte and cut at random (seeded), which must give what the whole gives.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/gemma4_split.h"
#include "tests/server/split_parts_test_util.h"

using nlohmann::json;
using tc::server::test::calls_of_parts;
using tc::server::test::check_same_parts;
using tc::server::test::streamed_cut;
using tc::server::Gemma4Parts;
using tc::server::Gemma4Stream;
using tc::server::split_gemma4;

namespace {

const std::vector<std::string> kNames = {"get_time", "get_weather", "search"};
const std::string kQ = "<|\"|>";  // Gemma's string marker

std::string str(const std::string& s) { return kQ + s + kQ; }
std::string call(const std::string& name, const std::string& args) {
  return "<|tool_call>call:" + name + args + "<tool_call|>";
}

struct Case {
  const char* name;
  std::string reply;
  std::string reasoning;
  std::string content;
  std::vector<std::pair<std::string, json>> calls;  // name, arguments
  bool split = true;
  bool tools = true;
  bool opens_thought = false;
};

std::vector<Case> cases() {
  const std::string weather = call("get_weather", "{location:" + str("Paris") + "}");
  const json paris = {{"location", "Paris"}};
  return {
      {"plain text", "Hello, world! 2 < 3 and a | b.", "", "Hello, world! 2 < 3 and a | b.", {}},
      {"a thought then the answer", "<|channel>thought\nThe user greets me.<channel|>Hi there.", "The user greets me.",
       "Hi there.", {}},
      {"blanks after thought are dropped, the rest kept", "<|channel>thought \n\t R \n<channel|>A", "R \n", "A", {}},
      {"empty channels before a thought are dropped", "<|channel><|channel>thought\nR<channel|>A", "R", "A", {}},
      {"an empty thought at the end", "Answer.<|channel>thought\n<channel|>", "", "Answer.", {}},
      {"a stray <channel|> is dropped", "Answer.<channel|>", "", "Answer.", {}},
      {"text after a stray <channel|> stays", "A<channel|>B", "", "AB", {}},
      {"a channel that is no thought stays content", "x<|channel>final y", "", "x<|channel>final y", {}},
      {"a thought cut off is all reasoning", "<|channel>thought\nstill thinking", "still thinking", "", {}},
      {"two thoughts", "<|channel>thought\nA<channel|>x<|channel>thought\nB<channel|>y", "AB", "xy", {}},
      {"the model's own turn opening is dropped", "<|turn>model\nHi", "", "Hi", {}},
      {"a turn opening later stays", "Hi<|turn>model\n", "", "Hi<|turn>model\n", {}},
      {"reasoning_format none keeps the thought as written", "<|channel>thought\nR<channel|>A", "",
       "<|channel>thought\nR<channel|>A", {}, false},
      {"none drops the empty channels before a thought", "<|channel><|channel>thought R<channel|>A", "",
       "<|channel>thought R<channel|>A", {}, false},
      {"the prompt opened the thought", "\n  R<channel|>A", "R", "A", {}, true, true, true},
      {"the prompt opened the thought, none", "\nR<channel|>A", "", "\nR<channel|>A", {}, false, true, true},
      {"the prompt opened a thought never closed", "R", "R", "", {}, true, true, true},
      {"one call", weather, "", "", {{"get_weather", paris}}},
      {"text, then a call", "Let me check." + weather, "", "Let me check.", {{"get_weather", paris}}},
      {"a thought, then a call", "<|channel>thought\nNeed it.<channel|>" + weather, "Need it.", "",
       {{"get_weather", paris}}},
      {"a call inside a thought is thought", "<|channel>thought\n" + weather + "<channel|>", weather, "", {}},
      {"several calls", weather + call("get_time", "{zone:" + str("utc") + "}") + call("search", "{}"), "", "",
       {{"get_weather", paris}, {"get_time", {{"zone", "utc"}}}, {"search", json::object()}}},
      {"text between and after calls stays", weather + "and" + weather + "done", "", "anddone",
       {{"get_weather", paris}, {"get_weather", paris}}},
      {"every value kind",
       call("search", "{s:" + str("x y") + ",i:42,n:-7,f:1.5,e:2e3,E:-0.25E-2,z:0,t:true,u:false,v:null}"), "", "",
       {{"search",
         {{"s", "x y"}, {"i", 42}, {"n", -7}, {"f", 1.5}, {"e", 2e3}, {"E", -0.25e-2}, {"z", 0}, {"t", true},
          {"u", false}, {"v", nullptr}}}}},
      {"nesting",
       call("search", "{o:{a:{b:[1,[2,[]],{}]}},arr:[" + str("a") + ",{k:" + str("v") + "},[true,null]],e:{},l:[]}"),
       "", "",
       {{"search",
         {{"o", {{"a", {{"b", json::array({1, json::array({2, json::array()}), json::object()})}}}}},
          {"arr", json::array({"a", {{"k", "v"}}, json::array({true, nullptr})})},
          {"e", json::object()},
          {"l", json::array()}}}}},
      {"strings as written: quotes, backslashes, newlines, braces, markers",
       call("search", "{q:" + str("say \"hi\" \\ {x}\n<tool_call|> <|\" <channel|> é") + "}"), "", "",
       {{"search", {{"q", "say \"hi\" \\ {x}\n<tool_call|> <|\" <channel|> é"}}}}},
      {"blanks around values", call("search", "{ a: 1 , b:\n[ 1 , 2 ] , c: " + str("x") + " }"), "", "",
       {{"search", {{"a", 1}, {"b", {1, 2}}, {"c", "x"}}}}},
      {"keys as written", call("search", "{a b:1,x-y.z:2}"), "", "", {{"search", {{"a b", 1}, {"x-y.z", 2}}}}},
      {"a key written twice keeps its last value", call("search", "{a:1,a:2}"), "", "", {{"search", {{"a", 2}}}}},
      {"calls without tools are content", weather, "", weather, {}, true, false},
      {"an undeclared function stays content", call("nope", "{a:1}") + "x", "", call("nope", "{a:1}") + "x", {}},
      {"a name cut short of a declared one stays content", call("get", "{}"), "", call("get", "{}"), {}},
      {"a call without call: stays content", "<|tool_call>get_weather{}<tool_call|>", "",
       "<|tool_call>get_weather{}<tool_call|>", {}},
      {"a JSON string value stays content", call("search", "{q:\"x\"}"), "", call("search", "{q:\"x\"}"), {}},
      {"a bare word value stays content", call("search", "{q:x}"), "", call("search", "{q:x}"), {}},
      {"a trailing comma stays content", call("search", "{a:1,}"), "", call("search", "{a:1,}"), {}},
      {"a leading zero stays content", call("search", "{a:01}"), "", call("search", "{a:01}"), {}},
      {"a key without a value stays content", call("search", "{a}"), "", call("search", "{a}"), {}},
      {"text before the closing marker stays content", "<|tool_call>call:search{} <tool_call|>", "",
       "<|tool_call>call:search{} <tool_call|>", {}},
      {"a call cut off stays content", "<|tool_call>call:search{q:" + kQ + "half", "",
       "<|tool_call>call:search{q:" + kQ + "half", {}},
      {"a call without its closing marker stays content", "<|tool_call>call:search{a:1}", "",
       "<|tool_call>call:search{a:1}", {}},
      {"a broken call, then a good one", "<|tool_call>call:search{a:}" + weather, "", "<|tool_call>call:search{a:}",
       {{"get_weather", paris}}},
      {"a broken call holding a thought: the thought is read after it",
       "<|tool_call>call:search{<|channel>thought\nR<channel|>", "R", "<|tool_call>call:search{", {}},
      {"too deep stays content", call("search", "{a:" + std::string(70, '[') + std::string(70, ']') + "}"), "",
       call("search", "{a:" + std::string(70, '[') + std::string(70, ']') + "}"), {}},
      {"a number past a double stays content", call("search", "{a:1e999}"), "", call("search", "{a:1e999}"), {}},
  };
}

std::vector<std::string> names_of(const Case& c) { return c.tools ? kNames : std::vector<std::string>(); }

std::vector<std::pair<std::string, json>> calls_of(const Gemma4Parts& p) { return calls_of_parts<json>(p); }

// The reply pushed in pieces cut at `cuts` (ascending offsets).
Gemma4Parts streamed(const Case& c, const std::vector<size_t>& cuts) {
  Gemma4Stream s(c.opens_thought, c.split, names_of(c));
  return streamed_cut<Gemma4Parts>(s, c.reply, cuts);
}

// Pieces of Gemma 4 replies, well-formed and not, for random replies.
const std::vector<std::string> kPieces = {
    "<|channel>", "<channel|>", "thought", "\n", " ", "<|tool_call>", "<tool_call|>", "call:", "get_weather", "search",
    "{", "}", "[", "]", ":", ",", kQ, "<|", "\"", "|>", "<", "a", "1", "-", ".", "e", "true", "null", "x y", "<|turn>",
    "model\n", "é"};

}  // namespace

TEST_CASE("gemma4: whole replies give reasoning, content and tool calls", "[server][gemma4]") {
  for (const Case& c : cases()) {
    INFO(c.name << ": " << c.reply);
    const Gemma4Parts p = split_gemma4(c.reply, c.opens_thought, c.split, names_of(c));
    CHECK(p.reasoning == c.reasoning);
    CHECK(p.content == c.content);
    CHECK(calls_of(p) == c.calls);
  }
}

TEST_CASE("gemma4: a reply streamed in any pieces gives what the whole gives", "[server][gemma4]") {
  std::mt19937 rng(11);
  for (const Case& c : cases()) {
    INFO(c.name << ": " << c.reply);
    const Gemma4Parts whole = split_gemma4(c.reply, c.opens_thought, c.split, names_of(c));
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

TEST_CASE("gemma4: random replies never break the parser and stream as they parse whole", "[server][gemma4]") {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 400; ++trial) {
    Case c{"random", "", "", "", {}};
    const size_t n = 1 + rng() % 24;
    for (size_t i = 0; i < n; ++i) c.reply += kPieces[rng() % kPieces.size()];
    c.split = rng() % 4 != 0;
    c.tools = rng() % 4 != 0;
    c.opens_thought = rng() % 5 == 0;
    INFO(c.reply << " split " << c.split << " tools " << c.tools << " opens " << c.opens_thought);
    const Gemma4Parts whole = split_gemma4(c.reply, c.opens_thought, c.split, names_of(c));
    CHECK(whole.reasoning.size() + whole.content.size() <= c.reply.size());  // adds nothing
    if (!c.split) CHECK(whole.reasoning.empty());
    if (!c.tools) CHECK(whole.calls.empty());
    for (const auto& call : whole.calls) CHECK(json::parse(call.arguments).is_object());
    std::vector<size_t> cuts;
    for (size_t at = 1 + rng() % 5; at < c.reply.size(); at += 1 + rng() % 5) cuts.push_back(at);
    check_same_parts(streamed(c, cuts), whole);
  }
}

TEST_CASE("gemma4: a stream shows reasoning and content as they come and holds calls", "[server][gemma4]") {
  Gemma4Stream s(false, true, kNames);
  Gemma4Parts p = s.push("<|chan");
  CHECK((p.reasoning.empty() && p.content.empty()));  // a possible marker waits
  p = s.push("nel>thought\nThinking");
  CHECK(p.reasoning == "Thinking");
  p = s.push(" more<chan");
  CHECK(p.reasoning == " more");
  p = s.push("nel|>The answer");
  CHECK(p.content == "The answer");
  p = s.push(" is <|tool_call>call:get_weather{location:" + kQ + "Par");
  CHECK(p.content == " is ");
  CHECK(p.calls.empty());
  p = s.push("is" + kQ + "}<tool_call");
  CHECK((p.content.empty() && p.calls.empty()));
  p = s.push("|>");
  REQUIRE(p.calls.size() == 1);  // whole: out at once
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.calls[0].arguments == R"({"location":"Paris"})");
  p = s.finish();
  CHECK((p.content.empty() && p.reasoning.empty() && p.calls.empty()));

  // A call that breaks is content as soon as it does.
  Gemma4Stream t(false, true, kNames);
  p = t.push("<|tool_call>call:nope");
  CHECK(p.content == "<|tool_call>call:nope");
}

TEST_CASE("gemma4: the template, the prompt's open thought and the marker tokens", "[server][gemma4]") {
  using tc::server::gemma4_marker_ids;
  using tc::server::is_gemma4_template;
  using tc::server::prompt_opens_gemma4_thought;
  CHECK(is_gemma4_template("{{- '<|tool_call>call:' + name -}}"));
  CHECK(is_gemma4_template("{{ '<|channel>thought\\n' }}"));
  CHECK_FALSE(is_gemma4_template("<|start|>assistant<|channel|>final<|message|>"));  // harmony
  CHECK_FALSE(is_gemma4_template("<tool_call>{{ tool_call | tojson }}</tool_call>"));  // Hermes
  CHECK(prompt_opens_gemma4_thought("<|turn>model\n<|channel>thought\n"));
  CHECK(prompt_opens_gemma4_thought("<|turn>model\n<|channel>thought"));
  CHECK_FALSE(prompt_opens_gemma4_thought("<|turn>model\n<|channel>thought\n<channel|>"));
  CHECK_FALSE(prompt_opens_gemma4_thought("<|turn>model\n"));
  CHECK_FALSE(prompt_opens_gemma4_thought("thought"));
  const std::vector<std::string> pieces = {"a",          "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>",
                                           "<|\"|>",     "<|turn>",    "<turn|>",    "<|tool>",      "thought"};
  CHECK(gemma4_marker_ids(pieces) == std::vector<int32_t>{1, 2, 3, 4, 5, 6});
}
