// The harmony reply parser (gpt-oss): whole replies of each message kind
// and header form, what is not harmony kept as content, reasoning_format
// none, the prompt's part of the first message; and every reply streamed
// byte by byte, cut once at every byte and cut at random, which must give
// what the whole reply gives.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "server/harmony_split.h"

using tc::server::harmony_prompt_tail;
using tc::server::HarmonyParts;
using tc::server::HarmonyStream;
using tc::server::split_harmony;

namespace {

constexpr const char* kAssistant = "<|start|>assistant";
const std::vector<std::string> kNames = {"get_time", "get_weather"};

struct Case {
  const char* name;
  std::string reply;
  std::string reasoning;
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  std::string tail = kAssistant;
  bool split = true;
  bool tools = true;
};

const std::string kCall = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>";

std::vector<Case> cases() {
  return {
      {"final only", "<|channel|>final<|message|>Hello!", "", "Hello!", {}},
      {"analysis then final",
       "<|channel|>analysis<|message|>The user greets me.<|end|><|start|>assistant<|channel|>final<|message|>Hi there.",
       "The user greets me.", "Hi there.", {}},
      {"tool call, recipient in the channel header", kCall + "{\"location\":\"Paris\"}", "", "",
       {{"get_weather", "{\"location\":\"Paris\"}"}}},
      {"tool call, recipient in the role header",
       " to=functions.get_weather<|channel|>commentary json<|message|>{\"location\": \"Paris\"}", "", "",
       {{"get_weather", "{\"location\":\"Paris\"}"}}},
      {"analysis then a call in the role header",
       "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant to=functions.get_weather"
       "<|channel|>commentary json<|message|>{\"location\":\"Paris\"}",
       "Need the weather.", "", {{"get_weather", "{\"location\":\"Paris\"}"}}},
      {"analysis then a call in the channel header",
       "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant" + kCall + " {\"location\":\"Oslo\"} ",
       "Need the weather.", "", {{"get_weather", "{\"location\":\"Oslo\"}"}}},
      {"a call on the analysis channel", "<|channel|>analysis to=functions.get_time <|constrain|>json<|message|>{}", "",
       "", {{"get_time", "{}"}}},
      {"a preamble, then a call ended by a rendered <|call|>",
       "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant" + kCall + "{}<|call|>", "",
       "Let me check.", {{"get_weather", "{}"}}},
      {"two calls",
       kCall + "{\"location\":\"Paris\"}<|call|><|start|>assistant to=functions.get_time<|channel|>commentary "
               "json<|message|>{\"tz\":\"CET\"}",
       "", "", {{"get_weather", "{\"location\":\"Paris\"}"}, {"get_time", "{\"tz\":\"CET\"}"}}},
      {"gpt-oss's stray commentary before its analysis",
       "<|channel|>commentary to=assistant<|channel|>analysis<|message|>R<|end|><|start|>assistant"
       "<|channel|>final<|message|>A",
       "R", "A", {}},
      {"a call to an undeclared function is dropped",
       "<|channel|>commentary to=functions.nope <|constrain|>json<|message|>{\"a\":1}", "", "", {}},
      {"a built-in tool's call is dropped",
       "<|channel|>analysis<|message|>search<|end|><|start|>assistant<|channel|>analysis to=browser.search "
       "code<|message|>{\"query\":\"x\"}<|end|><|start|>assistant<|channel|>final<|message|>Found it.",
       "search", "Found it.", {}},
      {"calls without tools are dropped", kCall + "{\"location\":\"Paris\"}", "", "", {}, kAssistant, true, false},
      {"arguments cut off stay content", kCall + "{\"location\":\"Par", "", kCall + "{\"location\":\"Par", {}},
      {"arguments that are no object stay content", kCall + "[1, 2]<|call|>", "", kCall + "[1, 2]<|call|>", {}},
      {"analysis cut off is all reasoning", "<|channel|>analysis<|message|>still thinking", "still thinking", "", {}},
      {"no harmony at all", "Hello, world! 2 < 3.", "", "Hello, world! 2 < 3.", {}},
      {"a header cut by <|end|>", "<|channel|>final<|end|>oops", "", "<|channel|>final<|end|>oops", {}},
      {"a header that never ends", "<|channel|>fin", "", "<|channel|>fin", {}},
      {"a header with a newline", "<|channel|>final\nHello<|message|>x", "", "<|channel|>final\nHello<|message|>x",
       {}},
      {"a header too long", "<|channel|>" + std::string(300, 'a') + "<|message|>x", "",
       "<|channel|>" + std::string(300, 'a') + "<|message|>x", {}},
      {"text between messages", "<|channel|>final<|message|>A<|end|>junk<|start|>assistant<|channel|>final<|message|>B",
       "", "AjunkB", {}},
      {"markers that are not harmony's in a body", "<|channel|>final<|message|>a <|x|> b <| c <|en", "",
       "a <|x|> b <| c <|en", {}},
      {"a body ended by <|start|> alone",
       "<|channel|>analysis<|message|>R<|start|>assistant<|channel|>final<|message|>A", "R", "A", {}},
      {"UTF-8 in bodies",
       "<|channel|>analysis<|message|>caf\xC3\xA9 \xF0\x9F\x99\x82<|end|><|start|>assistant<|channel|>final"
       "<|message|>\xE6\x97\xA5\xE6\x9C\xAC",
       "caf\xC3\xA9 \xF0\x9F\x99\x82", "\xE6\x97\xA5\xE6\x9C\xAC", {}},
      {"empty", "", "", "", {}},
      // reasoning_format none: analysis stays in the content as written.
      {"none: analysis then final",
       "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Answer.", "",
       "<|channel|>analysis<|message|>Think.<|end|>Answer.", {}, kAssistant, false},
      {"none: a call is still a call",
       "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant" + kCall + "{}", "",
       "<|channel|>analysis<|message|>Need it.<|end|>", {{"get_weather", "{}"}}, kAssistant, false},
      // Where the prompt left the reply.
      {"the prompt opened the analysis", "R<|end|><|start|>assistant<|channel|>final<|message|>A", "R", "A", {},
       "<|start|>assistant<|channel|>analysis<|message|>"},
      {"none: the prompt opened the analysis", "R<|end|><|start|>assistant<|channel|>final<|message|>A", "",
       "R<|end|>A", {}, "<|start|>assistant<|channel|>analysis<|message|>", false},
      {"the prompt opened the final message", "just text", "", "just text", {},
       "<|start|>assistant<|channel|>final<|message|>"},
      {"the prompt opened a call", "{\"location\":\"Rome\"}", "", "", {{"get_weather", "{\"location\":\"Rome\"}"}},
       "<|start|>assistant" + kCall},
      {"the prompt has no <|start|>", "<|start|>assistant<|channel|>final<|message|>x", "", "x", {}, ""},
      {"the prompt has no <|start|>, plain text", "plain <|channel|>", "", "plain <|channel|>", {}, ""},
      {"the prompt ended a message", "<|start|>assistant<|channel|>final<|message|>x", "", "x", {},
       "<|start|>user<|message|>hi<|end|>"},
  };
}

HarmonyStream stream_for(const Case& c) {
  return HarmonyStream(c.tail, c.split, c.tools ? kNames : std::vector<std::string>());
}

void add(HarmonyParts& to, HarmonyParts from) {
  to.reasoning += from.reasoning;
  to.content += from.content;
  to.calls.insert(to.calls.end(), from.calls.begin(), from.calls.end());
}

std::vector<std::pair<std::string, std::string>> calls_of(const HarmonyParts& p) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : p.calls) {
    CHECK(c.id.empty());
    out.emplace_back(c.name, c.arguments);
  }
  return out;
}

