// Response shapes: chunks carry the envelope, role only in the first delta,
// finish_reason once, usage chunk with empty choices, SSE framing, logprobs
// in both shapes, invalid UTF-8 replaced instead of thrown.
#include <catch2/catch.hpp>

#include "server/openai_responses.h"

using nlohmann::json;
using namespace tc::server;

namespace {

ResponseMeta meta(Endpoint e) {
  ResponseMeta m;
  m.endpoint = e;
  m.id = "chatcmpl-1";
  m.created = 1700000000;
  m.model = "tiny";
  m.system_fingerprint = "fp";
  return m;
}

tc::runtime::TokenInfo token(std::string piece, float lp, std::vector<std::pair<std::string, float>> top) {
  tc::runtime::TokenInfo t;
  t.id = 1;
  t.piece = std::move(piece);
  t.logprob = lp;
  t.top = std::move(top);
  return t;
}

}  // namespace

TEST_CASE("chat chunks follow the OpenAI wire format", "[server][responses]") {
  const auto m = meta(Endpoint::Chat);
  const json role = chat_role_chunk(m, 0);
  CHECK(role["object"] == "chat.completion.chunk");
  CHECK(role["id"] == "chatcmpl-1");
  CHECK(role["created"] == 1700000000);
  CHECK(role["choices"][0]["delta"]["role"] == "assistant");
  CHECK(role["choices"][0]["finish_reason"].is_null());
  const json content = content_chunk(m, 0, "Hel", nullptr);
  CHECK(content["choices"][0]["delta"] == json{{"content", "Hel"}});
  CHECK_FALSE(content["choices"][0]["delta"].contains("role"));
  const json fin = finish_chunk(m, 0, tc::runtime::FinishReason::Length);
  CHECK(fin["choices"][0]["delta"] == json::object());
  CHECK(fin["choices"][0]["finish_reason"] == "length");
  tc::runtime::Usage u{9, 12, 4};
  const json usage = usage_chunk(m, u);
  CHECK(usage["choices"] == json::array());
  CHECK(usage["usage"]["total_tokens"] == 21);
  CHECK(usage["usage"]["prompt_tokens_details"]["cached_tokens"] == 4);
}

TEST_CASE("completion chunks and bodies", "[server][responses]") {
  const auto m = meta(Endpoint::Completions);
  const json c = content_chunk(m, 1, "abc", nullptr);
  CHECK(c["object"] == "text_completion");
  CHECK(c["choices"][0]["index"] == 1);
  CHECK(c["choices"][0]["text"] == "abc");
  std::vector<ChoiceResult> choices(2);
  choices[0].text = "one";
  choices[1].text = "two";
  choices[1].finish = tc::runtime::FinishReason::Length;
  const json body = response_body(m, choices, {3, 4, 0}, false);
  CHECK(body["object"] == "text_completion");
  CHECK(body["choices"][1]["text"] == "two");
  CHECK(body["choices"][1]["finish_reason"] == "length");
  CHECK(body["choices"][0]["finish_reason"] == "stop");
  CHECK(body["choices"][0]["logprobs"].is_null());
  CHECK(body["usage"]["total_tokens"] == 7);
}

TEST_CASE("SSE framing and invalid UTF-8", "[server][responses]") {
  CHECK(sse_event(json{{"a", 1}}) == "data: {\"a\":1}\n\n");
  CHECK(kSseDone == "data: [DONE]\n\n");
  CHECK(kSsePing.front() == ':');
  const std::string bad = "ok\xff\xfe";
  const std::string out = dump_json(json{{"t", bad}});
  CHECK(out.find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
}

TEST_CASE("logprobs in the chat and the legacy shape", "[server][responses]") {
  std::vector<tc::runtime::TokenInfo> tokens = {token("He", -0.5f, {{"He", -0.5f}, {"Hi", -1.5f}}),
                                                token("llo", -0.25f, {{"llo", -0.25f}})};
  const json chat = chat_logprobs_json(tokens);
  REQUIRE(chat["content"].size() == 2);
  CHECK(chat["content"][0]["token"] == "He");
  CHECK(chat["content"][0]["logprob"] == Approx(-0.5));
  CHECK(chat["content"][0]["bytes"] == json{72, 101});
  CHECK(chat["content"][0]["top_logprobs"][1]["token"] == "Hi");
  const json legacy = completion_logprobs_json(tokens, 10);
  CHECK(legacy["tokens"] == json{"He", "llo"});
  CHECK(legacy["text_offset"] == json{10, 12});
  CHECK(legacy["top_logprobs"][0]["Hi"] == Approx(-1.5));
  CHECK(legacy["token_logprobs"][1] == Approx(-0.25));
}
