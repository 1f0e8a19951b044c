// Streams whose model is still loading, through the real server: a models
// folder whose loads are slowed by the test hook THERMOCLINE_TEST_LOAD_DELAY_MS
// (server/model_loader.h). A streaming /v1/chat/completions gets ": ping"
// comments before its first event, then the stream the same request gets
// once the model is loaded; an Ollama /api/chat stream (NDJSON has no
// comments) sends nothing but its JSON lines, with load_duration covering
// the wait. Requests that wait past --load-timeout-s get a 503 (a stream:
// an error event after its pings) while the load goes on; a non-streamed
// request whose client leaves stops waiting at once.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/raw_client.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kLoadDelayMs = 1500;
constexpr const char* kPing = ": ping\n\n";

json chat_body(const std::string& model, bool stream) {
  return {{"model", model},
          {"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})},
          {"max_tokens", 6},
          {"temperature", 0},
          {"stream", stream}};
}

json ollama_chat_body(const std::string& model, bool stream) {
  return {{"model", model},
          {"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})},
          {"options", {{"num_predict", 6}, {"temperature", 0}}},
          {"stream", stream}};
}

// The value of the series `name{model="MODEL"}` in /metrics; -1 if absent.
int64_t model_metric(httplib::Client& client, const std::string& name, const std::string& model) {
  const auto r = client.Get("/metrics");
  REQUIRE(r);
  const std::string key = name + "{model=\"" + model + "\"} ";
  const size_t at = r->body.find(key);
  return at == std::string::npos ? -1 : std::stoll(r->body.substr(at + key.size()));
}

// A models folder of model a and copies of it (`copies`), served with
// every load slowed by `load_delay_ms` (THERMOCLINE_TEST_LOAD_DELAY_MS),
// pings each 50 ms, and `extra` flags.
struct SlowFolder {
  std::unique_ptr<tc::test::ServerProcess> server;
  SlowFolder(const std::string& name, const std::vector<std::string>& copies, int load_delay_ms,
             const std::vector<std::string>& extra) {
    const auto dir = tc::test::scratch_dir(name);
    const auto models = dir / "models";
    fs::create_directories(models);
    const auto a = tc::test::make_test_model(
        models, "a", "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 21");
    for (const auto& copy : copies) fs::copy_file(a, models / (copy + ".gguf"));
    tc::test::ServerLaunch launch;
    launch.env = {"THERMOCLINE_TEST_LOAD_DELAY_MS=" + std::to_string(load_delay_ms)};
    std::vector<std::string> args = {"--models-dir", models.string(), "--ctx-size", "256", "--threads", "1",
                                     "--sse-ping-s", "0.05"};
    args.insert(args.end(), extra.begin(), extra.end());
    server = std::make_unique<tc::test::ServerProcess>(launch, fs::path{}, args, dir);
  }
};

}  // namespace

TEST_CASE("streams waiting for a slow model load: SSE pings first, then the stream, and Ollama NDJSON stays clean",
          "[integration][models_dir]") {
  SlowFolder folder("models_dir_stream", {"b"}, kLoadDelayMs, {"--max-loaded-models", "2"});
  auto& server = *folder.server;
  auto client = server.client();

  {  // OpenAI: pings while a loads, then the chat stream
    const auto s = tc::test::post_stream(client, "/v1/chat/completions", chat_body("a", true));
    REQUIRE(s.status == 200);
    CHECK(s.content_type.find("text/event-stream") == 0);
    const size_t first_data = s.raw.find("data: ");
    REQUIRE(first_data != std::string::npos);
    // Before the first event: pings and nothing else (a ping each 50 ms of a 1.5 s load).
    const std::string before = s.raw.substr(0, first_data);
    const std::string ping = kPing;
    size_t n_pings = 0;
    while ((n_pings + 1) * ping.size() <= before.size() &&
           before.compare(n_pings * ping.size(), ping.size(), ping) == 0) {
      ++n_pings;
    }
    INFO(before);
    CHECK(before.size() == n_pings * ping.size());
    CHECK(n_pings >= 2);
    REQUIRE_FALSE(s.data.empty());
    CHECK(s.data.back() == "[DONE]");
    std::string text, finish_reason;
    for (const auto& ev : s.events) {
      REQUIRE(ev.contains("choices"));
      CHECK(ev["object"] == "chat.completion.chunk");
      for (const auto& c : ev["choices"]) {
        if (c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
        if (!c["finish_reason"].is_null()) finish_reason = c["finish_reason"].get<std::string>();
      }
    }
    CHECK((finish_reason == "length" || finish_reason == "stop"));
    // The same request with the model loaded, in one body: the same text.
    const auto once = tc::test::post_json(client, "/v1/chat/completions", chat_body("a", false));
    REQUIRE(once.status == 200);
    CHECK(text == once.body["choices"][0]["message"]["content"].get<std::string>());
  }

  {  // Ollama: no comments in NDJSON, only its lines once b has loaded
    auto r = client.Post("/api/chat", ollama_chat_body("b", true).dump(), "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(r->get_header_value("Content-Type").find("application/x-ndjson") == 0);
    std::vector<json> lines;
    std::istringstream in(r->body);
    std::string line;
    while (std::getline(in, line)) {
      INFO(line);
      REQUIRE_FALSE(line.empty());
      const json j = json::parse(line, nullptr, false);
      REQUIRE_FALSE(j.is_discarded());
      lines.push_back(j);
    }
    REQUIRE(lines.size() >= 2);
    std::string text;
    for (size_t i = 0; i < lines.size(); ++i) {
      CHECK(lines[i]["model"] == "b");
      CHECK(lines[i]["done"] == (i + 1 == lines.size()));
      text += lines[i]["message"].value("content", "");
    }
    // Nanoseconds: the wait for the load, which took the hook's delay at least.
    CHECK(lines.back()["load_duration"].get<int64_t>() >= int64_t{kLoadDelayMs} * 1000000);
    // Each line's created_at is the time it was made, as Ollama's (RFC 3339
    // at a fixed width: the strings order as the times do).
    for (size_t i = 1; i < lines.size(); ++i) {
      CHECK(lines[i - 1]["created_at"].get<std::string>() <= lines[i]["created_at"].get<std::string>());
    }
    CHECK(lines.front()["created_at"] != lines.back()["created_at"]);
    auto once = client.Post("/api/chat", ollama_chat_body("b", false).dump(), "application/json");
    REQUIRE(once);
    REQUIRE(once->status == 200);
    CHECK(text == json::parse(once->body)["message"]["content"].get<std::string>());
  }
  CHECK(server.log().find("THERMOCLINE_TEST_LOAD_DELAY_MS is set") != std::string::npos);
  CHECK(server.stop() == 0);
}

TEST_CASE("requests waiting past --load-timeout-s get a 503 while the load goes on, a client that leaves stops waiting",
          "[integration][models_dir]") {
  // Loads run one at a time: d's first (5 s), then a's (5 s more).
  constexpr int kSlowLoadMs = 5000;
  SlowFolder folder("models_dir_load_timeout", {"d"}, kSlowLoadMs,
                    {"--max-loaded-models", "4", "--load-timeout-s", "2.5"});
  auto& server = *folder.server;
  auto client = server.client();

  {  // A non-streamed request for d whose client leaves while d loads.
    auto raw = std::make_unique<tc::test::RawConnection>(server.port());
    REQUIRE(raw->connected());
    const std::string body = chat_body("d", false).dump();
    REQUIRE(raw->send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    bool counted = false;
    for (int i = 0; i < 100 && !counted; ++i) {
      counted = model_metric(client, "thermocline_model_load_waiters", "d") == 1;
      if (!counted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(counted);
    const auto left = std::chrono::steady_clock::now();
    raw.reset();  // the client closes its connection
    bool gone = false;
    while (!gone && std::chrono::steady_clock::now() - left < std::chrono::seconds(3)) {
      gone = model_metric(client, "thermocline_model_load_waiters", "d") == 0;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - left).count();
    REQUIRE(gone);
    CHECK(seconds < 2.0);  // a look at the connection each 250 ms; the 2.5 s timeout did not end it
    CHECK(model_metric(client, "thermocline_model_load_timeouts_total", "d") == 0);
  }

  // Three requests wait for a, whose load ends 10 s in: each gives up after 2.5 s.
  auto plain = std::async(std::launch::async, [&] {
    auto c = server.client();
    return c.Post("/v1/chat/completions", chat_body("a", false).dump(), "application/json");
  });
  auto stream = std::async(std::launch::async, [&] {
    auto c = server.client();
    return tc::test::post_stream(c, "/v1/chat/completions", chat_body("a", true));
  });
  auto ollama = std::async(std::launch::async, [&] {
    auto c = server.client();
    return c.Post("/api/chat", ollama_chat_body("a", false).dump(), "application/json");
  });
  {  // OpenAI, one body: 503 with an OpenAI error naming the model and the limit, and Retry-After.
    const auto r = plain.get();
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(r->get_header_value("Retry-After") == "1");
    const json error = json::parse(r->body)["error"];
    CHECK(error["code"] == "model_load_timeout");
    CHECK(error["type"] == "unavailable_error");
    CHECK(error["message"] == "the model 'a' is still loading after 2.5 s (load_timeout_s); try again later");
  }
  {  // OpenAI stream: it began (200, pings), so the timeout is its one error event.
    const auto s = stream.get();
    CHECK(s.status == 200);
    INFO(s.raw);
    CHECK(s.raw.rfind(kPing, 0) == 0);
    CHECK(s.raw.find("model_load_timeout") != std::string::npos);
    CHECK(s.raw.find("chat.completion.chunk") == std::string::npos);
  }
  {  // Ollama: its error body.
    const auto r = ollama.get();
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(json::parse(r->body)["error"].get<std::string>().find("still loading after 2.5 s") != std::string::npos);
  }
  CHECK(model_metric(client, "thermocline_model_load_timeouts_total", "a") == 3);

  // The loads went on: once a is loaded, the same request is answered.
  bool loaded = false;
  for (int i = 0; i < 300 && !loaded; ++i) {  // up to 30 s
    const auto r = client.Get("/metrics");
    REQUIRE(r);
    loaded = r->body.find("thermocline_model_state{model=\"a\",state=\"loaded\"} 1") != std::string::npos;
    if (!loaded) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(loaded);
  const auto once = tc::test::post_json(client, "/v1/chat/completions", chat_body("a", false));
  CHECK(once.status == 200);
  CHECK(server.stop() == 0);
}
