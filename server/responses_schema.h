// The request side of OpenAI's Responses API (POST /v1/responses): a body
// translated into the /v1/chat/completions body it means, so that one
// parser, one planner and one tool-call path serve both. `input` (a string,
// or items: messages with text parts, earlier function calls and their
// outputs, earlier reasoning) and `instructions` become messages;
// max_output_tokens -> max_tokens; function tools ({"type": "function",
// "name", "parameters", ...}) -> chat tools; tool_choice;
// text.format -> response_format. What cannot be honoured is a 400 naming
// the field: previous_response_id and conversation (nothing is stored:
// send the conversation in `input`), images and files, tools other than
// functions. Fields that only steer OpenAI's service (store, metadata,
// include, truncation, service_tier, ...) are ignored. The translation
// keeps objects' member order (schemas are compiled in declared order).
// No HTTP here, so it is unit-tested directly.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "server/openai_errors.h"

namespace tc::server {

struct ResponsesRequest {
  nlohmann::ordered_json chat;    // the /v1/chat/completions body
  // The request's fields a response object repeats (instructions,
  // max_output_tokens, temperature, top_p, tools, tool_choice,
  // parallel_tool_calls, text, metadata), as sent or their defaults.
  nlohmann::json echo;
  std::optional<ApiError> error;  // set: the 400 to answer
};

ResponsesRequest translate_responses_request(const nlohmann::ordered_json& body);

}  // namespace tc::server