// The reply pushed in pieces cut at `cuts` (ascending offsets).
HarmonyParts streamed(const Case& c, const std::vector<size_t>& cuts) {
  HarmonyStream s = stream_for(c);
  HarmonyParts out;
  size_t at = 0;
  for (const size_t cut : cuts) {
    add(out, s.push(std::string_view(c.reply).substr(at, cut - at)));
    at = cut;
  }
  add(out, s.push(std::string_view(c.reply).substr(at)));
  add(out, s.finish());
  return out;
}

void check_same(const HarmonyParts& got, const HarmonyParts& want) {
  CHECK(got.reasoning == want.reasoning);
  CHECK(got.content == want.content);
  CHECK(calls_of(got) == calls_of(want));
}

}  // namespace

TEST_CASE("harmony: whole replies give reasoning and content and tool calls", "[server][harmony]") {
  for (const Case& c : cases()) {
    INFO(c.name << ": " << c.reply);
    const HarmonyParts p = split_harmony(c.reply, c.tail, c.split, c.tools ? kNames : std::vector<std::string>());
    CHECK(p.reasoning == c.reasoning);
    CHECK(p.content == c.content);
    CHECK(calls_of(p) == c.calls);
  }
}

TEST_CASE("harmony: a reply streamed in any pieces gives what the whole gives", "[server][harmony]") {
  std::mt19937 rng(7);
  for (const Case& c : cases()) {
    INFO(c.name << ": " << c.reply);
    const HarmonyParts whole = split_harmony(c.reply, c.tail, c.split, c.tools ? kNames : std::vector<std::string>());
    std::vector<size_t> every;
    for (size_t i = 1; i < c.reply.size(); ++i) every.push_back(i);
    check_same(streamed(c, every), whole);  // byte by byte
    for (size_t i = 1; i < c.reply.size(); ++i) {
      INFO("cut at " << i);
      check_same(streamed(c, {i}), whole);
    }
    for (int trial = 0; trial < 50 && !c.reply.empty(); ++trial) {
      std::vector<size_t> cuts;
      for (size_t at = 1 + rng() % 7; at < c.reply.size(); at += 1 + rng() % 7) cuts.push_back(at);
      check_same(streamed(c, cuts), whole);
    }
  }
}

