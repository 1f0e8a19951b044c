// API keys (Bearer and X-Api-Key), CORS origins, and route path patterns.
#include <catch2/catch.hpp>

#include <regex>

#include "server/access.h"
#include "server/metrics.h"
#include "server/route_paths.h"

using namespace tc::server;

TEST_CASE("API keys: off when none, Bearer or X-Api-Key when set", "[server][access]") {
  CHECK(api_key_accepted({}, "", ""));
  const std::vector<std::string> keys = {"alpha", "beta-2"};
  CHECK(api_key_accepted(keys, "Bearer alpha", ""));
  CHECK(api_key_accepted(keys, "bearer beta-2", ""));
  CHECK(api_key_accepted(keys, "  Bearer   alpha  ", ""));
  CHECK(api_key_accepted(keys, "", "beta-2"));
  CHECK_FALSE(api_key_accepted(keys, "", ""));
  CHECK_FALSE(api_key_accepted(keys, "Bearer alph", ""));
  CHECK_FALSE(api_key_accepted(keys, "Bearer alphaa", ""));
  CHECK_FALSE(api_key_accepted(keys, "Basic alpha", ""));
  CHECK_FALSE(api_key_accepted(keys, "Bearer ", ""));
  CHECK_FALSE(api_key_accepted(keys, "alpha", ""));
  CHECK_FALSE(api_key_accepted(keys, "", "gamma"));
}

TEST_CASE("CORS: listed origins, wildcard, or nothing", "[server][access]") {
  CHECK(cors_allow_origin({}, "http://a.test") == "");
  CHECK(cors_allow_origin({"http://a.test"}, "http://a.test") == "http://a.test");
  CHECK(cors_allow_origin({"http://a.test"}, "http://b.test") == "");
  CHECK(cors_allow_origin({"*"}, "http://b.test") == "*");
  CHECK(cors_allow_origin({"*"}, "") == "");
}

TEST_CASE("route patterns accept /v1, repeated and trailing slashes", "[server][routes]") {
  const std::regex chat(route_pattern("chat/completions"));
  CHECK(std::regex_match("/v1/chat/completions", chat));
  CHECK(std::regex_match("/chat/completions", chat));
  CHECK(std::regex_match("//v1//chat/completions/", chat));
  CHECK_FALSE(std::regex_match("/v1/completions", chat));
  CHECK_FALSE(std::regex_match("/v2/chat/completions", chat));
  CHECK(canonical_route("//v1//chat/completions/") == "/v1/chat/completions");
  CHECK(canonical_route("/") == "/");
}

TEST_CASE("metric route labels are the server's routes or 'other'", "[server][routes]") {
  CHECK(route_label("//v1//chat/completions/") == "/v1/chat/completions");
  CHECK(route_label("/tokenize") == "/tokenize");
  CHECK(route_label("/v1/embeddings") == "/v1/embeddings");
  CHECK(route_label("/v1/models") == "/v1/models");
  // Arbitrary paths (401s are counted before routing) must not become label values.
  CHECK(route_label("/x\"y\nz") == "other");
  CHECK(route_label("/v1/secret-probe-12345") == "other");
  CHECK(route_label("/v1") == "other");
  // The web page and the engine view.
  CHECK(route_label("/") == "/");
  CHECK(route_label("//") == "/");
  CHECK(route_label("/v1/engine/stats") == "/v1/engine/stats");
  CHECK(route_label("/engine/firing_curve/") == "/engine/firing_curve");
  CHECK(route_label("/webui/app.js") == "other");
}

TEST_CASE("metrics render Prometheus text with cumulative buckets", "[server][metrics]") {
  Metrics m;
  RequestRecord r;
  r.route = "/v1/completions";
  r.generated = true;
  r.queue_seconds = 0.002;
  r.first_token_seconds = 0.03;
  r.total_seconds = 0.5;
  r.completion_tokens = 11;
  m.record(r);
  r.status = 400;
  r.generated = false;
  m.record(r);
  tc::runtime::EngineStats stats;
  stats.state = tc::runtime::EngineState::Ready;
  stats.generated_tokens_total = 11;
  stats.kv_tokens_used = 5;
  stats.kv_tokens_capacity = 20;
  const std::string text = m.render(stats);
  CHECK(text.find("thermocline_http_requests_total{route=\"/v1/completions\",status=\"200\"} 1") != std::string::npos);
  CHECK(text.find("thermocline_http_requests_total{route=\"/v1/completions\",status=\"400\"} 1") != std::string::npos);
  CHECK(text.find("thermocline_generation_tokens_total 11") != std::string::npos);
  CHECK(text.find("thermocline_kv_cache_usage_ratio 0.25") != std::string::npos);
  // TTFT = queue + first token = 0.032 s: not in the 0.025 bucket, in 0.05 and above.
  CHECK(text.find("thermocline_time_to_first_token_seconds_bucket{le=\"0.025\"} 0") != std::string::npos);
  CHECK(text.find("thermocline_time_to_first_token_seconds_bucket{le=\"0.05\"} 1") != std::string::npos);
  CHECK(text.find("thermocline_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1") != std::string::npos);
  CHECK(text.find("thermocline_inter_token_latency_seconds_count 1") != std::string::npos);
}
