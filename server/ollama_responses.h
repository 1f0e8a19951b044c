// The response side of Ollama's API (docs/api.md of ollama/ollama):
// /api/chat and /api/generate NDJSON lines and bodies, and its error body
// {"error": "..."}. Pure functions (unit-tested without HTTP).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/engine.h"
#include "server/metrics.h"
#include "server/tool_call_parser.h"

namespace tc::server {

// What every line of one Ollama response shares (each line's created_at is
// the time it is made, as Ollama's).
struct OllamaMeta {
  bool chat = true;         // /api/chat ("message") or /api/generate ("response")
  std::string model;
  double load_seconds = 0;  // load_duration: waiting for the model's load
};

// "2024-05-01T12:00:00.123456789Z" for `t`.
std::string rfc3339(std::chrono::system_clock::time_point t);

// A streamed piece of text, done: false; chat: with the reply's tool calls
// (message.tool_calls, arguments as objects) when there are any.
nlohmann::json ollama_chunk(const OllamaMeta& meta, const std::string& text, const std::vector<ToolCall>& calls = {});
// A streamed piece of a thinking model's reasoning (think: true): the
// message's (chat) or the line's (generate) `thinking`, content empty.
nlohmann::json ollama_thinking_chunk(const OllamaMeta& meta, const std::string& thinking);
// The last line (or the whole body, with all the `text` and `thinking`):
// done: true, done_reason and the counts and durations (nanoseconds).
nlohmann::json ollama_done(const OllamaMeta& meta, const std::string& text, runtime::FinishReason finish,
                           const runtime::Usage& usage, const RequestRecord& record,
                           std::chrono::steady_clock::time_point arrived, const std::vector<ToolCall>& calls = {},
                           const std::string& thinking = "");
// A request with no prompt / messages: the model is loaded (done_reason
// "load") or unloaded ("unload").
nlohmann::json ollama_load_reply(const OllamaMeta& meta, const char* done_reason);

std::string ndjson_line(const nlohmann::json& j);

// /api/show's `capabilities` for a model of architecture `arch` whose
// scalar metadata is `metadata`: ["embedding"] for a file written as an
// embedder (a non-zero {arch}.pooling_type), as Ollama lists embedders;
// else ["completion", "tools"] (every model takes tools: through its
// template, or as text for templates without them), plus "thinking" when
// the chat template writes <think> or reads enable_thinking (Qwen3, QwQ,
// DeepSeek-R1's distills), writes harmony's <|channel|>analysis
// (gpt-oss) or Gemma 4's <|channel>thought: think: true returns their reasoning apart; and "insert" when
// the vocabulary has fill-in-the-middle tokens (/api/generate's suffix),
// and "vision" when it is served with a vision projector (--mmproj).
nlohmann::json ollama_capabilities(const std::string& arch, const nlohmann::json& metadata,
                                   const std::string& chat_template = "", bool fill_in_middle = false,
                                   bool vision = false);
std::string ollama_error_body(const std::string& message);

}  // namespace tc::server
