// The prompt side of Gemma 4: its template is recognised from its source;
// for one that reads results from `tool_responses` (tests/server/
// gemma4_test_template.h, not Google's own), an assistant message's calls,
// the tool messages after it and the answer after those reach it as one
// assistant message, as llama.cpp's convert_tool_responses_gemma4 passes
// them; a template that reads `tool` messages itself gets them as sent.
// With tools, the lazy call form is Gemma 4's, after "<|tool_call>".
#include <catch2/catch.hpp>

#include <string>

#include "engine/text/chat_template.h"
#include "server/chat_prompt_variables.h"
#include "server/ollama_responses.h"
#include "server/openai_schema.h"
#include "server/prompt_builder.h"
#include "tests/server/gemma4_test_template.h"

using nlohmann::json;
using namespace tc::server;

namespace {

json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "d"},
            {"parameters", {{"type", "object"}, {"properties", {{"location", {{"type", "string"}}}}}}}}}};
}

json call(const std::string& id, const std::string& args) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", args}}}};
}

ChatRequest request_of(const json& messages) {
  RequestLimits limits;
  auto p = parse_chat_request({{"messages", messages}, {"tools", {weather_tool()}}}, limits);
  REQUIRE_FALSE(p.error);
  return *p.request;
}

}  // namespace

TEST_CASE("gemma4: the template is recognised and asks for results in tool_responses", "[server][gemma4]") {
  const auto support = TemplateToolSupport::of(tc::test::kGemma4TestTemplate);
  CHECK(support.gemma4);
  CHECK(support.gemma4_tool_responses);
  CHECK(support.tools);
  CHECK(support.tool_calls);
  CHECK_FALSE(support.harmony);
  // A template with llama.cpp's mark of the newer ones reads `tool` messages itself.
  const std::string newer =
      std::string("{#- OpenAI Chat Completions: tool messages -#}") + tc::test::kGemma4TestTemplate;
  CHECK(TemplateToolSupport::of(newer).gemma4);
  CHECK_FALSE(TemplateToolSupport::of(newer).gemma4_tool_responses);
  CHECK_FALSE(TemplateToolSupport::of("{{ '<|start|>assistant<|channel|>final<|message|>' }}").gemma4);

  const LazyToolCall lazy = lazy_tool_call(tc::test::kGemma4TestTemplate);
  CHECK(lazy.gemma4);
  CHECK(lazy.trigger == "<|tool_call>");
  CHECK_FALSE(lazy.at_start);
  CHECK_FALSE(lazy_tool_call("<tool_call>{{ x }}</tool_call> tools").gemma4);

  CHECK(ollama_capabilities("gemma4", json::object(), tc::test::kGemma4TestTemplate) ==
        json::array({"completion", "tools", "thinking"}));
}

TEST_CASE("gemma4: calls, their results and the answer reach the template as one model turn", "[server][gemma4]") {
  const tc::text::ChatTemplate tmpl(tc::test::kGemma4TestTemplate);
  const auto support = TemplateToolSupport::of(tmpl.source());
  const json messages = {
      {{"role", "user"}, {"content", "Weather in Paris and Oslo?"}},
      {{"role", "assistant"},
       {"content", "Checking."},  // dropped, as llama.cpp drops it
       {"reasoning_content", "Need both."},
       {"tool_calls", {call("call_1", R"({"location":"Paris"})"), call("call_2", R"({"location":"Oslo"})")}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", R"({"t": 21})"}},
      {{"role", "tool"}, {"tool_call_id", "call_2"}, {"content", "cold"}},
      {{"role", "assistant"}, {"content", "Paris 21, Oslo cold."}},
      {{"role", "user"}, {"content", "Thanks."}},
  };
  const json vars = chat_prompt_variables(request_of(messages), "<bos>", "<eos>", support);
  const json& sent = vars["messages"];
  REQUIRE(sent.size() == 3);
  CHECK(sent[1]["role"] == "assistant");
  CHECK(sent[1]["content"] == "Paris 21, Oslo cold.");
  CHECK(sent[1]["reasoning_content"] == "Need both.");
  CHECK(sent[1]["tool_calls"].size() == 2);
  CHECK(sent[1]["tool_responses"] == json::parse(R"([{"name": "get_weather", "response": {"t": 21}},
                                                      {"name": "get_weather", "response": "cold"}])"));

  const std::string text = tmpl.render(vars);
  CAPTURE(text);
  CHECK(text ==
        "<bos><|turn>system\n<|tool>declaration:get_weather<tool|><turn|>\n"
        "<|turn>user\nWeather in Paris and Oslo?<turn|>\n"
        "<|turn>model\n<|tool_call>call:get_weather{location:<|\"|>Paris<|\"|>}<tool_call|>"
        "<|tool_call>call:get_weather{location:<|\"|>Oslo<|\"|>}<tool_call|>"
        "<|tool_response>response:get_weather{value:{t:21}}<tool_response|>"
        "<|tool_response>response:get_weather{value:<|\"|>cold<|\"|>}<tool_response|>"
        "Paris 21, Oslo cold.<turn|>\n"
        "<|turn>user\nThanks.<turn|>\n<|turn>model\n<|channel>thought\n");

  // Results the model has not answered yet: its turn stays open for it.
  const json pending = {messages[0], messages[1], messages[2], messages[3]};
  const std::string open = tmpl.render(chat_prompt_variables(request_of(pending), "", "", support));
  CHECK(open.ends_with("<|tool_response>response:get_weather{value:<|\"|>cold<|\"|>}<tool_response|>"));

  // A template that reads `tool` messages itself gets them as sent.
  TemplateToolSupport newer = support;
  newer.gemma4_tool_responses = false;
  const json as_sent = chat_prompt_variables(request_of(messages), "", "", newer)["messages"];
  REQUIRE(as_sent.size() == messages.size());
  CHECK(as_sent[2]["role"] == "tool");
  CHECK(as_sent[1]["content"] == "Checking.");
}

TEST_CASE("gemma4: a result's name falls back to its call id, a call without results keeps none",
          "[server][gemma4]") {
  const auto support = TemplateToolSupport::of(tc::test::kGemma4TestTemplate);
  const json messages = {
      {{"role", "user"}, {"content", "q"}},
      {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call("call_1", "{}")}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "one"}},
      {{"role", "tool"}, {"tool_call_id", "call_9"}, {"content", "[1, 2]"}},  // more results than calls
      {{"role", "user"}, {"content", "and?"}},
      {{"role", "assistant"}, {"tool_calls", {call("call_3", "{}")}}},
  };
  const json sent = chat_prompt_variables(request_of(messages), "", "", support)["messages"];
  REQUIRE(sent.size() == 4);
  CHECK(sent[1]["tool_responses"] == json::parse(R"([{"name": "get_weather", "response": "one"},
                                                      {"name": "call_9", "response": [1, 2]}])"));
  CHECK_FALSE(sent[1].contains("content"));
  CHECK(sent[2]["content"] == "and?");
  CHECK_FALSE(sent[3].contains("tool_responses"));
  CHECK(sent[3]["tool_calls"].size() == 1);
}
