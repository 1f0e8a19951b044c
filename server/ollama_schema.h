// The request side of Ollama's API: /api/chat and /api/generate bodies
// translated into the equivalent OpenAI body (server/openai_schema.h then
// validates it), Ollama's `options` mapped onto our sampler, and its
// `keep_alive` (a duration string or seconds); `format: "json"` becomes
// response_format json_object, a schema in `format` response_format
// json_schema. `images` (base64, image_input.h): a message's (/api/chat)
// or the prompt's (/api/generate) image parts, before its text. What we
// cannot honour is a 400 saying so: a per-request Go `template`, images
// with a `suffix`. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/keep_alive.h"
#include "server/openai_errors.h"

namespace tc::server {

// `keep_alive` of a request body: a duration string ("5m", "-1", "0") or a
// number of seconds; absent or null: nullopt. A 400 naming keep_alive for
// anything else.
std::optional<ApiError> parse_keep_alive_field(const nlohmann::json& body, std::optional<config::KeepAlive>& out);

struct OllamaRequest {
  std::string model;
  bool stream = true;                          // Ollama streams unless told not to
  std::optional<config::KeepAlive> keep_alive;
  bool load_only = false;                      // no prompt / messages: load the model (or unload, keep_alive 0)
  bool completion = false;                     // raw generate: the prompt as is (a /v1/completions body)
  nlohmann::json openai;                       // the equivalent /v1/chat/completions or /v1/completions body
  // Raw /api/generate only: the bytes of the images whose kImageMarker
  // (image_input.h) open the completion's prompt, for
  // CompletionRequest::images (a chat body carries its images as data: URL parts).
  std::vector<std::string> images;
  int32_t repeat_last_n = 64;                  // options.repeat_last_n (not an OpenAI field)
  // truncate (default true, as Ollama's): a conversation too long for the
  // context drops its oldest messages (chat_history_fit.h); false: a 400.
  bool truncate = true;
  // shift (default true, as Ollama's): a reply that fills the context drops
  // the context's oldest half after options.num_keep tokens (default 4)
  // and goes on, where the model allows it (elsewhere it stays off).
  bool shift = true;
  std::optional<ApiError> error;               // a 400 (message in Ollama's words)
};

// /api/chat: messages (with their images), tools, options, format, stream,
// keep_alive.
OllamaRequest translate_ollama_chat(const nlohmann::json& body);
// /api/generate: prompt, images, suffix, system, raw, options, format,
// stream, keep_alive. Not raw: the prompt (and system) as chat messages
// through the model's chat template, as Ollama applies the model's
// template; raw: the prompt as is, after one marker line per image. With a
// suffix: a completion that fills in the middle between prompt and suffix
// (fill_in_middle.h; system and template unused, as in Ollama's FIM
// templates).
OllamaRequest translate_ollama_generate(const nlohmann::json& body);

}  // namespace tc::server
