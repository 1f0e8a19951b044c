// The prompt side of harmony (gpt-oss): an assistant message's
// reasoning_content reaches a harmony template as the `thinking` it reads,
// as llama.cpp passes it, with the content a message with tool calls may
// not carry beside it dropped and a null content left out. The template
// here reads messages the way gpt-oss's does (its checks included); it is
// not gpt-oss's own.
#include <catch2/catch.hpp>

#include <string>

#include "engine/text/chat_template.h"
#include "server/chat_prompt_variables.h"
#include "server/openai_schema.h"
#include "server/ollama_responses.h"

using nlohmann::json;
using namespace tc::server;

namespace {

constexpr char kHarmonyLikeTemplate[] =
    "{%- for message in messages -%}"
    "{%- if message.role == 'assistant' -%}"
    "{%- if 'content' in message and '<|channel|>analysis<|message|>' in message.content -%}"
    "{{ raise_exception('tags in content') }}{%- endif -%}"
    "{%- if 'tool_calls' in message -%}"
    "{%- if message.content and message.thinking -%}{{ raise_exception('both content and thinking') }}{%- endif -%}"
    "{%- if message.thinking -%}<|start|>assistant<|channel|>analysis<|message|>{{ message.thinking }}<|end|>"
    "{%- elif message.content -%}<|start|>assistant<|channel|>analysis<|message|>{{ message.content }}<|end|>"
    "{%- endif -%}"
    "<|start|>assistant to=functions.{{ message.tool_calls[0].function.name }}<|channel|>commentary json<|message|>"
    "{{ message.tool_calls[0].function.arguments | tojson }}<|call|>"
    "{%- else -%}"
    "{%- if message.thinking -%}<|start|>assistant<|channel|>analysis<|message|>{{ message.thinking }}<|end|>"
    "{%- endif -%}"
    "<|start|>assistant<|channel|>final<|message|>{{ message.content }}<|end|>"
    "{%- endif -%}"
    "{%- else -%}<|start|>{{ message.role }}<|message|>{{ message.content }}<|end|>{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}";

json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "d"},
            {"parameters", {{"type", "object"}, {"properties", {{"location", {{"type", "string"}}}}}}}}}};
}

}  // namespace

TEST_CASE("harmony: history reasoning_content reaches the template as thinking", "[server][harmony]") {
  const tc::text::ChatTemplate tmpl(kHarmonyLikeTemplate);
  const auto support = TemplateToolSupport::of(tmpl.source());
  CHECK(support.harmony);
  CHECK_FALSE(TemplateToolSupport::of("{{ messages[0].content }}").harmony);

  const json call = {{"id", "call_1"},
                     {"type", "function"},
                     {"function", {{"name", "get_weather"}, {"arguments", "{\"location\":\"Paris\"}"}}}};
  const json messages = {
      {{"role", "user"}, {"content", "Weather in Paris?"}},
      {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "Need the weather."}, {"tool_calls", {call}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "{\"t\": 21}"}},
      {{"role", "assistant"}, {"content", "It is 21 C."}, {"reasoning_content", "Report it."}},
      // Content beside reasoning in a message with calls: the template
      // refuses both, so the content goes (as llama.cpp does).
      {{"role", "assistant"}, {"content", "Checking."}, {"reasoning_content", "Again."}, {"tool_calls", {call}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "{\"t\": 22}"}},
      {{"role", "user"}, {"content", "Thanks."}},
  };
  RequestLimits limits;
  auto p = parse_chat_request({{"messages", messages}, {"tools", {weather_tool()}}}, limits);
  REQUIRE_FALSE(p.error);

  const std::string text = tmpl.render(chat_prompt_variables(*p.request, "", "", support));
  CAPTURE(text);
  CHECK(text.find("<|start|>assistant<|channel|>analysis<|message|>Need the weather.<|end|>"
                  "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
                  "{\"location\": \"Paris\"}<|call|>") != std::string::npos);
  CHECK(text.find("<|channel|>analysis<|message|>Report it.<|end|><|start|>assistant<|channel|>final<|message|>"
                  "It is 21 C.<|end|>") != std::string::npos);
  CHECK(text.find("<|channel|>analysis<|message|>Again.<|end|>") != std::string::npos);
  CHECK(text.find("Checking.") == std::string::npos);
  CHECK(text.ends_with("<|start|>user<|message|>Thanks.<|end|><|start|>assistant"));

  // Without the harmony rewrite the template fails on the null content.
  TemplateToolSupport plain = support;
  plain.harmony = false;
  CHECK_THROWS_AS(tmpl.render(chat_prompt_variables(*p.request, "", "", plain)), tc::text::ChatTemplateError);

  // A `thinking` the client sent is kept.
  const json own = {{{"role", "user"}, {"content", "q"}},
                    {{"role", "assistant"}, {"content", "a"}, {"thinking", "mine"}, {"reasoning_content", "other"}},
                    {{"role", "user"}, {"content", "q2"}}};
  auto q = parse_chat_request({{"messages", own}}, limits);
  REQUIRE_FALSE(q.error);
  const std::string kept = tmpl.render(chat_prompt_variables(*q.request, "", "", support));
  CHECK(kept.find("<|message|>mine<|end|>") != std::string::npos);
  CHECK(kept.find("other") == std::string::npos);
}

TEST_CASE("harmony: a harmony template makes the model a thinking one for Ollama", "[server][harmony]") {
  CHECK(ollama_capabilities("gpt-oss", json::object(), kHarmonyLikeTemplate) ==
        json::array({"completion", "tools", "thinking"}));
}
