// OpenAI response bodies and SSE chunks (see openai_responses.h).
#include "server/openai_responses.h"

namespace tc::server {
namespace {

using nlohmann::json;

json bytes_of(const std::string& piece) {
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return bytes;
}

const char* object_name(const ResponseMeta& meta, bool chunk) {
  if (meta.endpoint == Endpoint::Completions) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

json envelope(const ResponseMeta& meta, bool chunk) {
  return {{"id", meta.id},
          {"object", object_name(meta, chunk)},
          {"created", meta.created},
          {"model", meta.model},
          {"system_fingerprint", meta.system_fingerprint}};
}

json chunk_with_choice(const ResponseMeta& meta, json choice) {
  json j = envelope(meta, true);
  j["choices"] = json::array({std::move(choice)});
  return j;
}

}  // namespace

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

const char* openai_finish_reason(runtime::FinishReason reason, bool tool_calls) {
  if (tool_calls) return "tool_calls";
  return reason == runtime::FinishReason::Length ? "length" : "stop";
}

json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  json out = json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    json call = {{"id", calls[k].id},
                 {"type", "function"},
                 {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}};
    if (with_index) call["index"] = static_cast<int>(k);
    out.push_back(std::move(call));
  }
  return out;
}

json usage_json(const runtime::Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json chat_logprobs_json(const std::vector<runtime::TokenInfo>& tokens) {
  json content = json::array();
  for (const auto& t : tokens) {
    json top = json::array();
    for (const auto& [piece, logprob] : t.top) {
      top.push_back({{"token", piece}, {"logprob", logprob}, {"bytes", bytes_of(piece)}});
    }
    content.push_back(
        {{"token", t.piece}, {"logprob", t.logprob}, {"bytes", bytes_of(t.piece)}, {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs_json(const std::vector<runtime::TokenInfo>& tokens, size_t text_offset) {
  json out_tokens = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = text_offset;
  for (const auto& t : tokens) {
    out_tokens.push_back(t.piece);
    logprobs.push_back(t.logprob);
    json top = json::object();
    for (const auto& [piece, logprob] : t.top) top[piece] = logprob;
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += t.piece.size();
  }
  return {{"tokens", std::move(out_tokens)},
          {"token_logprobs", std::move(logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

json chat_role_chunk(const ResponseMeta& meta, int index) {
  return chunk_with_choice(meta, {{"index", index},
                                  {"delta", {{"role", "assistant"}, {"content", ""}}},
                                  {"logprobs", nullptr},
                                  {"finish_reason", nullptr}});
}

json content_chunk(const ResponseMeta& meta, int index, const std::string& text, const json& logprobs) {
  if (meta.endpoint == Endpoint::Completions) {
    return chunk_with_choice(
        meta, {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", nullptr}});
  }
  return chunk_with_choice(meta, {{"index", index},
                                  {"delta", {{"content", text}}},
                                  {"logprobs", logprobs},
                                  {"finish_reason", nullptr}});
}

json reasoning_chunk(const ResponseMeta& meta, int index, const std::string& text) {
  return chunk_with_choice(meta, {{"index", index},
                                  {"delta", {{"reasoning_content", text}}},
                                  {"logprobs", nullptr},
                                  {"finish_reason", nullptr}});
}

json finish_chunk(const ResponseMeta& meta, int index, runtime::FinishReason finish, bool tool_calls) {
  if (meta.endpoint == Endpoint::Completions) {
    return chunk_with_choice(
        meta, {{"index", index}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", openai_finish_reason(finish)}});
  }
  return chunk_with_choice(meta, {{"index", index},
                                  {"delta", json::object()},
                                  {"logprobs", nullptr},
                                  {"finish_reason", openai_finish_reason(finish, tool_calls)}});
}

json tool_calls_chunk(const ResponseMeta& meta, int index, const std::vector<ToolCall>& calls, const json& logprobs) {
  return chunk_with_choice(meta, {{"index", index},
                                  {"delta", {{"tool_calls", tool_calls_json(calls, true)}}},
                                  {"logprobs", logprobs},
                                  {"finish_reason", nullptr}});
}

json usage_chunk(const ResponseMeta& meta, const runtime::Usage& usage) {
  json j = envelope(meta, true);
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

json response_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const runtime::Usage& usage,
                   bool logprobs) {
  json body = envelope(meta, false);
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const auto& c = choices[i];
    json choice = {{"index", static_cast<int>(i)}};
    if (meta.endpoint == Endpoint::Completions) {
      choice["text"] = c.text;
      choice["logprobs"] = logprobs ? completion_logprobs_json(c.tokens, 0) : json(nullptr);
    } else {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        // OpenAI's shape: content null unless the model wrote text beside the calls.
        if (c.text.find_first_not_of(" \n\t\r") == std::string::npos) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = tool_calls_json(c.tool_calls, false);
      }
      choice["logprobs"] = logprobs ? chat_logprobs_json(c.tokens) : json(nullptr);
    }
    choice["finish_reason"] = openai_finish_reason(c.finish, !c.tool_calls.empty());
    out.push_back(std::move(choice));
  }
  body["choices"] = std::move(out);
  body["usage"] = usage_json(usage);
  return body;
}

}  // namespace tc::server
