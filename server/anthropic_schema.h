// The request side of Anthropic's Messages API (POST /v1/messages, what
// Anthropic's SDKs and the tools built on them send to a base URL): a body
// translated into the /v1/chat/completions body it means, so that one
// parser, planner and tool-call path serve both. `system` (a string or text
// blocks) becomes the system message; `messages` with string content or
// blocks: text; the assistant's tool_use blocks become its tool calls and
// the user's tool_result blocks tool messages (thinking blocks of earlier
// turns are left out, as chat templates leave out earlier reasoning);
// max_tokens (required), stop_sequences -> stop, temperature, top_p,
// top_k (and the extensions seed, min_p, logit_bias); tools ({"name", "description", "input_schema"}) and tool_choice
// (auto, any -> required, tool -> a named function, none;
// disable_parallel_tool_use). A user's image blocks (base64, or a url
// source holding a data: URL; image_input.h) become image parts among its
// text; documents and other images are a 400 naming `messages`; metadata,
// thinking, service_tier and the like are ignored.
// The translation keeps objects' member order. No HTTP here; unit-tested
// directly.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "server/openai_errors.h"

namespace tc::server {

struct AnthropicRequest {
  nlohmann::ordered_json chat;    // the /v1/chat/completions body
  std::optional<ApiError> error;  // set: the 400 to answer
};

AnthropicRequest translate_anthropic_request(const nlohmann::ordered_json& body);

// An error as Anthropic's API writes it: {"type": "error", "error":
// {"type": "invalid_request_error" | "authentication_error" |
// "not_found_error" | "overloaded_error" | "api_error", "message"}}.
nlohmann::json anthropic_error_body(const ApiError& e);

}  // namespace tc::server
