// The per-request log line (server/request_log.h): its text and JSON forms,
// optional fields left out when absent, and error text that cannot break
// the line or forge fields.
#include "server/request_log.h"

#include <catch2/catch.hpp>

using tc::server::plain_request_line;
using tc::server::request_log_json;
using tc::server::request_log_text;
using tc::server::RequestLogLine;

namespace {

RequestLogLine generation_line() {
  RequestLogLine l;
  l.id = "chatcmpl-0123";
  l.method = "POST";
  l.route = "/v1/chat/completions";
  l.status = 200;
  l.prompt_tokens = 25;
  l.completion_tokens = 7;
  l.cached_tokens = 3;
  l.queue_s = 0.0125;
  l.ttft_s = 0.25;
  l.total_s = 1.5;
  return l;
}

}  // namespace

TEST_CASE("a generation request logs every field, as text and as JSON", "[server][log]") {
  const RequestLogLine l = generation_line();
  CHECK(request_log_text(l) ==
        "request chatcmpl-0123 POST /v1/chat/completions status=200 prompt_tokens=25 completion_tokens=7 "
        "cached_tokens=3 queue_s=0.013 ttft_s=0.250 total_s=1.500");
  const auto j = request_log_json(l);
  CHECK(j["event"] == "request");
  CHECK(j["id"] == "chatcmpl-0123");
  CHECK(j["method"] == "POST");
  CHECK(j["route"] == "/v1/chat/completions");
  CHECK(j["status"] == 200);
  CHECK(j["prompt_tokens"] == 25);
  CHECK(j["completion_tokens"] == 7);
  CHECK(j["cached_tokens"] == 3);
  CHECK(j["queue_s"] == 0.0125);  // numbers, not rounded text
  CHECK(j["ttft_s"] == 0.25);
  CHECK(j["total_s"] == 1.5);
  CHECK_FALSE(j.contains("error"));
}

TEST_CASE("a plain request logs no token counts or engine timings", "[server][log]") {
  const auto l = plain_request_line("GET", "/v1/models", 200, 0.0004);
  CHECK(request_log_text(l) == "request - GET /v1/models status=200 total_s=0.000");
  const auto j = request_log_json(l);
  CHECK(j["id"] == "-");
  for (const char* key : {"prompt_tokens", "completion_tokens", "cached_tokens", "queue_s", "ttft_s", "error"}) {
    INFO(key);
    CHECK_FALSE(j.contains(key));
  }
}

TEST_CASE("an error message cannot break the log line or forge fields", "[server][log]") {
  const auto l = plain_request_line("POST", "/v1/completions", 400, 0.001, "bad \"x\"\nrequest - GET /health status=200");
  const std::string text = request_log_text(l);
  CHECK(text.find('\n') == std::string::npos);
  CHECK(text == "request - POST /v1/completions status=400 total_s=0.001 "
                "error=\"bad \\\"x\\\"\\nrequest - GET /health status=200\"");
  CHECK(request_log_json(l)["error"] == "bad \"x\"\nrequest - GET /health status=200");
}
