// The prompt side of Qwen3-Coder's format: the template is recognised from
// its source as llama.cpp recognises it (<tool_call>, <function= and
// <parameter=), its lazy call form is the XML one after "<tool_call>", a
// tool's text parameters are those whose schema resolves to a string (as
// llama.cpp's resolves_to_string), and a history with calls and results
// reaches the template as llama.cpp passes it: each call's arguments a
// mapping (sent as a JSON string or an object), tool messages as sent
// (tests/server/qwen3_coder_test_template.h, not Qwen's own).
#include <catch2/catch.hpp>

#include <string>

#include "engine/text/chat_template.h"
#include "server/chat_prompt_variables.h"
#include "server/ollama_responses.h"
#include "server/openai_schema.h"
#include "server/prompt_builder.h"
#include "server/qwen3_coder_split.h"
#include "server/response_schema.h"
#include "tests/server/gemma4_test_template.h"
#include "tests/server/qwen3_coder_test_template.h"

using nlohmann::json;
using nlohmann::ordered_json;
using namespace tc::server;

namespace {

json weather_tool() {
  return json::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "d",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["location"]}}})");
}

ChatRequest request_of(const json& messages) {
  RequestLimits limits;
  auto p = parse_chat_request({{"messages", messages}, {"tools", {weather_tool()}}}, limits);
  REQUIRE_FALSE(p.error);
  return *p.request;
}

}  // namespace

TEST_CASE("qwen3-coder: the template is recognised and its calls are lazy after <tool_call>",
          "[server][qwen3_coder]") {
  CHECK(is_qwen3_coder_template(tc::test::kQwen3CoderTestTemplate));
  CHECK(is_qwen3_coder_template("<tool_call>\n<function=x>\n<parameter=y>"));
  CHECK_FALSE(is_qwen3_coder_template("<tool_call>\n<function=x>\n"));  // all three
  CHECK_FALSE(is_qwen3_coder_template("<tool_call>{{ tool_call | tojson }}</tool_call>"));  // Hermes
  CHECK_FALSE(is_qwen3_coder_template(tc::test::kGemma4TestTemplate));

  const LazyToolCall lazy = lazy_tool_call(tc::test::kQwen3CoderTestTemplate);
  CHECK(lazy.qwen3_coder);
  CHECK(lazy.trigger == "<tool_call>");
  CHECK_FALSE(lazy.at_start);
  CHECK_FALSE(lazy.gemma4);
  CHECK_FALSE(lazy_tool_call("<tool_call>{{ x }}</tool_call> tools").qwen3_coder);

  const auto support = TemplateToolSupport::of(tc::test::kQwen3CoderTestTemplate);
  CHECK(support.tools);
  CHECK(support.tool_calls);
  CHECK_FALSE(support.gemma4);
  CHECK(ollama_capabilities("qwen35", json::object(), tc::test::kQwen3CoderTestTemplate) ==
        json::array({"completion", "tools", "thinking"}));
}

TEST_CASE("qwen3-coder: text parameters are those whose schema resolves to a string", "[server][qwen3_coder]") {
  const auto parameters = ordered_json::parse(R"({"type": "object", "properties": {
    "s": {"type": "string"}, "sn": {"type": ["string", "null"]}, "any": {"anyOf": [{"type": "integer"},
    {"type": "string"}]}, "one": {"oneOf": [{"$ref": "#/$defs/word"}]}, "ref": {"$ref": "#/$defs/word"},
    "loop": {"$ref": "#/$defs/loop"}, "missing": {"$ref": "#/$defs/none"}, "e": {"enum": [1, "a"]},
    "en": {"enum": [1, 2]}, "c": {"const": "x"}, "p": {"pattern": "^a"}, "ml": {"maxLength": 3},
    "d": {"format": "date"}, "u": {"format": "uuid4"}, "all": {"allOf": [{"type": "string"}, {"minLength": 1}]},
    "mixed": {"allOf": [{"type": "string"}, {"type": "integer"}]}, "i": {"type": "integer"},
    "o": {"type": "object"}, "a": {"type": "array"}, "b": {"type": "boolean"}, "none": {}},
    "$defs": {"word": {"type": "string"}, "loop": {"$ref": "#/$defs/loop"}}})");
  CHECK(text_parameters_of(parameters) ==
        std::vector<std::string>{"all", "any", "c", "d", "e", "ml", "one", "p", "ref", "s", "sn", "u"});
  CHECK(text_parameters_of(ordered_json::parse(R"({"type": "object"})")).empty());
  CHECK(text_parameters_of(ordered_json::parse("[1]")).empty());

  // A request's calls grammar carries them, function by function.
  ToolRequest tools;
  const std::string body = R"({"tools": [{"type": "function", "function": {"name": "b", "parameters":
    {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "a"}}]})";
  REQUIRE_FALSE(read_tool_request(json::parse(body), tools));
  const auto grammar = tool_call_grammar(body, tools);
  REQUIRE(grammar->names == std::vector<std::string>{"a", "b"});
  CHECK(grammar->text_parameters == std::vector<std::vector<std::string>>{{}, {"q"}});
  CHECK(grammar->problem().empty());
}

TEST_CASE("qwen3-coder: calls and their results reach the template with the arguments as a mapping",
          "[server][qwen3_coder]") {
  const tc::text::ChatTemplate tmpl(tc::test::kQwen3CoderTestTemplate);
  const auto support = TemplateToolSupport::of(tmpl.source());
  const json messages = json::parse(R"([
    {"role": "user", "content": "Weather in Paris and Oslo?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "get_weather",
       "arguments": "{\"location\": \"Paris\", \"days\": 2, \"detail\": true, \"opts\": {\"a\": [1, \"x\"]}}"}},
      {"id": "call_2", "type": "function", "function": {"name": "get_weather",
       "arguments": {"location": "Oslo", "tags": ["x", "y"]}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    {"role": "tool", "tool_call_id": "call_2", "content": "cold"},
    {"role": "assistant", "content": "Paris 21, Oslo cold."},
    {"role": "user", "content": "Thanks."}
  ])");
  const json vars = chat_prompt_variables(request_of(messages), "", "", support);
  const json& sent = vars["messages"];
  REQUIRE(sent.size() == messages.size());  // as sent
  CHECK(sent[1]["tool_calls"][0]["function"]["arguments"].is_object());
  CHECK(sent[2]["role"] == "tool");

  const std::string text = tmpl.render(vars);
  CAPTURE(text);
  // (The request's objects reach the template with their keys sorted.)
  CHECK(text ==
        "<|im_start|>system\n# Tools\n\n<tools>\n<function>\n<name>get_weather</name>\n"
        "<parameter>days</parameter>\n<parameter>location</parameter>\n</function>\n</tools>\n\n"
        "To call a function reply with:\n<tool_call>\n<function=example_function_name>\n"
        "<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
        "<|im_start|>user\nWeather in Paris and Oslo?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n<function=get_weather>\n"
        "<parameter=days>\n2\n</parameter>\n<parameter=detail>\nTrue\n</parameter>\n"
        "<parameter=location>\nParis\n</parameter>\n<parameter=opts>\n{\"a\": [1, \"x\"]}\n</parameter>\n"
        "</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n"
        "<parameter=location>\nOslo\n</parameter>\n<parameter=tags>\n[\"x\", \"y\"]\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n21 C\n</tool_response>\n<tool_response>\ncold\n</tool_response>"
        "<|im_end|>\n"
        "<|im_start|>assistant\nParis 21, Oslo cold.<|im_end|>\n"
        "<|im_start|>user\nThanks.<|im_end|>\n<|im_start|>assistant\n<think>\n");
}
