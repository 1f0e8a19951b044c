// Lookup drafts over HTTP, on the bundled model (real text, which repeats):
// `serve --lookup-draft N` answers with the same text as `draft_max: 0`,
// streamed or not, with logprobs or not, chat or completion, while
// /metrics and the engine view count drafted and kept tokens; a request's
// `draft_max` turns drafts on where the server's default is off; a bad
// `draft_max` is a 400 naming it.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

const std::filesystem::path kBundledModel = tc::test::source_dir() / "models/default.gguf";

// The counter's value in a /metrics page (-1: absent).
double metric(httplib::Client& client, const std::string& name) {
  const auto page = client.Get("/metrics");
  REQUIRE(page);
  const std::string key = "\n" + name + " ";
  const auto at = page->body.find(key);
  if (at == std::string::npos) return -1;
  return std::atof(page->body.c_str() + at + key.size());
}

json completion(const std::string& prompt, int max_tokens) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
}

json with(json body, const json& extra) {
  body.update(extra);
  return body;
}

std::string streamed_text(const tc::test::SseResponse& r) {
  std::string text;
  for (const auto& ev : r.events) {
    if (!ev["choices"].empty()) text += ev["choices"][0].value("text", "");
  }
  return text;
}

}  // namespace

TEST_CASE("serve --lookup-draft: the same replies, fewer steps, counted in /metrics", "[integration][lookup_draft]") {
  const auto dir = tc::test::scratch_dir("lookup_draft_http");
  tc::test::ServerProcess server(kBundledModel, {"--lookup-draft", "8", "--parallel", "2"}, dir);
  auto client = server.client();

  // A passage the model writes, then the passage again from its start: the
  // reply quotes its context, as edits and extraction do.
  const auto first = tc::test::post_json(client, "/v1/completions",
                                         with(completion("And God said, Let there be light", 60), json{{"draft_max", 0}}));
  REQUIRE(first.status == 200);
  const std::string passage = "And God said, Let there be light" + first.body["choices"][0]["text"].get<std::string>();
  const std::string prompt = passage + "\n\n" + passage.substr(0, 40);

  const auto plain = tc::test::post_json(client, "/v1/completions", with(completion(prompt, 80), json{{"draft_max", 0}}));
  REQUIRE(plain.status == 200);
  CHECK(metric(client, "thermocline_draft_tokens_total") == 0);

  const auto drafted = tc::test::post_json(client, "/v1/completions", completion(prompt, 80));
  INFO(drafted.raw);
  REQUIRE(drafted.status == 200);
  CHECK(drafted.body["choices"][0]["text"] == plain.body["choices"][0]["text"]);
  CHECK(drafted.body["usage"]["completion_tokens"] == 80);
  const double n_drafted = metric(client, "thermocline_draft_tokens_total");
  const double n_kept = metric(client, "thermocline_draft_tokens_accepted_total");
  CHECK(n_drafted > 0);
  CHECK(n_kept > 0);
  CHECK(n_kept <= n_drafted);
  // The engine view counts the same.
  const auto view = client.Get("/v1/engine/stats");
  REQUIRE(view);
  REQUIRE(view->status == 200);
  const json tokens = json::parse(view->body)["tokens"];
  CHECK(tokens["drafted_total"].get<double>() == n_drafted);
  CHECK(tokens["draft_kept_total"].get<double>() == n_kept);

  // Streamed, the same text in pieces.
  const auto stream = tc::test::post_stream(client, "/v1/completions", with(completion(prompt, 80), json{{"stream", true}}));
  REQUIRE(stream.status == 200);
  CHECK(streamed_text(stream) == plain.body["choices"][0]["text"].get<std::string>());

  // Logprobs: each token's, streamed or not, as without drafts.
  const auto lp_plain =
      tc::test::post_json(client, "/v1/completions", with(completion(prompt, 40), json{{"logprobs", 1}, {"draft_max", 0}}));
  const auto lp_drafted = tc::test::post_json(client, "/v1/completions", with(completion(prompt, 40), json{{"logprobs", 1}}));
  REQUIRE(lp_plain.status == 200);
  REQUIRE(lp_drafted.status == 200);
  const json& want_lp = lp_plain.body["choices"][0]["logprobs"];
  CHECK(lp_drafted.body["choices"][0]["logprobs"]["tokens"] == want_lp["tokens"]);
  const auto lp_stream = tc::test::post_stream(
      client, "/v1/completions", with(completion(prompt, 40), json{{"logprobs", 1}, {"stream", true}}));
  REQUIRE(lp_stream.status == 200);
  json streamed_tokens = json::array();
  for (const auto& ev : lp_stream.events) {
    if (ev["choices"].empty() || ev["choices"][0]["logprobs"].is_null()) continue;
    for (const auto& t : ev["choices"][0]["logprobs"]["tokens"]) streamed_tokens.push_back(t);
  }
  CHECK(streamed_tokens == want_lp["tokens"]);
  REQUIRE(want_lp["token_logprobs"].size() == lp_drafted.body["choices"][0]["logprobs"]["token_logprobs"].size());
  for (size_t i = 0; i < want_lp["token_logprobs"].size(); ++i) {
    CHECK(lp_drafted.body["choices"][0]["logprobs"]["token_logprobs"][i].get<double>() ==
          Approx(want_lp["token_logprobs"][i].get<double>()).margin(1e-3));
  }

  // Chat: the model answers a verse with the next; asked twice, it drafts from the first answer.
  json chat = {{"messages", json::array({{{"role", "user"}, {"content", "Read me Book 1."}}})},
               {"max_tokens", 64},
               {"temperature", 0}};
  const auto chat_plain = tc::test::post_json(client, "/v1/chat/completions", with(chat, json{{"draft_max", 0}}));
  const auto chat_drafted = tc::test::post_json(client, "/v1/chat/completions", chat);
  REQUIRE(chat_plain.status == 200);
  REQUIRE(chat_drafted.status == 200);
  CHECK(chat_drafted.body["choices"][0]["message"]["content"] == chat_plain.body["choices"][0]["message"]["content"]);

  const auto bad = tc::test::post_json(client, "/v1/completions", with(completion(prompt, 4), json{{"draft_max", -1}}));
  CHECK(bad.status == 400);
  CHECK(bad.body["error"]["param"] == "draft_max");
  const auto too_many = tc::test::post_json(client, "/v1/completions", with(completion(prompt, 4), json{{"draft_max", 1000}}));
  CHECK(too_many.status == 400);
  CHECK(server.stop() == 0);
}

TEST_CASE("a request's draft_max drafts where the server's default is off", "[integration][lookup_draft]") {
  const auto dir = tc::test::scratch_dir("lookup_draft_http_request");
  tc::test::ServerProcess server(kBundledModel, {}, dir);
  auto client = server.client();
  const std::string verse = "In the beginning God created the heaven and the earth.";
  const std::string prompt = verse + "\n" + verse + "\n" + verse + "\n";
  const auto plain = tc::test::post_json(client, "/v1/completions", completion(prompt, 48));
  REQUIRE(plain.status == 200);
  CHECK(metric(client, "thermocline_draft_tokens_total") == 0);
  const auto drafted = tc::test::post_json(client, "/v1/completions", with(completion(prompt, 48), json{{"draft_max", 6}}));
  REQUIRE(drafted.status == 200);
  CHECK(drafted.body["choices"][0]["text"] == plain.body["choices"][0]["text"]);
  CHECK(metric(client, "thermocline_draft_tokens_total") > 0);
  CHECK(server.stop() == 0);
}
