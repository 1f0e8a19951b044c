// Responses API output items and their stream events (see
// responses_stream.h).
#include "server/responses_stream.h"

#include <utility>

#include "server/openai_responses.h"

namespace tc::server {

using nlohmann::json;

json assistant_message(const std::string& text, const std::vector<ToolCall>& calls) {
  json m = {{"role", "assistant"}, {"content", text.empty() && !calls.empty() ? json(nullptr) : json(text)}};
  if (!calls.empty()) {
    m["tool_calls"] = json::array();
    for (const ToolCall& c : calls) {
      m["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
  }
  return m;
}

ResponsesBuilder::ResponsesBuilder(ResponsesMeta meta, std::function<std::string(const char* prefix)> new_id)
    : meta_(std::move(meta)), new_id_(std::move(new_id)) {}

std::string ResponsesBuilder::event(const char* type, json data) {
  data["type"] = type;
  data["sequence_number"] = sequence_++;
  return std::string("event: ") + type + "\n" + sse_event(data);
}

json ResponsesBuilder::object() const {
  json o = {{"id", meta_.id},
            {"object", "response"},
            {"created_at", meta_.created_at},
            {"status", status_},
            {"error", nullptr},
            {"incomplete_details", incomplete_details_},
            {"model", meta_.model},
            {"output", items_},
            {"usage", usage_},
            {"store", false},
            {"background", false},
            {"previous_response_id", nullptr},  // the echo says otherwise
            {"truncation", "disabled"},
            {"user", nullptr}};
  if (meta_.echo.is_object()) {
    for (const auto& [key, value] : meta_.echo.items()) o[key] = value;
  }
  return o;
}

std::string ResponsesBuilder::start() {
  std::string out = event("response.created", {{"response", object()}});
  return out + event("response.in_progress", {{"response", object()}});
}

std::string ResponsesBuilder::close_open_item(const char* status) {
  if (open_ == Open::None) return {};
  const auto index = static_cast<int64_t>(items_.size() - 1);
  json& item = items_.back();
  json& part = item["content"][0];
  const std::string id = item["id"];
  const bool message = open_ == Open::Message;
  open_ = Open::None;
  std::string out = message ? event("response.output_text.done", {{"item_id", id},
                                                                   {"output_index", index},
                                                                   {"content_index", 0},
                                                                   {"text", part["text"]},
                                                                   {"logprobs", json::array()}})
                            : event("response.reasoning_text.done", {{"item_id", id},
                                                                     {"output_index", index},
                                                                     {"content_index", 0},
                                                                     {"text", part["text"]}});
  out += event("response.content_part.done",
               {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
  item["status"] = status;
  out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
  return out;
}

std::string ResponsesBuilder::append(Open kind, const std::string& delta) {
  if (delta.empty()) return {};
  const bool message = kind == Open::Message;
  std::string out;
  if (open_ != kind) {
    out = close_open_item();
    json item = message ? json{{"type", "message"},
                               {"id", new_id_("msg_")},
                               {"status", "in_progress"},
                               {"role", "assistant"},
                               {"content", json::array()}}
                        : json{{"type", "reasoning"},
                               {"id", new_id_("rs_")},
                               {"summary", json::array()},
                               {"content", json::array()},
                               {"status", "in_progress"}};
    const auto index = static_cast<int64_t>(items_.size());
    out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
    const json part = message ? json{{"type", "output_text"},
                                     {"text", ""},
                                     {"annotations", json::array()},
                                     {"logprobs", json::array()}}
                              : json{{"type", "reasoning_text"}, {"text", ""}};
    out += event("response.content_part.added",
                 {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    item["content"].push_back(part);
    items_.push_back(std::move(item));
    open_ = kind;
  }
  json& item = items_.back();
  item["content"][0]["text"] = item["content"][0]["text"].get<std::string>() + delta;
  json data = {{"item_id", item["id"]},
               {"output_index", static_cast<int64_t>(items_.size() - 1)},
               {"content_index", 0},
               {"delta", delta}};
  if (message) data["logprobs"] = json::array();
  return out + event(message ? "response.output_text.delta" : "response.reasoning_text.delta", std::move(data));
}

std::string ResponsesBuilder::reasoning(const std::string& delta) { return append(Open::Reasoning, delta); }

std::string ResponsesBuilder::text(const std::string& delta) { return append(Open::Message, delta); }

std::string ResponsesBuilder::calls(const std::vector<ToolCall>& calls) {
  if (calls.empty()) return {};
  std::string out = close_open_item();
  for (const ToolCall& call : calls) {
    json item = {{"type", "function_call"}, {"id", new_id_("fc_")}, {"call_id", call.id},
                 {"name", call.name},       {"arguments", ""},      {"status", "in_progress"}};
    const auto index = static_cast<int64_t>(items_.size());
    out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
    out += event("response.function_call_arguments.delta",
                 {{"item_id", item["id"]}, {"output_index", index}, {"delta", call.arguments}});
    out += event("response.function_call_arguments.done", {{"item_id", item["id"]},
                                                           {"output_index", index},
                                                           {"name", call.name},
                                                           {"arguments", call.arguments}});
    item["arguments"] = call.arguments;
    item["status"] = "completed";
    out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
    items_.push_back(std::move(item));
  }
  return out;
}

std::string ResponsesBuilder::finish(runtime::FinishReason finish, const runtime::Usage& usage) {
  const bool cut = finish == runtime::FinishReason::Length;
  std::string out = close_open_item(cut ? "incomplete" : "completed");
  status_ = cut ? "incomplete" : "completed";
  if (cut) incomplete_details_ = {{"reason", "max_output_tokens"}};
  usage_ = {{"input_tokens", usage.prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
            {"output_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
  return out + event(cut ? "response.incomplete" : "response.completed", {{"response", object()}});
}

std::string ResponsesBuilder::error(const ApiError& e) {
  status_ = "failed";
  return event("error", {{"code", e.code.empty() ? json(e.type) : json(e.code)},
                         {"message", e.message},
                         {"param", e.param.empty() ? json(nullptr) : json(e.param)}});
}

}  // namespace tc::server
