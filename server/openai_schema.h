// The request side of the OpenAI schema: JSON bodies of /v1/completions and
// /v1/chat/completions parsed and validated into plain structs. Unknown
// fields are ignored, null means "absent" for every optional field, a wrong
// type or a bad value is an ApiError (400) naming the field. No HTTP here,
// so it is unit-tested directly.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/sampler.h"
#include "engine/text/json_schema.h"
#include "server/openai_errors.h"
#include "server/tool_request.h"

namespace tc::server {

// Server-side caps that shape validation (from ServeOptions).
struct RequestLimits {
  int64_t max_tokens_cap = 4096;  // max_tokens above this: 400
  int max_n = 8;                  // n (times the number of prompts) above this: 400
  int max_stop = 16;
  int max_stop_bytes = 256;
  int max_top_logprobs = 20;
  int32_t n_vocab = 0;            // for token-id prompts and logit_bias keys
  // Context shift: the default of requests that do not say, why this
  // model cannot shift (requests then run without it), and the max_tokens
  // cap while shifting (the context no longer bounds a reply).
  bool context_shift = false;
  std::string context_shift_refusal;
  int64_t max_tokens_cap_shifting = std::numeric_limits<int32_t>::max();
};

// Fields both endpoints share.
struct CommonRequest {
  std::string model;                       // as sent; empty when absent
  std::optional<int64_t> max_tokens;       // max_tokens or max_completion_tokens; absent: endpoint default
  runtime::SamplingParams sampling;        // seed: random when absent (has_seed false)
  bool has_seed = false;
  int n = 1;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;              // stream_options.include_usage
  bool logprobs = false;                   // report logprobs of the chosen tokens
  bool ignore_eos = false;                 // llama.cpp extension
  // Extensions: a reply that fills the context drops the context's oldest
  // half after the first n_keep tokens (-1: the whole prompt) and goes on
  // (engine/model/context_shift.h); resolved against RequestLimits.
  bool context_shift = false;
  int32_t n_keep = 4;
  // Extension: lookup drafts per decode step at most (speculative decoding
  // from the reply's own context, engine/runtime/lookup_draft.h); -1: the
  // server's --lookup-draft, 0: off. The reply's tokens are the same.
  int32_t draft_max = -1;
  bool json_object = false;                // response_format {"type": "json_object"}: JSON mode
  bool json_schema = false;                // response_format {"type": "json_schema"}: the reply follows `schema`
  std::shared_ptr<const text::JsonSchema> schema;  // json_schema: compiled by the route (response_schema.h)
  // llama.cpp's extension: a GBNF grammar the reply must follow
  // (text/gbnf_grammar.h); compiled against the model's vocabulary when the
  // request is planned. Empty: none.
  std::string grammar;
};

// /v1/completions. `prompts` holds one entry per prompt: text or token ids.
struct CompletionRequest {
  CommonRequest common;
  std::vector<std::variant<std::string, std::vector<int32_t>>> prompts;
  bool echo = false;
  // Non-empty: fill in the middle between each text prompt (the code
  // before the cursor) and this (the code after it), fill_in_middle.h.
  std::string suffix;
  // The encoded bytes of each image, in the order their kImageMarker
  // (image_input.h) appear in the prompt: Ollama's raw /api/generate with
  // `images` (set by its route; a /v1/completions body carries none).
  std::vector<std::string> images;
};

// /v1/chat/completions. `messages` is normalised for the template: every
// message an object with a string `role` and `content` a string (text and
// image parts joined) or null; other fields (name, tool_calls, tool_call_id) kept,
// each tool call's arguments as an object (tool_request.h).
struct ChatRequest {
  CommonRequest common;
  nlohmann::json messages;            // array of objects
  ToolRequest tools;                  // tools, tool_choice, parallel_tool_calls
  bool add_generation_prompt = true;  // llama.cpp extension: false renders no assistant header
  // vLLM's and llama.cpp's chat_template_kwargs: more variables for the
  // template (Qwen3's enable_thinking, ...); an object, null when absent.
  // The server's own variables cannot be replaced (400).
  nlohmann::json template_kwargs;
  // llama.cpp's reasoning_format: "auto", "deepseek" or "none"; empty: the
  // server's reasoning_format option (reasoning_split.h).
  std::string reasoning_format;
  // Extension (Ollama's /api/chat field, on there by default): a
  // conversation too long for the context drops its oldest messages
  // (chat_history_fit.h) instead of a 400.
  bool truncate = false;
  // The encoded bytes of each image, in the order their kImageMarker
  // (image_input.h) appear in the messages' contents: image parts (data:
  // URLs) become the marker in their message's text. At most
  // kMaxRequestImages.
  std::vector<std::string> images;
};

// Parse results: exactly one of request / error is set.
template <class T>
struct Parsed {
  std::optional<T> request;
  std::optional<ApiError> error;
};

Parsed<CompletionRequest> parse_completion_request(const nlohmann::json& body, const RequestLimits& limits);
Parsed<ChatRequest> parse_chat_request(const nlohmann::json& body, const RequestLimits& limits);

// Whether a chat body has an image part (a message content part of type
// image_url: every API's images arrive as those), before it is parsed: its
// plan may have images to encode, which takes seconds.
bool chat_body_has_images(const nlohmann::json& body);

// A 400 invalid_request_error naming `param`.
ApiError invalid_request(std::string message, std::string param = "");

}  // namespace tc::server
