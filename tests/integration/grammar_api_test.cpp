// GBNF grammars over HTTP (llama.cpp's `grammar` field): on /completion,
// /v1/completions and /v1/chat/completions the reply is a text the grammar
// generates and ends where the grammar does (stop, not length); the greedy
// text is the same on both completion routes, streamed or not, and sampled
// replies stay in the language; a broken grammar, a token id past the
// vocabulary, a grammar beside a JSON response_format and one that is not
// text are 400s naming `grammar`.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

TEST_CASE("GBNF grammars over HTTP: replies follow the grammar on every route", "[integration][gbnf]") {
  const auto dir = tc::test::scratch_dir("grammar_api");
  const auto model = tc::test::make_test_model(
      dir, "m", "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 8");
  tc::test::ServerProcess server(model, {"--ctx-size", "256", "--threads", "2"}, dir);
  auto client = server.client();
  const std::string grammar = R"(root ::= answer ", " word (" " word){0,2} "."
answer ::= "yes" | "no" | "maybe"
word ::= [a-z]{1,6})";
  const std::regex form(R"((yes|no|maybe), [a-z]{1,6}( [a-z]{1,6}){0,2}\.)");
  const std::string prompt = "Is the sky green? Answer:";

  const auto native = tc::test::post_json(
      client, "/completion", {{"prompt", prompt}, {"n_predict", 60}, {"temperature", 0}, {"grammar", grammar}});
  REQUIRE(native.status == 200);
  const std::string text = native.body["content"];
  INFO(text);
  CHECK(std::regex_match(text, form));
  CHECK(native.body["stop_type"] == "eos");

  const json v1_body = {{"prompt", prompt}, {"max_tokens", 60}, {"temperature", 0}, {"grammar", grammar}};
  const auto v1 = tc::test::post_json(client, "/v1/completions", v1_body);
  REQUIRE(v1.status == 200);
  CHECK(v1.body["choices"][0]["text"] == text);
  CHECK(v1.body["choices"][0]["finish_reason"] == "stop");

  json stream_body = v1_body;
  stream_body["stream"] = true;
  const auto streamed = tc::test::post_stream(client, "/v1/completions", stream_body);
  REQUIRE(streamed.status == 200);
  std::string joined;
  for (const auto& e : streamed.events) {
    if (e.contains("choices") && !e["choices"].empty()) joined += e["choices"][0].value("text", "");
  }
  CHECK(joined == text);

  // Random sampling too: every seed's reply is in the language.
  for (int seed = 1; seed <= 6; ++seed) {
    const auto r = tc::test::post_json(client, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 60},
                                                                   {"temperature", 1.5}, {"seed", seed},
                                                                   {"grammar", grammar}});
    REQUIRE(r.status == 200);
    const std::string sampled = r.body["choices"][0]["text"];
    INFO(sampled);
    CHECK(std::regex_match(sampled, form));
  }

  // Chat: the grammar constrains the assistant's reply.
  const auto chat = tc::test::post_json(
      client, "/v1/chat/completions",
      {{"messages", json::array({{{"role", "user"}, {"content", "Is the sky green?"}}})},
       {"max_tokens", 60},
       {"temperature", 0},
       {"grammar", grammar}});
  REQUIRE(chat.status == 200);
  const std::string reply = chat.body["choices"][0]["message"]["content"];
  INFO(reply);
  CHECK(std::regex_match(reply, form));
  CHECK(chat.body["choices"][0]["finish_reason"] == "stop");

  // With json_schema beside it, /completion follows the grammar, as llama-server does.
  const auto both = tc::test::post_json(client, "/completion",
                                        {{"prompt", prompt},
                                         {"n_predict", 60},
                                         {"temperature", 0},
                                         {"grammar", grammar},
                                         {"json_schema", {{"type", "object"}}}});
  REQUIRE(both.status == 200);
  CHECK(both.body["content"] == text);

  SECTION("broken grammars and conflicts are 400s naming 'grammar'") {
    const auto broken = tc::test::post_json(client, "/v1/completions",
                                            {{"prompt", prompt}, {"grammar", "root ::= \"a\"\nroot ::= (\"b\""}});
    CHECK(broken.status == 400);
    CHECK(broken.body["error"]["param"] == "grammar");
    CHECK(broken.body["error"]["message"].get<std::string>().find("line 2") != std::string::npos);
    const auto undefined = tc::test::post_json(client, "/completion", {{"prompt", prompt}, {"grammar", "root ::= x"}});
    CHECK(undefined.status == 400);
    CHECK(undefined.body["error"]["message"].get<std::string>().find("'x'") != std::string::npos);
    const auto token =
        tc::test::post_json(client, "/v1/completions", {{"prompt", prompt}, {"grammar", "root ::= <[5000]>"}});
    CHECK(token.status == 400);
    CHECK(token.body["error"]["param"] == "grammar");
    const auto with_json = tc::test::post_json(
        client, "/v1/chat/completions",
        {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
         {"grammar", "root ::= \"a\""},
         {"response_format", {{"type", "json_object"}}}});
    CHECK(with_json.status == 400);
    CHECK(with_json.body["error"]["param"] == "grammar");
    const auto not_text = tc::test::post_json(client, "/completion", {{"prompt", prompt}, {"grammar", 3}});
    CHECK(not_text.status == 400);
    CHECK(not_text.body["error"]["param"] == "grammar");
  }
  CHECK(server.stop() == 0);
}
