// The lazy constraint's Qwen3-Coder call form (engine/text/
// qwen3_coder_call_prefix.h) and the reply parser (server/
// qwen3_coder_split.h) agree: random calls built piece by piece from what
// the constraint allows (seeded) are, once whole, read by the parser as
// one call to the same function, nothing left as content, their arguments
// the JSON the constraint checked them as (they fit get_time's parameters,
// whose text parameters come from text_parameters_of as the server's).
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/json_schema.h"
#include "engine/text/qwen3_coder_call_prefix.h"
#include "server/qwen3_coder_split.h"

using nlohmann::ordered_json;

namespace {

const std::vector<std::string> kNames = {"add", "get", "get_time"};

const ordered_json& time_parameters() {
  static const ordered_json p = ordered_json::parse(
      R"({"type": "object", "properties": {"zone": {"enum": ["utc", "local"]},
          "n": {"type": "integer", "minimum": 0}, "note": {"type": "string", "maxLength": 6},
          "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["zone"],
          "additionalProperties": false})");
  return p;
}

std::shared_ptr<const tc::text::ToolCallGrammar> grammar() {
  static const auto g = std::make_shared<const tc::text::ToolCallGrammar>(
      kNames,
      std::vector<std::shared_ptr<const tc::text::JsonSchema>>{nullptr, nullptr,
                                                               tc::text::JsonSchema::compile(time_parameters())},
      std::vector<std::vector<std::string>>{{}, {}, tc::server::text_parameters_of(time_parameters())});
  return g;
}

// Pieces a model could write inside a call.
const std::vector<std::string> kPieces = {
    "\n",     "<function=", "add", "get", "_time", ">",    "<parameter=", "zone", "utc",   "local",
    "n",      "note",       "tags", "\n</parameter>\n", "</parameter>", "</function>", "\n</tool_call>",
    "</tool_call>", "1",    "0",   "-",   " ",     "x",    "a b",         "\"",   "{",     "}",
    "[",      "]",          ":",   ",",   "true",  "null", "é",           "<",    "\\",    "=", "/"};

}  // namespace

TEST_CASE("qwen3-coder: every call the lazy constraint lets through is a call the parser reads",
          "[server][qwen3_coder]") {
  REQUIRE(grammar()->text_parameters[2] == std::vector<std::string>{"note", "zone"});
  const tc::server::Qwen3CoderTools tools{kNames, grammar()->text_parameters};
  std::mt19937 rng(78);
  int whole = 0, with_parameters = 0, rich = 0;
  for (int walk = 0; walk < 2000; ++walk) {
    tc::text::Qwen3CoderCallPrefix prefix(grammar().get());
    std::string text;
    for (int step = 0; step < 120 && !prefix.complete(); ++step) {
      std::vector<const std::string*> fits;
      for (const auto& p : kPieces) {
        if (prefix.accepts(p)) fits.push_back(&p);
      }
      if (fits.empty()) break;  // (a tag begun that no piece here goes on with)
      // Closing pieces come more often, so that calls end, and so do parameters.
      const std::string* pick = fits[rng() % fits.size()];
      for (const auto* f : fits) {
        if ((*f == "\n</parameter>\n" || *f == "</function>" || *f == "\n</tool_call>" || *f == "]") &&
            rng() % 3 == 0) {
          pick = f;
        }
        if (*f == "<parameter=" && rng() % 2 == 0) pick = f;
      }
      REQUIRE(prefix.push(*pick));
      text += *pick;
    }
    if (!prefix.complete()) continue;
    ++whole;
    const std::string reply = "<tool_call>" + text;
    INFO(reply);
    const auto parts = tc::server::split_qwen3_coder(reply, false, true, tools);
    CHECK(parts.content.empty());
    CHECK(parts.reasoning.empty());
    REQUIRE(parts.calls.size() == 1);
    const std::string& name = parts.calls[0].name;
    CHECK(text.find("<function=" + name + ">") != std::string::npos);
    const ordered_json args = ordered_json::parse(parts.calls[0].arguments);
    REQUIRE(args.is_object());
    if (!args.empty()) ++with_parameters;
    if (name == "get_time" && args.size() > 1) ++rich;
    if (name == "get_time") {
      CHECK((args["zone"] == "utc" || args["zone"] == "local"));
      if (args.contains("n")) CHECK((args["n"].is_number_integer() && args["n"].get<int64_t>() >= 0));
      if (args.contains("note")) {
        REQUIRE(args["note"].is_string());
        const std::string note = args["note"].get<std::string>();
        CHECK(std::count_if(note.begin(), note.end(), [](char c) { return (c & 0xC0) != 0x80; }) <= 6);
      }
      if (args.contains("tags")) {
        REQUIRE(args["tags"].is_array());
        for (const auto& t : args["tags"]) CHECK(t.is_string());
      }
      CHECK(args.size() <= 4);
    }
  }
  CHECK(whole >= 400);
  CHECK(with_parameters >= 200);
  CHECK(rich >= 15);  // get_time with more than its zone
}
