// The response side of OpenAI's Responses API: the response object
// (output items: the reasoning, the assistant message, function calls)
// and, when streaming, its semantic SSE events (`event: TYPE` and a `data:`
// object with a sequence_number): response.created and .in_progress,
// output_item.added / .done around each item, content_part.added / .done
// and output_text.delta / .done for the message, reasoning_text.delta /
// .done for the reasoning, function_call_arguments.delta / .done for a
// call, then response.completed (response.incomplete when max_output_tokens
// cut the reply), or an `error` event. No [DONE]. Pure functions of their
// inputs; unit-tested without HTTP.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/engine.h"
#include "server/openai_errors.h"
#include "server/tool_call_parser.h"

namespace tc::server {

struct ResponsesMeta {
  std::string id;          // "resp_..."
  int64_t created_at = 0;  // unix seconds
  std::string model;
  nlohmann::json echo;     // the request's fields the object repeats (responses_schema.h)
  nlohmann::json conversation;  // the chat messages so far, kept with the reply when `store`
  bool store = false;
};

// The reply as the chat message a later turn sees: its text, and its calls
// in OpenAI's form.
nlohmann::json assistant_message(const std::string& text, const std::vector<ToolCall>& calls);

// Builds a response's output items as the reply comes, and the events that
// announce them. Each call returns the SSE text to write (empty when there
// is nothing to say); a non-streamed response calls the same methods and
// writes only object() at the end.
class ResponsesBuilder {
 public:
  // new_id(prefix): a fresh id such as "msg_..." for an item.
  ResponsesBuilder(ResponsesMeta meta, std::function<std::string(const char* prefix)> new_id);

  std::string start();                                // response.created, response.in_progress
  std::string reasoning(const std::string& delta);    // a piece of the reasoning
  std::string text(const std::string& delta);         // a piece of the assistant's text
  std::string calls(const std::vector<ToolCall>& calls);  // function calls (each whole)
  // Closes what is open and ends the stream: response.completed, or
  // response.incomplete when `finish` is Length.
  std::string finish(runtime::FinishReason finish, const runtime::Usage& usage);
  std::string error(const ApiError& e);               // an `error` event

  // The response object: "in_progress" before finish(), then "completed" /
  // "incomplete".
  nlohmann::json object() const;

 private:
  enum class Open { None, Reasoning, Message };
  std::string event(const char* type, nlohmann::json data);
  // A piece of the reasoning or the message: opens that item (closing the
  // other) when it is not the open one.
  std::string append(Open kind, const std::string& delta);
  // The open item's closing events; `status`: "completed", or "incomplete"
  // when max_output_tokens cut it.
  std::string close_open_item(const char* status = "completed");

  ResponsesMeta meta_;
  std::function<std::string(const char* prefix)> new_id_;
  std::vector<nlohmann::json> items_;  // the output items so far
  Open open_ = Open::None;             // the item text goes to (the last of items_)
  std::string status_ = "in_progress";
  nlohmann::json incomplete_details_;
  nlohmann::json usage_;
  int64_t sequence_ = 0;
};

}  // namespace tc::server
