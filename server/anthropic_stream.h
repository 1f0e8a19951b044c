// The response side of Anthropic's Messages API: the message object
// (content blocks: thinking, text, tool_use; stop_reason end_turn,
// max_tokens, stop_sequence or tool_use; usage with cache reads apart) and,
// when streaming, its events (`event: TYPE` and a `data:` object of that
// type): message_start, then per block content_block_start, its deltas
// (thinking_delta, text_delta, input_json_delta) and content_block_stop,
// then message_delta and message_stop; an `error` event after the start.
// Pure functions of their inputs; unit-tested without HTTP.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/engine.h"
#include "server/openai_errors.h"
#include "server/tool_call_parser.h"

namespace tc::server {

// Builds a reply's content blocks as it comes, and the events that announce
// them; each call returns the SSE text to write (empty when there is
// nothing to say). A non-streamed reply calls the same methods and writes
// only object() at the end.
class AnthropicBuilder {
 public:
  AnthropicBuilder(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}

  std::string start(int64_t prompt_tokens);          // message_start
  std::string thinking(const std::string& delta);    // a piece of the reasoning
  std::string text(const std::string& delta);        // a piece of the text
  std::string calls(const std::vector<ToolCall>& calls);  // tool_use blocks (each whole)
  // Closes the open block; message_delta and message_stop. `stop_word`: the
  // stop sequence that ended the reply, if one did.
  std::string finish(runtime::FinishReason finish, const std::string& stop_word, const runtime::Usage& usage);
  std::string error(const ApiError& e);              // an `error` event

  nlohmann::json object() const;                     // the message

 private:
  enum class Open { None, Thinking, Text };
  std::string append(Open kind, const std::string& delta);
  std::string close_open_block();

  std::string id_;
  std::string model_;
  std::vector<nlohmann::json> blocks_;
  Open open_ = Open::None;
  nlohmann::json stop_reason_;    // null until finish()
  nlohmann::json stop_sequence_;  // null unless a stop sequence ended the reply
  nlohmann::json usage_ = {{"input_tokens", 0}, {"output_tokens", 0}};
};

}  // namespace tc::server
