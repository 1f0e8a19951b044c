// `thermocline serve` as a user runs it: starts on a generated model, answers
// its routes with the right bodies and OpenAI errors, stops on SIGTERM with
// exit status 0.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

TEST_CASE("serve answers health, models, props, tokenize and detokenize", "[integration][serve]") {
  const auto dir = tc::test::scratch_dir("serve");
  const auto model = tc::test::make_test_model(
      dir, "tiny", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
  tc::test::ServerProcess server(model, {"--alias", "tiny"}, dir);
  auto client = server.client();
  auto health = client.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(json::parse(health->body)["status"] == "ok");

  auto models = client.Get("/v1/models");
  REQUIRE(models);
  const auto mj = json::parse(models->body);
  CHECK(mj["object"] == "list");
  CHECK(mj["data"][0]["id"] == "tiny");
  CHECK(mj["data"][0]["object"] == "model");

  auto props = client.Get("/props");
  REQUIRE(props);
  CHECK(json::parse(props->body)["n_vocab"] == 1024);

  auto tok = client.Post("/tokenize", R"({"content":"Hello world","add_special":true})", "application/json");
  REQUIRE(tok);
  REQUIRE(tok->status == 200);
  const auto ids = json::parse(tok->body)["tokens"];
  REQUIRE(ids.size() >= 2);
  CHECK(ids[0] == 1);  // <s>

  auto detok = client.Post("/v1/detokenize", json{{"tokens", ids}}.dump(), "application/json");
  REQUIRE(detok);
  CHECK(json::parse(detok->body)["content"] == "Hello world");

  SECTION("tokenize with_pieces gives each id with its text or bytes") {
    for (const std::string content : {"Hello world", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"}) {
      INFO(content);
      const json plain = json::parse(client.Post("/tokenize", json{{"content", content}}.dump(), "application/json")->body);
      auto r = client.Post("/tokenize", json{{"content", content}, {"with_pieces", true}}.dump(), "application/json");
      REQUIRE(r);
      REQUIRE(r->status == 200);
      const json pieces = json::parse(r->body)["tokens"];
      REQUIRE(pieces.size() == plain["tokens"].size());
      std::string bytes;
      for (size_t i = 0; i < pieces.size(); ++i) {
        CHECK(pieces[i]["id"] == plain["tokens"][i]);
        const json& piece = pieces[i]["piece"];
        if (piece.is_string()) {
          bytes += piece.get<std::string>();
        } else {
          REQUIRE(piece.is_array());  // a piece that is not valid UTF-8 alone
          for (const auto& b : piece) bytes += static_cast<char>(b.get<int>());
        }
      }
      // The pieces spell the text (SentencePiece adds a leading space).
      CHECK((bytes == content || bytes == " " + content));
    }
    auto bad = client.Post("/tokenize", R"({"content":"x","with_pieces":"yes"})", "application/json");
    REQUIRE(bad);
    CHECK(bad->status == 400);
  }

  SECTION("vLLM's tokenize and detokenize shapes") {
    const json llama_form = json::parse(
        client.Post("/tokenize", json{{"content", "Hello world"}, {"add_special", true}}.dump(), "application/json")
            ->body);
    auto r = client.Post("/tokenize", json{{"prompt", "Hello world"}}.dump(), "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    const json vllm = json::parse(r->body);
    CHECK(vllm["tokens"] == llama_form["tokens"]);  // vLLM adds BOS by default
    CHECK(vllm["count"] == vllm["tokens"].size());
    CHECK(vllm["max_model_len"] == json::parse(client.Get("/props")->body)["n_ctx"]);
    const json no_bos = json::parse(client.Post("/tokenize",
                                                json{{"prompt", "Hello world"}, {"add_special_tokens", false}}.dump(),
                                                "application/json")
                                        ->body);
    CHECK(no_bos["count"] == vllm["count"].get<int>() - 1);
    const json detok = json::parse(client.Post("/detokenize", json{{"tokens", no_bos["tokens"]}}.dump(),
                                               "application/json")
                                       ->body);
    CHECK(detok["prompt"] == "Hello world");
    CHECK(detok["content"] == "Hello world");

    // Chat messages count exactly what a chat completion's prompt uses.
    const json messages = {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi there"}}};
    auto chat_tok = client.Post("/tokenize", json{{"messages", messages}}.dump(), "application/json");
    REQUIRE(chat_tok);
    REQUIRE(chat_tok->status == 200);
    auto chat = client.Post("/v1/chat/completions", json{{"messages", messages}, {"max_tokens", 1}}.dump(),
                            "application/json");
    REQUIRE(chat);
    REQUIRE(chat->status == 200);
    CHECK(json::parse(chat_tok->body)["count"] == json::parse(chat->body)["usage"]["prompt_tokens"]);
    auto bad_messages = client.Post("/tokenize", R"({"messages":"hi"})", "application/json");
    REQUIRE(bad_messages);
    CHECK(bad_messages->status == 400);
    auto bad_flag = client.Post("/tokenize", R"({"prompt":"x","add_special_tokens":3})", "application/json");
    REQUIRE(bad_flag);
    CHECK(bad_flag->status == 400);
  }

  SECTION("errors are OpenAI error bodies") {
    auto bad_json = client.Post("/tokenize", "{not json", "application/json");
    REQUIRE(bad_json);
    CHECK(bad_json->status == 400);
    CHECK(json::parse(bad_json->body)["error"]["type"] == "invalid_request_error");
    auto wrong_type = client.Post("/tokenize", R"({"content":123})", "application/json");
    REQUIRE(wrong_type);
    CHECK(wrong_type->status == 400);
    CHECK(json::parse(wrong_type->body)["error"]["param"] == "content");
    auto bad_ids = client.Post("/detokenize", R"({"tokens":[1, 99999999]})", "application/json");
    REQUIRE(bad_ids);
    CHECK(bad_ids->status == 400);
    auto missing = client.Get("/v1/nothing-here");
    REQUIRE(missing);
    CHECK(missing->status == 404);
    CHECK(json::parse(missing->body)["error"]["message"].get<std::string>().find("/v1/nothing-here") !=
          std::string::npos);
    auto invalid_utf8 = client.Post("/tokenize", "{\"content\":\"a\xff\xfe b\"}", "application/json");
    REQUIRE(invalid_utf8);
    CHECK(invalid_utf8->status == 400);  // JSON text must be UTF-8
  }

  CHECK(server.stop() == 0);
}

TEST_CASE("serve logs one structured line per request with --log-format json", "[integration][serve][log]") {
  const auto dir = tc::test::scratch_dir("serve_json_log");
  const auto model = tc::test::make_test_model(
      dir, "tiny", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
  tc::test::ServerProcess server(model, {"--alias", "tiny", "--log-format", "json", "--api-key", "k1"}, dir);
  httplib::Client client = server.client();
  const httplib::Headers auth = {{"Authorization", "Bearer k1"}};
  auto models = client.Get("/v1/models", auth);
  REQUIRE(models);
  CHECK(models->status == 200);
  auto denied = client.Get("/v1/models");  // no key
  REQUIRE(denied);
  CHECK(denied->status == 401);
  auto missing = client.Get("/v1/nothing-here", auth);
  REQUIRE(missing);
  CHECK(missing->status == 404);
  const json request = {{"prompt", "Hello"}, {"max_tokens", 4}, {"temperature", 0}};
  auto completion = client.Post("/v1/completions", auth, request.dump(), "application/json");
  REQUIRE(completion);
  REQUIRE(completion->status == 200);
  const std::string completion_id = json::parse(completion->body)["id"];
  auto bad = client.Post("/v1/completions", auth, R"({"prompt": 5})", "application/json");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  // Every request is counted too, the routes that do not generate included.
  auto metrics = client.Get("/metrics", auth);
  REQUIRE(metrics);
  for (const char* series : {R"(thermocline_http_requests_total{route="/v1/models",status="200"} 1)",
                             R"(thermocline_http_requests_total{route="/v1/models",status="401"} 1)",
                             R"(thermocline_http_requests_total{route="other",status="404"} 1)",
                             R"(thermocline_http_requests_total{route="/v1/completions",status="200"} 1)",
                             R"(thermocline_http_requests_total{route="/v1/completions",status="400"} 1)"}) {
    INFO(series);
    CHECK(metrics->body.find(series) != std::string::npos);
  }
  CHECK(server.stop() == 0);

  // Every log line (stderr; the fixture's file also holds the curl hint
  // printed on stdout) is a JSON object; the request lines carry fields.
  std::vector<json> requests;
  std::istringstream lines(server.log());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("try: ") || line.starts_with("  ")) continue;
    const json j = json::parse(line, nullptr, false);
    INFO(line);
    REQUIRE(j.is_object());
    CHECK(j.contains("time"));
    CHECK(j.contains("level"));
    if (j.value("event", "") == "request") requests.push_back(j);
  }
  auto find = [&](const std::string& route, int status) -> const json* {
    for (const auto& r : requests) {
      if (r["route"] == route && r["status"] == status) return &r;
    }
    return nullptr;
  };
  const json* m = find("/v1/models", 200);
  REQUIRE(m);
  CHECK((*m)["method"] == "GET");
  CHECK((*m)["total_s"].is_number());
  REQUIRE(find("/v1/models", 401));
  REQUIRE(find("other", 404));
  const json* c = find("/v1/completions", 200);
  REQUIRE(c);
  CHECK((*c)["id"] == completion_id);
  CHECK((*c)["prompt_tokens"].get<int>() >= 2);
  CHECK((*c)["completion_tokens"].get<int>() >= 1);
  CHECK((*c)["queue_s"].is_number());
  CHECK((*c)["ttft_s"].get<double>() >= (*c)["queue_s"].get<double>());
  CHECK((*c)["total_s"].get<double>() >= (*c)["ttft_s"].get<double>() - (*c)["queue_s"].get<double>());
  const json* b = find("/v1/completions", 400);
  REQUIRE(b);
  CHECK(b->contains("error"));
  CHECK_FALSE(b->contains("queue_s"));  // never reached the engine
}
