// A streamed /v1/chat/completions reply's deltas added up (reasoning,
// content, tool-call deltas, finish reason), for the integration tests of
// the chat formats (harmony, Gemma 4, Qwen3-Coder).
#pragma once

#include <catch2/catch.hpp>
#include <httplib.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/server_fixture.h"

namespace tc::test {

struct StreamedChat {
  std::string reasoning, content, finish;
  nlohmann::json calls = nlohmann::json::array();  // every tool_calls delta, in order
};

// Posts `body` with stream true; requires a 200 and the [DONE] end.
inline StreamedChat stream_chat(httplib::Client& c, const nlohmann::json& body) {
  using nlohmann::json;
  json b = body;
  b["stream"] = true;
  const auto r = post_stream(c, "/v1/chat/completions", b);
  REQUIRE(r.status == 200);
  REQUIRE(r.data.back() == "[DONE]");
  StreamedChat s;
  for (const json& e : r.events) {
    if (!e.contains("choices") || e["choices"].empty()) continue;
    const json& choice = e["choices"][0];
    const json& delta = choice["delta"];
    if (delta.contains("reasoning_content")) s.reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content") && delta["content"].is_string()) s.content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls")) {
      for (const json& call : delta["tool_calls"]) s.calls.push_back(call);
    }
    if (!choice["finish_reason"].is_null()) s.finish = choice["finish_reason"].get<std::string>();
  }
  return s;
}

}  // namespace tc::test
