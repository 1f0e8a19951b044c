// OpenAI's Responses API without HTTP: request bodies translated into the
// chat completions bodies they mean (input items, instructions, tools,
// tool_choice, text.format in declared order, ignored fields) and 400s
// naming the field for what is not served; the builder's events in order
// (sequence numbers, item ids, the text the deltas spell) and the response
// object for text, reasoning, calls, a cut reply and an error.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "server/response_store.h"
#include "server/responses_schema.h"
#include "server/responses_stream.h"

using nlohmann::json;
using nlohmann::ordered_json;
using tc::server::translate_responses_request;

namespace {

std::string error_param(const ordered_json& body) {
  const auto r = translate_responses_request(body);
  return r.error ? r.error->param : "(no error)";
}

// The events of an SSE text: each `event:` type and its data.
std::vector<std::pair<std::string, json>> events_of(const std::string& sse) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while ((pos = sse.find("event: ", pos)) != std::string::npos) {
    const size_t eol = sse.find('\n', pos);
    const std::string type = sse.substr(pos + 7, eol - pos - 7);
    const size_t data = eol + 1 + 6;  // past "data: "
    const size_t end = sse.find("\n\n", data);
    out.emplace_back(type, json::parse(sse.substr(data, end - data)));
    pos = end;
  }
  return out;
}

}  // namespace

TEST_CASE("Responses bodies become the chat bodies they mean", "[server][responses]") {
  auto r = translate_responses_request(ordered_json::parse(R"({
    "model": "m", "instructions": "Be brief.", "input": "Hi", "max_output_tokens": 9, "temperature": 0.5,
    "stream": true, "store": true, "metadata": {"a": "b"}, "include": ["x"], "seed": 3})"));
  REQUIRE_FALSE(r.error);
  CHECK(r.chat["messages"] == ordered_json::parse(R"([{"role": "system", "content": "Be brief."},
                                                      {"role": "user", "content": "Hi"}])"));
  CHECK(r.chat["max_tokens"] == 9);
  CHECK(r.chat["temperature"] == 0.5);
  CHECK(r.chat["stream"] == true);
  CHECK(r.chat["seed"] == 3);
  CHECK(r.chat["model"] == "m");
  for (const char* dropped : {"store", "metadata", "include", "input", "instructions", "max_output_tokens"}) {
    CHECK_FALSE(r.chat.contains(dropped));
  }
  CHECK(r.echo["instructions"] == "Be brief.");
  CHECK(r.echo["max_output_tokens"] == 9);
  CHECK(r.echo["metadata"] == json({{"a", "b"}}));
  CHECK(r.echo["tool_choice"] == "auto");

  // An agent's history: a developer message, the assistant's text and call
  // in one turn, the call's output, an earlier reasoning item left out.
  r = translate_responses_request(ordered_json::parse(R"({"input": [
    {"role": "developer", "content": "Use tools."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\":\"Oslo\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "{\"t\": 3}"}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object",
               "properties": {"z": {"type": "string"}, "a": {"type": "string"}}}}],
    "tool_choice": {"type": "function", "name": "get_weather"}, "parallel_tool_calls": false})"));
  REQUIRE_FALSE(r.error);
  CHECK(r.chat["messages"] == ordered_json::parse(R"([
    {"role": "system", "content": "Use tools."},
    {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}],
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"t\": 3}"}])"));
  CHECK(r.chat["tool_choice"] == ordered_json::parse(R"({"type": "function", "function": {"name": "get_weather"}})"));
  CHECK(r.chat["parallel_tool_calls"] == false);
  // The parameters keep their declared order (z before a) for the call's grammar.
  CHECK(r.chat["tools"].dump() ==
        R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
        R"("properties":{"z":{"type":"string"},"a":{"type":"string"}}}}}])");

  r = translate_responses_request(ordered_json::parse(R"({"input": "x", "text": {"format": {"type": "json_schema",
    "name": "n", "strict": true, "schema": {"type": "object", "properties": {"b": {}, "a": {}}}}}})"));
  REQUIRE_FALSE(r.error);
  CHECK(r.chat["response_format"].dump() ==
        R"({"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"b":{},"a":{}}},)"
        R"("strict":true}})");
  r = translate_responses_request(
      ordered_json::parse(R"({"input": "x", "text": {"format": {"type": "json_object"}}})"));
  CHECK(r.chat["response_format"] == ordered_json({{"type", "json_object"}}));
}

