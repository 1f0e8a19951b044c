// HttpServer before a model is published and after loading failed: every
// route answers an OpenAI error, 503 with Retry-After while loading (a
// client should come back), 500 without it once loading failed (/health:
// 503, as load balancers read only the status, without Retry-After).
#include "server/http_server.h"

#include <catch2/catch.hpp>

#include <httplib.h>

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/serve_options.h"

TEST_CASE("while loading every route answers 503 with Retry-After, after a failed load 500", "[server]") {
  tc::config::ServeOptions options;
  options.host = "127.0.0.1";
  options.port = 0;  // any free port
  tc::server::HttpServer server(options);
  std::promise<void> ready;
  std::thread serving([&] { server.run([&] { ready.set_value(); }); });
  REQUIRE(ready.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  httplib::Client client("127.0.0.1", server.bound_port());

  for (const char* path : {"/health", "/v1/models", "/props"}) {
    INFO(path);
    auto r = client.Get(path);
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(r->get_header_value("Retry-After") == "1");
    CHECK(nlohmann::json::parse(r->body)["error"]["type"] == "unavailable_error");
  }
  auto chat = client.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})",
                          "application/json");
  REQUIRE(chat);
  CHECK(chat->status == 503);
  CHECK(chat->get_header_value("Retry-After") == "1");

  server.set_load_error("cannot read weights.gguf");
  auto models = client.Get("/v1/models");
  REQUIRE(models);
  CHECK(models->status == 500);
  CHECK_FALSE(models->has_header("Retry-After"));
  auto health = client.Get("/health");  // load balancers read only the status: 503, not to be retried soon
  REQUIRE(health);
  CHECK(health->status == 503);
  CHECK_FALSE(health->has_header("Retry-After"));
  CHECK(nlohmann::json::parse(models->body)["error"]["message"].get<std::string>().find("weights.gguf") !=
        std::string::npos);

  server.stop();
  serving.join();
}
