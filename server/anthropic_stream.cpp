// Messages API content blocks and their stream events (see
// anthropic_stream.h).
#include "server/anthropic_stream.h"

#include <utility>

#include "server/anthropic_schema.h"
#include "server/openai_responses.h"

namespace tc::server {
namespace {

using nlohmann::json;

std::string event(const char* type, json data) {
  data["type"] = type;
  return std::string("event: ") + type + "\n" + sse_event(data);
}

// A call's arguments as the object tool_use's input holds.
json input_of(const ToolCall& call) {
  json input = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_object() ? input : json::object();
}

}  // namespace

json AnthropicBuilder::object() const {
  return {{"id", id_},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model_},
          {"content", blocks_},
          {"stop_reason", stop_reason_},
          {"stop_sequence", stop_sequence_},
          {"usage", usage_}};
}

std::string AnthropicBuilder::start(int64_t prompt_tokens) {
  usage_["input_tokens"] = prompt_tokens;
  json message = object();
  message["content"] = json::array();
  return event("message_start", {{"message", std::move(message)}});
}

std::string AnthropicBuilder::close_open_block() {
  if (open_ == Open::None) return {};
  open_ = Open::None;
  return event("content_block_stop", {{"index", static_cast<int64_t>(blocks_.size() - 1)}});
}

std::string AnthropicBuilder::append(Open kind, const std::string& delta) {
  if (delta.empty()) return {};
  const bool thinking = kind == Open::Thinking;
  const char* field = thinking ? "thinking" : "text";
  std::string out;
  if (open_ != kind) {
    out = close_open_block();
    json block = thinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                          : json{{"type", "text"}, {"text", ""}};
    out += event("content_block_start",
                 {{"index", static_cast<int64_t>(blocks_.size())}, {"content_block", block}});
    blocks_.push_back(std::move(block));
    open_ = kind;
  }
  json& block = blocks_.back();
  block[field] = block[field].get<std::string>() + delta;
  return out + event("content_block_delta",
                     {{"index", static_cast<int64_t>(blocks_.size() - 1)},
                      {"delta", {{"type", thinking ? "thinking_delta" : "text_delta"}, {field, delta}}}});
}

std::string AnthropicBuilder::thinking(const std::string& delta) { return append(Open::Thinking, delta); }

std::string AnthropicBuilder::text(const std::string& delta) { return append(Open::Text, delta); }

std::string AnthropicBuilder::calls(const std::vector<ToolCall>& calls) {
  if (calls.empty()) return {};
  std::string out = close_open_block();
  for (const ToolCall& call : calls) {
    const auto index = static_cast<int64_t>(blocks_.size());
    const json started = {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", json::object()}};
    out += event("content_block_start", {{"index", index}, {"content_block", started}});
    out += event("content_block_delta",
                 {{"index", index}, {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}});
    out += event("content_block_stop", {{"index", index}});
    blocks_.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", input_of(call)}});
  }
  return out;
}

std::string AnthropicBuilder::finish(runtime::FinishReason finish, const std::string& stop_word,
                                     const runtime::Usage& usage) {
  std::string out = close_open_block();
  bool called = false;
  for (const json& b : blocks_) called = called || b["type"] == "tool_use";
  stop_reason_ = called                                      ? "tool_use"
                 : finish == runtime::FinishReason::Length ? "max_tokens"
                 : !stop_word.empty()                      ? "stop_sequence"
                                                           : "end_turn";
  if (!called && finish != runtime::FinishReason::Length && !stop_word.empty()) stop_sequence_ = stop_word;
  // Anthropic counts cache reads apart from the input.
  usage_ = {{"input_tokens", usage.prompt_tokens - usage.cached_tokens},
            {"cache_read_input_tokens", usage.cached_tokens},
            {"output_tokens", usage.completion_tokens}};
  out += event("message_delta", {{"delta", {{"stop_reason", stop_reason_}, {"stop_sequence", stop_sequence_}}},
                                 {"usage", {{"output_tokens", usage.completion_tokens}}}});
  return out + event("message_stop", json::object());
}

std::string AnthropicBuilder::error(const ApiError& e) { return event("error", anthropic_error_body(e)); }

}  // namespace tc::server