TEST_CASE("Responses bodies that cannot be served are 400s naming the field", "[server][responses]") {
  CHECK(error_param(ordered_json::parse(R"({"model": "m"})")) == "input");
  CHECK(error_param(ordered_json::parse(R"({"input": 3})")) == "input");
  CHECK(error_param(ordered_json::parse(R"({"input": "x", "previous_response_id": 5})")) == "previous_response_id");
  CHECK(error_param(ordered_json::parse(R"({"input": "x", "conversation": "conv_1"})")) == "conversation");
  CHECK(error_param(ordered_json::parse(R"({"input": "x", "background": true})")) == "background");
  CHECK(error_param(ordered_json::parse(
            R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})")) == "input");
  CHECK(error_param(ordered_json::parse(R"({"input": [{"type": "item_reference", "id": "msg_1"}]})")) == "input");
  CHECK(error_param(ordered_json::parse(R"({"input": [{"role": "critic", "content": "x"}]})")) == "input");
  CHECK(error_param(ordered_json::parse(R"({"input": [{"type": "function_call", "name": "f"}]})")) == "input");
  CHECK(error_param(ordered_json::parse(R"({"input": "x", "tools": [{"type": "web_search"}]})")) == "tools");
  CHECK(error_param(ordered_json::parse(R"({"input": "x", "tool_choice": {"type": "mcp"}})")) == "tool_choice");
  CHECK(error_param(ordered_json::parse(R"({"input": "x", "text": {"format": {"type": "yaml"}}})")) == "text");
  CHECK(error_param(ordered_json::parse(R"({"input": "x", "instructions": 5})")) == "instructions");
  CHECK(error_param(ordered_json::parse("[1]")) == "");
  const auto r = translate_responses_request(ordered_json::parse(R"({"input": "x", "conversation": "c"})"));
  CHECK(r.error->message.find("send the whole conversation in 'input'") != std::string::npos);
  // An unknown previous response is a 404 naming it.
  const auto unknown = translate_responses_request(ordered_json::parse(R"({"input": "x", "previous_response_id": "r"})"));
  REQUIRE(unknown.error);
  CHECK(unknown.error->status == 404);
  CHECK(unknown.error->param == "previous_response_id");
  CHECK(unknown.error->message.find("'r' was not found") != std::string::npos);
}

TEST_CASE("Responses: previous_response_id puts the stored conversation first, store says what to keep",
          "[server][responses]") {
  const json stored = json::parse(R"([{"role": "user", "content": "My name is Ada."},
                                      {"role": "assistant", "content": "Hello Ada."}])");
  const auto lookup = [&](const std::string& id) -> std::optional<json> {
    if (id == "resp_1") return stored;
    return std::nullopt;
  };
  const auto r = translate_responses_request(
      ordered_json::parse(R"({"instructions": "Be brief.", "input": "What is my name?",
                              "previous_response_id": "resp_1", "store": false})"),
      lookup);
  REQUIRE_FALSE(r.error);
  CHECK(json::parse(r.chat["messages"].dump()) == json::parse(R"([{"role": "system", "content": "Be brief."},
    {"role": "user", "content": "My name is Ada."}, {"role": "assistant", "content": "Hello Ada."},
    {"role": "user", "content": "What is my name?"}])"));
  // The conversation kept for the next turn leaves the instructions out.
  CHECK(r.conversation == json::parse(R"([{"role": "user", "content": "My name is Ada."},
    {"role": "assistant", "content": "Hello Ada."}, {"role": "user", "content": "What is my name?"}])"));
  CHECK_FALSE(r.store);
  CHECK(r.echo["previous_response_id"] == "resp_1");
  CHECK(r.echo["store"] == false);
  CHECK(translate_responses_request(ordered_json::parse(R"({"input": "x"})")).store);
}

