// Anthropic's Messages API without HTTP: request bodies translated into the
// chat bodies they mean (system blocks, tool_use and tool_result blocks,
// earlier thinking left out, tools and tool_choice, stop_sequences) and
// 400s naming the field; the builder's events in order, its stop reasons,
// usage with cache reads apart, tool_use input as an object, and errors in
// Anthropic's shape.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "server/anthropic_schema.h"
#include "server/anthropic_stream.h"

using nlohmann::json;
using nlohmann::ordered_json;
using tc::server::translate_anthropic_request;

namespace {

std::string error_param(const char* body) {
  const auto r = translate_anthropic_request(ordered_json::parse(body));
  return r.error ? r.error->param : "(no error)";
}

std::vector<std::string> event_types(const std::string& sse) {
  std::vector<std::string> out;
  for (size_t pos = 0; (pos = sse.find("event: ", pos)) != std::string::npos;) {
    const size_t eol = sse.find('\n', pos);
    out.push_back(sse.substr(pos + 7, eol - pos - 7));
    pos = eol;
  }
  return out;
}

}  // namespace

TEST_CASE("Messages API bodies become the chat bodies they mean", "[server][anthropic]") {
  const auto r = translate_anthropic_request(ordered_json::parse(R"({
    "model": "m", "max_tokens": 64, "stop_sequences": ["END"], "temperature": 0.3, "top_k": 5, "stream": true,
    "metadata": {"user_id": "u"}, "thinking": {"type": "enabled", "budget_tokens": 100},
    "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
    "messages": [
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "call the tool", "signature": "s"},
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "3 C"}]},
        {"type": "text", "text": "And tomorrow?"}]}],
    "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object",
               "properties": {"z": {"type": "string"}, "a": {"type": "string"}}}}],
    "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}})"));
  REQUIRE_FALSE(r.error);
  CHECK(r.chat["messages"] == ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": "Looking.", "tool_calls": [{"id": "toolu_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "3 C"},
    {"role": "user", "content": "And tomorrow?"}])"));
  CHECK(r.chat["max_tokens"] == 64);
  CHECK(r.chat["stop"] == ordered_json::array({"END"}));
  CHECK(r.chat["top_k"] == 5);
  CHECK(r.chat["stream"] == true);
  CHECK_FALSE(r.chat.contains("metadata"));
  CHECK_FALSE(r.chat.contains("thinking"));
  CHECK(r.chat["tool_choice"] == ordered_json::parse(R"({"type": "function", "function": {"name": "get_weather"}})"));
  CHECK(r.chat["parallel_tool_calls"] == false);
  // The input schema keeps its declared order (z before a) for the call's grammar.
  CHECK(r.chat["tools"].dump() ==
        R"([{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object",)"
        R"("properties":{"z":{"type":"string"},"a":{"type":"string"}}}}}])");
  const auto any = translate_anthropic_request(
      ordered_json::parse(R"({"max_tokens": 1, "messages": [], "tool_choice": {"type": "any"}})"));
  CHECK(any.chat["tool_choice"] == "required");
  const auto failed = translate_anthropic_request(ordered_json::parse(R"({"max_tokens": 1, "messages": [
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": true}]}]})"));
  CHECK(failed.chat["messages"][0]["content"] == "Error: boom");
}

TEST_CASE("Messages API bodies that cannot be served are 400s naming the field", "[server][anthropic]") {
  CHECK(error_param(R"({"messages": []})") == "max_tokens");
  CHECK(error_param(R"({"max_tokens": 5})") == "messages");
  CHECK(error_param(R"({"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]})") == "messages");
  CHECK(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "document",
                       "source": {"type": "base64", "media_type": "application/pdf", "data": "AAAA"}}]}]})") ==
        "messages");
  CHECK(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use",
                       "id": "t", "name": "f", "input": {}}]}]})") == "messages");
  CHECK(error_param(R"({"max_tokens": 5, "messages": [], "tools": [{"type": "web_search_20250305",
                       "name": "web_search"}]})") == "tools");
  CHECK(error_param(R"({"max_tokens": 5, "messages": [], "tool_choice": {"type": "tool"}})") == "tool_choice");
  CHECK(error_param(R"({"max_tokens": 5, "messages": [], "system": 3})") == "system");
  const json e = tc::server::anthropic_error_body({404, "invalid_request_error", "no model 'x'", "model_not_found",
                                                   "model"});
  CHECK(e == json({{"type", "error"}, {"error", {{"type", "not_found_error"}, {"message", "no model 'x'"}}}}));
}

TEST_CASE("Messages API events come in order and build the message", "[server][anthropic]") {
  tc::server::AnthropicBuilder b("msg_1", "m");
  std::string sse = b.start(40);
  sse += b.thinking("Hmm.");
  sse += b.text("Hel");
  sse += b.text("lo");
  const tc::server::ToolCall call{"f", "{\"a\": 1}", "call_1"};
  sse += b.calls({call});
  tc::runtime::Usage usage;
  usage.prompt_tokens = 40;
  usage.cached_tokens = 30;
  usage.completion_tokens = 9;
  sse += b.finish(tc::runtime::FinishReason::Stop, "", usage);
  CHECK(event_types(sse) ==
        std::vector<std::string>{"message_start",       "content_block_start", "content_block_delta",
                                 "content_block_stop",  "content_block_start", "content_block_delta",
                                 "content_block_delta", "content_block_stop",  "content_block_start",
                                 "content_block_delta", "content_block_stop",  "message_delta",
                                 "message_stop"});
  CHECK(sse.find(R"("delta":{"thinking":"Hmm.","type":"thinking_delta"})") != std::string::npos);
  CHECK(sse.find(R"("delta":{"partial_json":"{\"a\": 1}","type":"input_json_delta"})") != std::string::npos);
  const json m = b.object();
  CHECK(m["stop_reason"] == "tool_use");
  CHECK(m["content"][0] == json({{"type", "thinking"}, {"thinking", "Hmm."}, {"signature", ""}}));
  CHECK(m["content"][1] == json({{"type", "text"}, {"text", "Hello"}}));
  CHECK(m["content"][2] == json({{"type", "tool_use"}, {"id", "call_1"}, {"name", "f"}, {"input", {{"a", 1}}}}));
  CHECK(m["usage"] == json({{"input_tokens", 10}, {"cache_read_input_tokens", 30}, {"output_tokens", 9}}));

  tc::server::AnthropicBuilder stopped("msg_2", "m");
  stopped.text("x");
  stopped.finish(tc::runtime::FinishReason::Stop, "END", usage);
  CHECK(stopped.object()["stop_reason"] == "stop_sequence");
  CHECK(stopped.object()["stop_sequence"] == "END");
  tc::server::AnthropicBuilder cut("msg_3", "m");
  cut.finish(tc::runtime::FinishReason::Length, "", usage);
  CHECK(cut.object()["stop_reason"] == "max_tokens");
  CHECK(cut.object()["stop_sequence"] == nullptr);
  tc::server::AnthropicBuilder plain("msg_4", "m");
  plain.finish(tc::runtime::FinishReason::Stop, "", usage);
  CHECK(plain.object()["stop_reason"] == "end_turn");
  CHECK(event_types(plain.error({503, "unavailable_error", "busy", "", ""})) == std::vector<std::string>{"error"});
}
