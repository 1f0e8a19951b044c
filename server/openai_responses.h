// The response side of the OpenAI schema: JSON bodies and SSE chunks of
// completions and chat completions, logprobs in both shapes, usage, and the
// SSE framing. Pure functions of their inputs (unit-tested without HTTP).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/engine.h"
#include "server/tool_call_parser.h"

namespace tc::server {

enum class Endpoint { Completions, Chat };

// Fields every chunk and body of one response shares.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::Chat;
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  std::string system_fingerprint;
};

// One finished choice, for a non-streamed body.
struct ChoiceResult {
  std::string text;                        // chat with tool calls: the content around them
  std::string reasoning;                   // chat: a thinking model's reasoning, split off (reasoning_split.h)
  std::vector<runtime::TokenInfo> tokens;  // when logprobs were asked for
  runtime::FinishReason finish = runtime::FinishReason::Stop;
  std::string stop_word;                   // the stop string that ended the reply, if one did
  std::vector<ToolCall> tool_calls;        // chat: the calls found in the reply (ids set)
};

// Serialises without ever throwing: invalid UTF-8 becomes U+FFFD.
std::string dump_json(const nlohmann::json& j);

// SSE framing: "data: <json>\n\n", the terminator and a keep-alive comment.
std::string sse_event(const nlohmann::json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
inline constexpr std::string_view kSsePing = ": ping\n\n";

// "stop" / "length", or "tool_calls" for a reply that called tools (a
// cancelled or failed choice never reaches a client body).
const char* openai_finish_reason(runtime::FinishReason reason, bool tool_calls = false);

nlohmann::json usage_json(const runtime::Usage& usage);

// Logprobs of `tokens`: chat's {"content":[{token,logprob,bytes,top_logprobs}]}
// or the legacy completions {tokens, token_logprobs, top_logprobs, text_offset}
// with offsets counted from `text_offset` bytes.
nlohmann::json chat_logprobs_json(const std::vector<runtime::TokenInfo>& tokens);
nlohmann::json completion_logprobs_json(const std::vector<runtime::TokenInfo>& tokens, size_t text_offset);

// Streamed chunks. `logprobs` is null or the value from the functions above.
nlohmann::json chat_role_chunk(const ResponseMeta& meta, int index);
nlohmann::json content_chunk(const ResponseMeta& meta, int index, const std::string& text,
                             const nlohmann::json& logprobs);
// Chat: a delta with reasoning text ({"reasoning_content": ...}, as llama.cpp's server and vLLM send it).
nlohmann::json reasoning_chunk(const ResponseMeta& meta, int index, const std::string& text);
nlohmann::json finish_chunk(const ResponseMeta& meta, int index, runtime::FinishReason finish,
                            bool tool_calls = false);
// Chat: a delta with the calls, each whole ({index, id, type, function: {name, arguments}}).
nlohmann::json tool_calls_chunk(const ResponseMeta& meta, int index, const std::vector<ToolCall>& calls,
                                const nlohmann::json& logprobs);
// The message's "tool_calls" array.
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index);
nlohmann::json usage_chunk(const ResponseMeta& meta, const runtime::Usage& usage);

// A whole non-streamed body; `logprobs` selects whether choices carry them.
nlohmann::json response_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                             const runtime::Usage& usage, bool logprobs);

}  // namespace tc::server
