// `thermocline serve` as a user runs it: starts on a generated model, answers
// its routes with the right bodies and OpenAI errors, stops on SIGTERM with
// exit status 0.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

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
