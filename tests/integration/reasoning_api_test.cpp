// A thinking model's reasoning over HTTP: a model whose chat template opens
// <think> at the end of the prompt (as DeepSeek-R1's distills do) replies
// inside the reasoning block. The reply X that reasoning_format "none"
// returns as content comes back as `reasoning_content` by default (and
// streamed as reasoning_content deltas), as Ollama's `thinking` with think:
// true, and as content again with --reasoning-format none or think unset;
// the Responses API gives it as a reasoning item, the Messages API as a
// thinking block.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "tests/integration/ollama_think_checks.h"
#include "tests/integration/opened_think_template.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::ServerProcess;

namespace {

std::filesystem::path thinking_model() {
  static const auto dir = tc::test::scratch_dir("reasoning_api");
  const auto template_path = dir / "thinking.jinja";
  std::ofstream(template_path) << tc::test::kOpenedThinkTemplate;
  return tc::test::make_test_model(dir, "thinking",
                                   "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 "
                                   "--seed 23 --chat-template " + tc::test::shell_quote(template_path.string()));
}

json chat_body(const json& extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Why is the sky blue?"}}}},
               {"max_tokens", 12},
               {"temperature", 0}};
  body.update(extra);
  return body;
}

// The greedy reply as plain content.
std::string plain_reply(httplib::Client& c) {
  const auto r = post_json(c, "/v1/chat/completions", chat_body({{"reasoning_format", "none"}}));
  INFO(r.raw);
  REQUIRE(r.status == 200);
  CHECK_FALSE(r.body["choices"][0]["message"].contains("reasoning_content"));
  return r.body["choices"][0]["message"]["content"].get<std::string>();
}

}  // namespace

TEST_CASE("a reply inside an opened think block comes back as reasoning", "[integration][reasoning]") {
  ServerProcess server(thinking_model(), {"--ctx-size", "128", "--parallel", "2"},
                       tc::test::scratch_dir("reasoning_api_logs"));
  auto c = server.client();
  const std::string x = plain_reply(c);
  REQUIRE_FALSE(x.empty());
  REQUIRE(x.find("</think>") == std::string::npos);  // never closed: all of it is reasoning

  const auto split = post_json(c, "/v1/chat/completions", chat_body());
  INFO(split.raw);
  REQUIRE(split.status == 200);
  const json& message = split.body["choices"][0]["message"];
  CHECK(message["reasoning_content"] == x);
  CHECK(message["content"] == "");

  const auto stream = tc::test::post_stream(c, "/v1/chat/completions", chat_body({{"stream", true}}));
  REQUIRE(stream.status == 200);
  std::string reasoning, content;
  for (const json& e : stream.events) {
    if (!e.contains("choices") || e["choices"].empty()) continue;
    const json& delta = e["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
  }
  CHECK(reasoning == x);
  CHECK(content.empty());
  CHECK(stream.data.back() == "[DONE]");

  const auto bad = post_json(c, "/v1/chat/completions", chat_body({{"reasoning_format", "hidden"}}));
  CHECK(bad.status == 400);
  CHECK(bad.body["error"]["param"] == "reasoning_format");

  // Ollama: think true returns it as thinking; think absent leaves it in the content.
  tc::test::check_ollama_think(server, "thinking", "Why is the sky blue?", x);
  // /api/show lists the model as a thinking one (its template writes <think>).
  const auto show = post_json(c, "/api/show", {{"model", "thinking"}});
  REQUIRE(show.status == 200);
  CHECK(show.body["capabilities"] == json::array({"completion", "tools", "thinking"}));
  // A raw prompt has no template to think in.
  const auto raw = post_json(c, "/api/generate", {{"model", "thinking"}, {"prompt", "x"}, {"raw", true}, {"think", true}});
  CHECK(raw.status == 400);
}

TEST_CASE("the reasoning_format option none leaves the reasoning in the content", "[integration][reasoning]") {
  ServerProcess server(thinking_model(), {"--ctx-size", "128", "--reasoning-format", "none"},
                       tc::test::scratch_dir("reasoning_api_none_logs"));
  auto c = server.client();
  const auto r = post_json(c, "/v1/chat/completions", chat_body());
  REQUIRE(r.status == 200);
  CHECK_FALSE(r.body["choices"][0]["message"].contains("reasoning_content"));
  const auto split = post_json(c, "/v1/chat/completions", chat_body({{"reasoning_format", "deepseek"}}));
  REQUIRE(split.status == 200);
  CHECK(split.body["choices"][0]["message"]["reasoning_content"] == r.body["choices"][0]["message"]["content"]);
}

TEST_CASE("the Responses API returns a thinking model's reasoning as a reasoning item", "[integration][reasoning]") {
  ServerProcess server(thinking_model(), {"--ctx-size", "128"}, tc::test::scratch_dir("reasoning_responses_logs"));
  auto c = server.client();
  const std::string x = plain_reply(c);
  const json body = {{"input", "Why is the sky blue?"}, {"max_output_tokens", 12}, {"temperature", 0}};
  const auto r = post_json(c, "/v1/responses", body);
  INFO(r.raw);
  REQUIRE(r.status == 200);
  const json& output = r.body["output"];
  REQUIRE(output.size() == 1);  // all of the reply is reasoning: no message
  CHECK(output[0]["type"] == "reasoning");
  CHECK(output[0]["content"][0]["type"] == "reasoning_text");
  CHECK(output[0]["content"][0]["text"] == x);

  json streamed = body;
  streamed["stream"] = true;
  const auto s = tc::test::post_stream(c, "/v1/responses", streamed);
  REQUIRE(s.status == 200);
  std::string reasoning;
  bool text_delta = false;
  for (const json& e : s.events) {
    if (e["type"] == "response.reasoning_text.delta") reasoning += e["delta"].get<std::string>();
    if (e["type"] == "response.output_text.delta") text_delta = true;
  }
  CHECK(reasoning == x);
  CHECK_FALSE(text_delta);
  REQUIRE_FALSE(s.events.empty());
  // The same item as the plain response's, but for its id.
  json last = s.events.back()["response"]["output"];
  REQUIRE(last.size() == 1);
  CHECK(last[0]["id"].get<std::string>().rfind("rs_", 0) == 0);
  last[0]["id"] = output[0]["id"];
  CHECK(last == output);
  CHECK(server.stop() == 0);
}

TEST_CASE("the Messages API returns a thinking model's reasoning as a thinking block", "[integration][reasoning]") {
  ServerProcess server(thinking_model(), {"--ctx-size", "128"}, tc::test::scratch_dir("reasoning_messages_logs"));
  auto c = server.client();
  const std::string x = plain_reply(c);
  const json body = {{"messages", {{{"role", "user"}, {"content", "Why is the sky blue?"}}}},
                     {"max_tokens", 12},
                     {"temperature", 0}};
  const auto r = post_json(c, "/v1/messages", body);
  INFO(r.raw);
  REQUIRE(r.status == 200);
  REQUIRE(r.body["content"].size() == 1);  // all of the reply is reasoning: no text block
  CHECK(r.body["content"][0]["type"] == "thinking");
  CHECK(r.body["content"][0]["thinking"] == x);

  json streamed = body;
  streamed["stream"] = true;
  const auto s = tc::test::post_stream(c, "/v1/messages", streamed);
  REQUIRE(s.status == 200);
  std::string thinking;
  for (const json& e : s.events) {
    if (e["type"] == "content_block_delta") {
      CHECK(e["delta"]["type"] == "thinking_delta");
      thinking += e["delta"]["thinking"].get<std::string>();
    }
  }
  CHECK(thinking == x);
  CHECK(server.stop() == 0);
}