TEST_CASE("harmony: a stream shows reasoning and content as they come and holds calls", "[server][harmony]") {
  HarmonyStream s(kAssistant, true, kNames);
  CHECK(s.push("<|channel|>analysis").reasoning.empty());
  HarmonyParts p = s.push("<|message|>Thinking about it");
  CHECK(p.reasoning == "Thinking about it");
  p = s.push(" still<|");  // a possible marker waits
  CHECK(p.reasoning == " still");
  p = s.push("end|><|start|>assistant<|channel|>final<|message|>The answer");
  CHECK(p.reasoning.empty());
  CHECK(p.content == "The answer");
  p = s.push(" is 4.");
  CHECK(p.content == " is 4.");
  p = s.finish();
  CHECK(p.content.empty());
  CHECK(p.calls.empty());

  HarmonyStream t(kAssistant, true, kNames);
  p = t.push(kCall + "{\"location\":");
  CHECK(p.content.empty());
  CHECK(p.calls.empty());
  p = t.push("\"Paris\"}");
  CHECK(p.calls.empty());  // the arguments may go on
  p = t.finish();
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.calls[0].arguments == "{\"location\":\"Paris\"}");
}

TEST_CASE("harmony: the prompt's tail is from its last <|start|>", "[server][harmony]") {
  CHECK(harmony_prompt_tail("<|start|>system<|message|>s<|end|><|start|>user<|message|>hi<|end|><|start|>assistant") ==
        "<|start|>assistant");
  CHECK(harmony_prompt_tail("<|start|>assistant<|channel|>final<|message|>") ==
        "<|start|>assistant<|channel|>final<|message|>");
  CHECK(harmony_prompt_tail("no harmony here").empty());
}