TEST_CASE("Responses: the store keeps the latest, the least recently used leave first", "[server][responses]") {
  tc::server::ResponseStore store;
  for (size_t i = 0; i < tc::server::ResponseStore::kMaxEntries + 2; ++i) {
    store.put(std::string("r").append(std::to_string(i)), {json::array({i}), json::object()});
    // r0 used again just before the store fills: r1 and r2 are then the oldest.
    if (i + 1 == tc::server::ResponseStore::kMaxEntries) REQUIRE(store.get("r0"));
  }
  CHECK(store.size() == tc::server::ResponseStore::kMaxEntries);
  CHECK(store.get("r0"));
  CHECK_FALSE(store.get("r1"));
  CHECK_FALSE(store.get("r2"));
  CHECK(store.get("r3"));
  CHECK(store.erase("r3"));
  CHECK_FALSE(store.erase("r3"));
  CHECK_FALSE(store.get("r3"));
  // A response over the byte bound alone is still kept (the newest stays).
  store.put("big", {json(std::string(tc::server::ResponseStore::kMaxBytes + 10, 'x')), json::object()});
  CHECK(store.size() == 1);
  CHECK(store.get("big"));
}

TEST_CASE("Responses events come in order and build the response object", "[server][responses]") {
  int next = 0;
  tc::server::ResponsesBuilder b({"resp_1", 100, "m", {{"tools", json::array()}}, nullptr, false},
                                 [&next](const char* prefix) { return prefix + std::to_string(next++); });
  std::string sse = b.start();
  sse += b.reasoning("Think");
  sse += b.reasoning("ing.");
  sse += b.text("Hel");
  sse += b.text("");
  sse += b.text("lo");
  const tc::server::ToolCall call{"f", "{\"a\":1}", "call_9"};
  sse += b.calls({call});
  tc::runtime::Usage usage;
  usage.prompt_tokens = 5;
  usage.completion_tokens = 7;
  sse += b.finish(tc::runtime::FinishReason::Stop, usage);
  const auto events = events_of(sse);
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].second["sequence_number"] == i);
    CHECK(events[i].second["type"] == events[i].first);
    types.push_back(events[i].first);
  }
  CHECK(types == std::vector<std::string>{
                     "response.created", "response.in_progress",
                     "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
                     "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
                     "response.output_item.done", "response.output_item.added", "response.content_part.added",
                     "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
                     "response.content_part.done", "response.output_item.done", "response.output_item.added",
                     "response.function_call_arguments.delta", "response.function_call_arguments.done",
                     "response.output_item.done", "response.completed"});
  CHECK(events[0].second["response"]["status"] == "in_progress");
  CHECK(events[0].second["response"]["output"].empty());
  CHECK(events[13].second["text"] == "Hello");
  CHECK(events[13].second["item_id"] == "msg_1");
  CHECK(events[11].second["output_index"] == 1);
  const json o = b.object();
  CHECK(o == events.back().second["response"]);
  CHECK(o["status"] == "completed");
  CHECK(o["id"] == "resp_1");
  CHECK(o["created_at"] == 100);
  CHECK(o["tools"] == json::array());
  CHECK(o["usage"]["total_tokens"] == 12);
  REQUIRE(o["output"].size() == 3);
  CHECK(o["output"][0]["type"] == "reasoning");
  CHECK(o["output"][0]["content"][0]["text"] == "Thinking.");
  CHECK(o["output"][1]["content"][0]["text"] == "Hello");
  CHECK(o["output"][1]["status"] == "completed");
  CHECK(o["output"][2] == json({{"type", "function_call"}, {"id", "fc_2"}, {"call_id", "call_9"}, {"name", "f"},
                                {"arguments", "{\"a\":1}"}, {"status", "completed"}}));

  // A reply cut by max_output_tokens is incomplete; an error is an `error` event.
  tc::server::ResponsesBuilder cut({"resp_2", 1, "m", nullptr, nullptr, false},
                                   [](const char* p) { return std::string(p) + "x"; });
  cut.text("abc");
  const auto last = events_of(cut.finish(tc::runtime::FinishReason::Length, usage));
  CHECK(last.back().first == "response.incomplete");
  CHECK(last.back().second["response"]["incomplete_details"]["reason"] == "max_output_tokens");
  CHECK(last.back().second["response"]["output"][0]["status"] == "incomplete");
  tc::server::ResponsesBuilder failed({"resp_3", 1, "m", nullptr, nullptr, false},
                                      [](const char* p) { return std::string(p); });
  const auto err = events_of(failed.error({400, "invalid_request_error", "bad", "context_length_exceeded", "input"}));
  REQUIRE(err.size() == 1);
  CHECK(err[0].first == "error");
  CHECK(err[0].second["code"] == "context_length_exceeded");
  CHECK(err[0].second["param"] == "input");
  CHECK(failed.object()["status"] == "failed");
}
