// The request side of OpenAI's Responses API (POST /v1/responses): a body
// translated into the /v1/chat/completions body it means, so that one
// parser, one planner and one tool-call path serve both. `input` (a string,
// or items: messages with text parts and input_image parts holding a data:
// URL (image_input.h), earlier function calls and their outputs, earlier
// reasoning) and `instructions` become messages;
// max_output_tokens -> max_tokens; function tools ({"type": "function",
// "name", "parameters", ...}) -> chat tools; tool_choice;
// text.format -> response_format; previous_response_id: the stored
// conversation of that response (response_store.h) comes first. What
// cannot be honoured is a 400 naming the field: conversation objects,
// background, image URLs and files, tools other than functions; an unknown
// previous response is a 404. Fields that only steer OpenAI's service
// (metadata, include, truncation, service_tier, ...) are ignored. The translation
// keeps objects' member order (schemas are compiled in declared order).
// No HTTP here, so it is unit-tested directly.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/openai_errors.h"

namespace tc::server {

struct ResponsesRequest {
  nlohmann::ordered_json chat;    // the /v1/chat/completions body
  // The request's fields a response object repeats (instructions,
  // max_output_tokens, temperature, top_p, tools, tool_choice,
  // parallel_tool_calls, text, metadata), as sent or their defaults.
  nlohmann::json echo;
  // The conversation so far as chat messages (the previous response's,
  // then this input; without the instructions), kept with the reply when
  // `store` (response_store.h).
  nlohmann::json conversation;
  bool store = true;
  std::optional<ApiError> error;  // set: the 4xx to answer
};

// A stored response's conversation by id, or nullopt.
using PreviousResponses = std::function<std::optional<nlohmann::json>(const std::string& id)>;

ResponsesRequest translate_responses_request(const nlohmann::ordered_json& body,
                                             const PreviousResponses& previous = {});

}  // namespace tc::server
