// The lazy constraint's Gemma 4 call form (engine/text/gemma4_call_prefix.h)
// and the reply parser (server/gemma4_split.h) agree: random calls built
// piece by piece from what the constraint allows (seeded) are, once whole,
// read by the parser as one call to the same function, nothing left as
// content, their arguments the JSON the constraint checked them as (they
// fit get_time's parameters).
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/gemma4_call_prefix.h"
#include "engine/text/json_schema.h"
#include "server/gemma4_split.h"

using nlohmann::json;

namespace {

const std::vector<std::string> kNames = {"add", "get", "get_time"};

std::shared_ptr<const tc::text::ToolCallGrammar> grammar() {
  static const auto g = std::make_shared<const tc::text::ToolCallGrammar>(
      kNames, std::vector<std::shared_ptr<const tc::text::JsonSchema>>{
                  nullptr, nullptr,
                  tc::text::JsonSchema::compile(json::parse(
                      R"({"type": "object", "properties": {"zone": {"enum": ["utc", "local"]},
                          "n": {"type": "integer", "minimum": 0}}, "required": ["zone"],
                          "additionalProperties": false})"))});
  return g;
}

// Pieces a model could write inside a call.
const std::vector<std::string> kPieces = {
    "call:", "add", "get", "_time", "{", "}", "[", "]", ",", ":", "<|\"|>", "<|", "\"", "|>", "<", "zone", "utc",
    "local", "n", "a", "b c", "1", "0", "-", ".", "5", "e", "+", "true", "false", "null", " ", "\n", "\\", "é",
    "<tool_call|>", "<|channel>", "<channel|>", "x"};

}  // namespace

TEST_CASE("gemma4: every call the lazy constraint lets through is a call the parser reads", "[server][gemma4]") {
  std::mt19937 rng(77);
  int whole = 0;
  for (int walk = 0; walk < 500; ++walk) {
    tc::text::Gemma4CallPrefix prefix(grammar().get());
    std::string text;
    for (int step = 0; step < 120 && !prefix.complete(); ++step) {
      std::vector<const std::string*> fits;
      for (const auto& p : kPieces) {
        if (prefix.accepts(p)) fits.push_back(&p);
      }
      if (fits.empty()) break;  // (a marker begun that no piece here goes on with)
      // Closing pieces come more often, so that calls end.
      const std::string* pick = fits[rng() % fits.size()];
      for (const auto* f : fits) {
        if ((*f == "}" || *f == "]" || *f == "<tool_call|>" || *f == "<|\"|>") && rng() % 3 == 0) pick = f;
      }
      REQUIRE(prefix.push(*pick));
      text += *pick;
    }
    if (!prefix.complete()) continue;
    ++whole;
    const std::string reply = "<|tool_call>" + text;
    INFO(reply);
    const auto parts = tc::server::split_gemma4(reply, false, true, kNames);
    CHECK(parts.content.empty());
    CHECK(parts.reasoning.empty());
    REQUIRE(parts.calls.size() == 1);
    const std::string& name = parts.calls[0].name;
    CHECK(text.starts_with("call:" + name + "{"));
    const json args = json::parse(parts.calls[0].arguments);
    REQUIRE(args.is_object());
    if (name == "get_time") {
      CHECK((args["zone"] == "utc" || args["zone"] == "local"));
      if (args.contains("n")) CHECK((args["n"].is_number_integer() && args["n"].get<int64_t>() >= 0));
      CHECK(args.size() <= 2);
    }
  }
  CHECK(whole >= 100);
}
