// /api/chat with a conversation longer than the context, as Open WebUI
// sends one after many turns: Ollama's `truncate` (on by default) drops the
// oldest messages, keeping the system message and the last one, until the
// prompt leaves room for the reply. Checked against the same server's
// answers to the explicitly shortened conversations (truncate false): the
// fewest messages are dropped, and the reply is that conversation's.
// /v1/chat/completions does the same with the `truncate` extension (what
// the built-in page sends), and without it answers 400. With the context
// shift (on by default there) a num_predict longer than the context still
// gets a history that leaves a quarter of it.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

constexpr int kCtx = 128;

json long_conversation() {
  json messages = json::array({{{"role", "system"}, {"content", "You answer briefly."}}});
  for (int i = 0; i < 10; ++i) {
    messages.push_back({{"role", "user"},
                        {"content", "Tell me about the number " + std::to_string(i) + " and where it came from."}});
    messages.push_back({{"role", "assistant"}, {"content", "The number " + std::to_string(i) + " is old and useful."}});
  }
  messages.push_back({{"role", "user"}, {"content", "And the next one?"}});
  return messages;
}

json chat_body(const json& messages, bool truncate, int num_predict) {
  json options = {{"temperature", 0}, {"seed", 7}};
  if (num_predict > 0) options["num_predict"] = num_predict;
  return {{"model", "tiny"}, {"messages", messages}, {"stream", false}, {"truncate", truncate}, {"options", options}};
}

// The system message, then the conversation from message `start` on.
json from(const json& messages, size_t start) {
  json kept = json::array({messages[0]});
  for (size_t i = start; i < messages.size(); ++i) kept.push_back(messages[i]);
  return kept;
}

// A server of a tiny generated model named "tiny", with kCtx positions of context and one slot.
std::unique_ptr<tc::test::ServerProcess> tiny_server(const std::string& name) {
  const auto dir = tc::test::scratch_dir(name);
  const auto model = tc::test::make_test_model(
      dir, "tiny", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
  return std::make_unique<tc::test::ServerProcess>(
      model, std::vector<std::string>{"--alias", "tiny", "--ctx-size", std::to_string(kCtx), "--parallel", "1"}, dir);
}

}  // namespace

TEST_CASE("/api/chat drops a long conversation's oldest messages to fit the context, as Ollama's truncate",
          "[integration][ollama]") {
  const auto server = tiny_server("ollama_history_fit");
  auto client = server->client();
  const json messages = long_conversation();

  // Whole, it does not fit: with truncate false, a 400 naming the context.
  auto whole = client.Post("/api/chat", chat_body(messages, false, 8).dump(), "application/json");
  REQUIRE(whole);
  CHECK(whole->status == 400);
  CHECK_THAT(json::parse(whole->body)["error"].get<std::string>(), Catch::Contains("context"));

  for (const int num_predict : {8, 0}) {
    INFO("num_predict " << num_predict);
    auto r = client.Post("/api/chat", chat_body(messages, true, num_predict).dump(), "application/json");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
    const json got = json::parse(r->body);
    const int64_t prompt = got["prompt_eval_count"].get<int64_t>();
    // Room for the reply: num_predict tokens, or a quarter of the context.
    CHECK(prompt + (num_predict > 0 ? num_predict : kCtx / 4) <= kCtx);

    // The first start whose shortened conversation the server takes as it is
    // (truncate false) is the one kept: same prompt, same greedy reply.
    size_t start = 1;
    json want;
    for (; start < messages.size(); ++start) {
      auto s = client.Post("/api/chat", chat_body(from(messages, start), false, num_predict > 0 ? num_predict : 0)
                                            .dump(),
                           "application/json");
      REQUIRE(s);
      if (s->status != 200) continue;
      want = json::parse(s->body);
      // Without num_predict a shortened conversation is taken once its prompt
      // fits at all; the kept one also leaves a quarter of the context.
      if (num_predict == 0 && want["prompt_eval_count"].get<int64_t>() + kCtx / 4 > kCtx) continue;
      break;
    }
    INFO("kept from message " << start << " of " << messages.size());
    REQUIRE(start > 1);
    REQUIRE(start < messages.size());
    CHECK(prompt == want["prompt_eval_count"].get<int64_t>());
    CHECK(got["message"]["content"] == want["message"]["content"]);
  }
  CHECK_THAT(server->log(), Catch::Contains("oldest messages dropped to fit the context of 128 tokens"));

  // A last message longer than the context alone: still a 400.
  std::string huge;
  for (int i = 0; i < 200; ++i) huge += "more words here ";
  json too_long = messages;
  too_long.back()["content"] = huge;
  auto r = client.Post("/api/chat", chat_body(too_long, true, 8).dump(), "application/json");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(server->stop() == 0);
}

TEST_CASE("/api/chat with a num_predict past the context drops old messages and shifts the context",
          "[integration][ollama][context_shift]") {
  const auto server = tiny_server("ollama_history_fit_shift");
  auto client = server->client();
  constexpr int kLong = 3 * kCtx;
  json body = chat_body(long_conversation(), true, kLong);
  // Shifting (Ollama's default) the reply needs only a quarter of the context to start.
  auto r = client.Post("/api/chat", body.dump(), "application/json");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  const json got = json::parse(r->body);
  CHECK(got["prompt_eval_count"].get<int64_t>() + kCtx / 4 <= kCtx);
  // An end-of-generation token could end the reply first; this seed's goes past the context.
  CHECK(got["prompt_eval_count"].get<int64_t>() + got["eval_count"].get<int64_t>() > kCtx);
  // Without the shift no history leaves room for that many tokens.
  body["shift"] = false;
  r = client.Post("/api/chat", body.dump(), "application/json");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(server->stop() == 0);
}

TEST_CASE("/v1/chat/completions with truncate: true keeps what /api/chat keeps, without it a 400",
          "[integration][ollama]") {
  const auto server = tiny_server("openai_history_fit");
  auto client = server->client();
  const json messages = long_conversation();
  json body = {{"model", "tiny"}, {"messages", messages}, {"max_tokens", 8}, {"temperature", 0}};
  const auto refused = tc::test::post_json(client, "/v1/chat/completions", body);
  CHECK(refused.status == 400);
  CHECK(refused.body["error"]["code"] == "context_length_exceeded");
  body["truncate"] = true;
  const auto openai = tc::test::post_json(client, "/v1/chat/completions", body);
  INFO(openai.body.dump());
  REQUIRE(openai.status == 200);
  auto ollama = client.Post("/api/chat", chat_body(messages, true, 8).dump(), "application/json");
  REQUIRE(ollama);
  REQUIRE(ollama->status == 200);
  const json o = json::parse(ollama->body);
  CHECK(openai.body["usage"]["prompt_tokens"] == o["prompt_eval_count"]);
  CHECK(openai.body["choices"][0]["message"]["content"] == o["message"]["content"]);
  CHECK(server->stop() == 0);
}
