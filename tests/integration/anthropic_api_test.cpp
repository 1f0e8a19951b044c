// Anthropic's Messages API over HTTP (POST /v1/messages, as Anthropic's SDKs
// call a base URL): the greedy reply equals the chat route's for the same
// conversation, streamed as Anthropic streams (the deltas spell it, the
// events in order), stop sequences and max_tokens as stop reasons, usage,
// a forced tool_use whose input fits the tool's schema and its tool_result
// sent back, count_tokens, the key in x-api-key, and errors in Anthropic's
// shape.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

TEST_CASE("Anthropic's Messages API: replies, streams, tools and errors", "[integration][anthropic]") {
  const auto dir = tc::test::scratch_dir("anthropic_api");
  const auto model = tc::test::make_test_model(
      dir, "m", "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 12");
  tc::test::ServerProcess server(model, {"--ctx-size", "512", "--threads", "2", "--api-key", "k1"}, dir);
  auto client = server.client();
  const httplib::Headers key = {{"x-api-key", "k1"}, {"anthropic-version", "2023-06-01"}};
  const json conversation = json::array({{{"role", "user"}, {"content", "Tell me about the sea."}}});

  const auto chat = tc::test::post_json(client, "/v1/chat/completions",
                                        {{"messages", json::array({{{"role", "system"}, {"content", "Be brief."}},
                                                                   conversation[0]})},
                                         {"max_tokens", 16},
                                         {"temperature", 0}},
                                        {{"Authorization", "Bearer k1"}});
  REQUIRE(chat.status == 200);
  const std::string want = chat.body["choices"][0]["message"]["content"];
  const json body = {{"model", "m"}, {"system", "Be brief."}, {"messages", conversation},
                     {"max_tokens", 16}, {"temperature", 0}};
  const auto r = tc::test::post_json(client, "/v1/messages", body, key);
  INFO(r.raw);
  REQUIRE(r.status == 200);
  CHECK(r.body["type"] == "message");
  CHECK(r.body["role"] == "assistant");
  CHECK(r.body["id"].get<std::string>().rfind("msg_", 0) == 0);
  CHECK(r.body["model"] == "m");
  REQUIRE(r.body["content"].size() == 1);
  CHECK(r.body["content"][0] == json({{"type", "text"}, {"text", want}}));
  CHECK(r.body["stop_reason"] == (chat.body["choices"][0]["finish_reason"] == "length" ? "max_tokens" : "end_turn"));
  const json& usage = r.body["usage"];
  CHECK(usage["input_tokens"].get<int>() + usage["cache_read_input_tokens"].get<int>() ==
        chat.body["usage"]["prompt_tokens"]);
  CHECK(usage["output_tokens"] == chat.body["usage"]["completion_tokens"]);

  json streamed = body;
  streamed["stream"] = true;
  const auto s = tc::test::post_stream(client, "/v1/messages", streamed, key);
  REQUIRE(s.status == 200);
  std::vector<std::string> types;
  std::string text;
  for (const json& e : s.events) {
    types.push_back(e["type"]);
    if (e["type"] == "content_block_delta") text += e["delta"]["text"].get<std::string>();
  }
  CHECK(text == want);
  REQUIRE(types.size() >= 6);
  CHECK(types.front() == "message_start");
  CHECK(types[1] == "content_block_start");
  CHECK(types[types.size() - 3] == "content_block_stop");
  CHECK(types[types.size() - 2] == "message_delta");
  CHECK(types.back() == "message_stop");
  CHECK(s.events.front()["message"]["usage"]["input_tokens"] == chat.body["usage"]["prompt_tokens"]);
  CHECK(s.events[s.events.size() - 2]["delta"]["stop_reason"] == r.body["stop_reason"]);

  SECTION("a stop sequence ends the reply and is named") {
    // Two ASCII characters of the reply (a random model writes any bytes).
    size_t at = 0;
    while (at + 1 < want.size() && (static_cast<unsigned char>(want[at]) >= 0x80 ||
                                    static_cast<unsigned char>(want[at + 1]) >= 0x80)) {
      ++at;
    }
    REQUIRE(at + 1 < want.size());
    const std::string stop = want.substr(at, 2);
    json b = body;
    b["stop_sequences"] = json::array({stop});
    const auto cut = tc::test::post_json(client, "/v1/messages", b, key);
    REQUIRE(cut.status == 200);
    CHECK(cut.body["stop_reason"] == "stop_sequence");
    CHECK(cut.body["stop_sequence"] == stop);
  }

  SECTION("a forced tool_use fits the tool's schema, and its result goes back") {
    const json tools = json::array({{{"name", "get_weather"},
                                     {"description", "The weather in a city."},
                                     {"input_schema",
                                      {{"type", "object"},
                                       {"properties", {{"city", {{"type", "string"}, {"maxLength", 4}}}}},
                                       {"required", json::array({"city"})}}}}});
    // Seeded (an extension), and '}' favoured so that the random model
    // closes the input soon, as the OpenAI SDK check does.
    const auto brace = tc::test::post_json(client, "/tokenize", {{"content", "}"}}, key);
    REQUIRE(brace.status == 200);
    json b = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}})},
              {"max_tokens", 100},
              {"temperature", 0.7},
              {"seed", 77},
              {"logit_bias", {{std::to_string(brace.body["tokens"].back().get<int>()), 100}}},
              {"tools", tools},
              {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}};
    const auto called = tc::test::post_json(client, "/v1/messages", b, key);
    INFO(called.raw);
    REQUIRE(called.status == 200);
    CHECK(called.body["stop_reason"] == "tool_use");
    const json& content = called.body["content"];
    REQUIRE_FALSE(content.empty());
    const json& use = content.back();
    CHECK(use["type"] == "tool_use");
    CHECK(use["name"] == "get_weather");
    REQUIRE(use["input"].is_object());
    CHECK(use["input"]["city"].is_string());
    b["messages"].push_back({{"role", "assistant"}, {"content", content}});
    b["messages"].push_back(
        {{"role", "user"},
         {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", use["id"]}, {"content", "3 C"}}})}});
    b["tool_choice"] = {{"type", "none"}};
    b["max_tokens"] = 8;
    const auto answered = tc::test::post_json(client, "/v1/messages", b, key);
    INFO(answered.raw);
    REQUIRE(answered.status == 200);
    CHECK(answered.body["content"][0]["type"] == "text");
  }

  SECTION("count_tokens gives the prompt's tokens, as the reply's usage counts them") {
    json count = body;
    count.erase("max_tokens");
    count.erase("temperature");
    const auto c = tc::test::post_json(client, "/v1/messages/count_tokens", count, key);
    INFO(c.raw);
    REQUIRE(c.status == 200);
    CHECK(c.body == json({{"input_tokens", chat.body["usage"]["prompt_tokens"]}}));
    const auto bad = tc::test::post_json(client, "/v1/messages/count_tokens", {{"messages", 3}}, key);
    CHECK(bad.status == 400);
    CHECK(bad.body["type"] == "error");
  }

  SECTION("errors come in Anthropic's shape") {
    const auto missing = tc::test::post_json(client, "/v1/messages", {{"messages", conversation}}, key);
    CHECK(missing.status == 400);
    CHECK(missing.body["type"] == "error");
    CHECK(missing.body["error"]["type"] == "invalid_request_error");
    CHECK(missing.body["error"]["message"].get<std::string>().find("max_tokens") != std::string::npos);
    json unknown = body;
    unknown["model"] = "no-such-model";
    const auto nf = tc::test::post_json(client, "/v1/messages", unknown, key);
    CHECK(nf.status == 404);
    CHECK(nf.body["error"]["type"] == "not_found_error");
    const auto no_key = tc::test::post_json(client, "/v1/messages", body);
    CHECK(no_key.status == 401);
  }
  CHECK(server.stop() == 0);
}
