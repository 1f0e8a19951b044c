// The HTTP contract of openai-api.md against the real binary: "Test coverage
// to match" (stream equals non-stream, stream invariants, the malformed
// messages matrix, logprobs, context overflow, emoji/CJK, stop strings across
// token boundaries, parallel clients with one seed, cancellation flood,
// memory growth), plus queue-full 503, n, prompt arrays, prefix reuse,
// metrics and SIGTERM.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <future>
#include <thread>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::post_stream;
using tc::test::ServerProcess;

namespace {

const char* kModelFlags = "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 11";

std::filesystem::path test_model() {
  static const auto dir = tc::test::scratch_dir("openai_api");
  return tc::test::make_test_model(dir, "tiny", kModelFlags);
}

// Polls /metrics until the engine runs `n` requests; false after 20 s.
bool wait_for_running(ServerProcess& server, int n) {
  auto c = server.client();
  const std::string line = "thermocline_requests_running " + std::to_string(n) + "\n";
  for (int i = 0; i < 2000; ++i) {
    const auto m = c.Get("/metrics");
    if (m && m->body.find(line) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

json user_chat(const std::string& content, json extra = json::object()) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", content}}})}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

// The text of a streamed response, with the invariants of openai-api.md checked.
std::string check_stream_invariants(const tc::test::SseResponse& s, bool chat, bool usage) {
  REQUIRE(s.status == 200);
  CHECK(s.content_type.find("text/event-stream") == 0);
  REQUIRE(!s.data.empty());
  CHECK(s.data.back() == "[DONE]");
  REQUIRE(!s.events.empty());
  const auto id = s.events.front()["id"];
  const auto created = s.events.front()["created"];
  std::string text;
  int finishes = 0;
  for (size_t i = 0; i < s.events.size(); ++i) {
    const auto& e = s.events[i];
    REQUIRE(e.is_object());
    CHECK(e["id"] == id);
    CHECK(e["created"] == created);
    CHECK(e["object"] == (chat ? "chat.completion.chunk" : "text_completion"));
    if (e["choices"].empty()) {
      CHECK(usage);
      CHECK(i + 1 == s.events.size());  // the usage chunk comes last
      CHECK(e["usage"]["total_tokens"] ==
            e["usage"]["prompt_tokens"].get<int>() + e["usage"]["completion_tokens"].get<int>());
      continue;
    }
    const auto& c = e["choices"][0];
    if (chat) {
      CHECK(c["delta"].contains("role") == (i == 0));
      if (c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
    } else {
      text += c["text"].get<std::string>();
    }
    if (!c["finish_reason"].is_null()) {
      ++finishes;
      if (chat) CHECK(c["delta"] == json::object());
    }
  }
  CHECK(finishes == 1);
  if (usage) CHECK(s.events.back()["choices"].empty());
  return text;
}

}  // namespace

TEST_CASE("streamed text equals the non-streamed text, with the stream invariants", "[integration][api]") {
  ServerProcess server(test_model(), {"--alias", "tiny"}, tc::test::scratch_dir("openai_api_logs"));
  auto client = server.client();
  for (const bool chat : {true, false}) {
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    json body = chat ? user_chat("Tell me a story about a hacker.") : json{{"prompt", "The hacker said"}};
    body["max_tokens"] = 24;
    body["temperature"] = 0.9;
    body["seed"] = 1234;
    body["ignore_eos"] = true;
    const auto whole = post_json(client, path, body);
    REQUIRE(whole.status == 200);
    const auto& choice = whole.body["choices"][0];
    const std::string text = chat ? choice["message"]["content"] : choice["text"];
    CHECK(choice["finish_reason"] == "length");
    CHECK(whole.body["usage"]["completion_tokens"] == 24);
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    const auto streamed = post_stream(client, path, body);
    CHECK(check_stream_invariants(streamed, chat, true) == text);
    CHECK(streamed.events.back()["usage"]["completion_tokens"] == 24);
  }
  CHECK(server.stop() == 0);
}

TEST_CASE("malformed requests are 400s with OpenAI error bodies", "[integration][api]") {
  ServerProcess server(test_model(), {}, tc::test::scratch_dir("openai_api_logs"));
  auto client = server.client();
  const std::vector<json> bad_messages = {nullptr, "hello", json::array({123}), json::array({json::object()}),
                                          json::array({{{"role", 123}, {"content", "x"}}}),
                                          json::array({{{"role", "user"}, {"content", 123}}})};
  for (const auto& m : bad_messages) {
    json body = {{"messages", m}};
    for (const bool stream : {false, true}) {
      body["stream"] = stream;
      const auto r = post_json(client, "/v1/chat/completions", body);
      INFO(body.dump());
      CHECK(r.status == 400);
      CHECK(r.body["error"]["type"] == "invalid_request_error");
      CHECK(r.body["error"]["message"].is_string());
    }
  }
  auto raw = client.Post("/v1/chat/completions", "{\"messages\": [", "application/json");
  REQUIRE(raw);
  CHECK(raw->status == 400);
  raw = client.Post("/v1/completions", "{\"prompt\":\"a\xff\xfe\"}", "application/json");
  REQUIRE(raw);
  CHECK(raw->status == 400);
  const auto wrong_model = post_json(client, "/v1/chat/completions", user_chat("hi", {{"model", "gpt-17"}}));
  CHECK(wrong_model.status == 404);
  CHECK(wrong_model.body["error"]["code"] == "model_not_found");
  const auto huge = post_json(client, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1e18}});
  CHECK(huge.status == 400);
  // 400 KB of tools nested 200,000 arrays deep (it used to overflow the handler's stack and kill
  // the server), on a generation route and an info one; the server answers the next request.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const char* route : {"/v1/chat/completions", "/tokenize"}) {
    const std::string body = std::string(route) == "/tokenize"
                                 ? "{\"content\": \"x\", \"extra\": " + deep + "}"
                                 : "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tools\": [" + deep + "]}";
    raw = client.Post(route, body, "application/json");
    INFO(route);
    REQUIRE(raw);
    CHECK(raw->status == 400);
    const json err = json::parse(raw->body, nullptr, false);
    CHECK_THAT(err["error"]["message"].get<std::string>(), Catch::Contains("levels deep"));
  }
  CHECK(post_json(client, "/v1/chat/completions", user_chat("hi", {{"max_tokens", 1}})).status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("logprobs: none, zero, some, too many", "[integration][api]") {
  ServerProcess server(test_model(), {}, tc::test::scratch_dir("openai_api_logs"));
  auto client = server.client();
  const json base = user_chat("hello", {{"max_tokens", 5}, {"seed", 3}, {"ignore_eos", true}});
  auto none = post_json(client, "/v1/chat/completions", base);
  REQUIRE(none.status == 200);
  CHECK(none.body["choices"][0]["logprobs"].is_null());

  json zero = base;
  zero["logprobs"] = true;
  auto r = post_json(client, "/v1/chat/completions", zero);
  REQUIRE(r.status == 200);
  auto content = r.body["choices"][0]["logprobs"]["content"];
  REQUIRE(content.size() == 5);
  std::string joined;
  for (const auto& t : content) {
    CHECK(t["logprob"].get<double>() <= 0.0);
    CHECK(t["top_logprobs"].empty());
    joined += t["token"].get<std::string>();
  }
  CHECK(joined == r.body["choices"][0]["message"]["content"].get<std::string>());

  json some = base;
  some["logprobs"] = true;
  some["top_logprobs"] = 3;
  r = post_json(client, "/v1/chat/completions", some);
  REQUIRE(r.status == 200);
  for (const auto& t : r.body["choices"][0]["logprobs"]["content"]) {
    REQUIRE(t["top_logprobs"].size() == 3);
    CHECK(t["top_logprobs"][0]["logprob"].get<double>() >= t["top_logprobs"][2]["logprob"].get<double>());
  }
  json too_many = some;
  too_many["top_logprobs"] = 21;
  CHECK(post_json(client, "/v1/chat/completions", too_many).status == 400);

  r = post_json(client, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 4}, {"logprobs", 2}, {"seed", 1}});
  REQUIRE(r.status == 200);
  const auto& lp = r.body["choices"][0]["logprobs"];
  CHECK(lp["tokens"].size() == lp["token_logprobs"].size());
  CHECK(lp["top_logprobs"][0].size() == 2);
  CHECK(post_json(client, "/v1/completions", {{"prompt", "hi"}, {"logprobs", 50}}).status == 400);
  CHECK(server.stop() == 0);
}

TEST_CASE("context overflow is a 400 before any stream starts", "[integration][api]") {
  ServerProcess server(test_model(), {"--ctx-size", "64"}, tc::test::scratch_dir("openai_api_logs"));
  auto client = server.client();
  std::string long_prompt;
  for (int i = 0; i < 60; ++i) long_prompt += "word ";
  for (const bool stream : {false, true}) {
    const auto r =
        post_json(client, "/v1/completions", {{"prompt", long_prompt}, {"max_tokens", 32}, {"stream", stream}});
    CHECK(r.status == 400);
    CHECK(r.body["error"]["code"] == "context_length_exceeded");
    const auto chat = post_json(client, "/v1/chat/completions", user_chat(long_prompt, {{"stream", stream}}));
    CHECK(chat.status == 400);
    CHECK(chat.body["error"]["code"] == "context_length_exceeded");
  }
  // Without max_tokens a chat request gets what is left of the context.
  const auto fits = post_json(client, "/v1/chat/completions", user_chat("hi", {{"ignore_eos", true}}));
  REQUIRE(fits.status == 200);
  CHECK(fits.body["usage"]["total_tokens"] == 64);
  CHECK(fits.body["choices"][0]["finish_reason"] == "length");
  CHECK(server.stop() == 0);
}

TEST_CASE("emoji and CJK survive streaming whole", "[integration][api]") {
  ServerProcess server(test_model(), {}, tc::test::scratch_dir("openai_api_logs"));
  auto client = server.client();
  const std::string prompt = "Grüße 😀🎉 你好，世界 こんにちは";
  json body = {{"prompt", prompt}, {"max_tokens", 16}, {"echo", true}, {"seed", 5}, {"ignore_eos", true}};
  const auto whole = post_json(client, "/v1/completions", body);
  REQUIRE(whole.status == 200);
  const std::string text = whole.body["choices"][0]["text"];
  CHECK(text.rfind(prompt, 0) == 0);  // echo
  body["stream"] = true;
  const auto streamed = post_stream(client, "/v1/completions", body);
  CHECK(check_stream_invariants(streamed, false, false) == text);
  // The model's byte tokens may form any UTF-8; every chunk must be whole.
  for (const auto& e : streamed.events) {
    CHECK_NOTHROW(json::parse(e.dump()));
  }
  const auto chat = post_stream(client, "/v1/chat/completions", user_chat(prompt, {{"stream", true}, {"max_tokens", 8}}));
  check_stream_invariants(chat, true, false);
  CHECK(server.stop() == 0);
}

TEST_CASE("stop strings cut exactly, also across token boundaries", "[integration][api]") {
  ServerProcess server(test_model(), {}, tc::test::scratch_dir("openai_api_logs"));
  auto client = server.client();
  json body = {{"prompt", "The jargon file says"}, {"max_tokens", 24}, {"seed", 9}, {"logprobs", 0},
               {"temperature", 0}, {"ignore_eos", true}};
  const auto full = post_json(client, "/v1/completions", body);
  REQUIRE(full.status == 200);
  const std::string text = full.body["choices"][0]["text"];
  const auto tokens = full.body["choices"][0]["logprobs"]["tokens"];
  // A stop string made of the end of token k and the start of token k+1.
  std::string stop;
  for (size_t k = 2; k + 1 < tokens.size() && stop.empty(); ++k) {
    const std::string a = tokens[k], b = tokens[k + 1];
    if (a.size() >= 2 && !b.empty() && static_cast<unsigned char>(a.back()) < 0x80 &&
        static_cast<unsigned char>(b.front()) < 0x80) {
      stop = a.substr(a.size() - 1) + b.substr(0, 1);
    }
  }
  REQUIRE_FALSE(stop.empty());
  const std::string expected = text.substr(0, text.find(stop));
  body.erase("logprobs");
  body["stop"] = json::array({"never-appears-here", stop});
  const auto cut = post_json(client, "/v1/completions", body);
  REQUIRE(cut.status == 200);
  CHECK(cut.body["choices"][0]["text"] == expected);
  CHECK(cut.body["choices"][0]["finish_reason"] == "stop");
  body["stream"] = true;
  CHECK(check_stream_invariants(post_stream(client, "/v1/completions", body), false, false) == expected);
  CHECK(server.stop() == 0);
}

TEST_CASE("parallel clients with the same seed get the same output", "[integration][api]") {
  ServerProcess server(test_model(), {"--parallel", "4"}, tc::test::scratch_dir("openai_api_logs"));
  const json body = user_chat("Same seed, same tokens", {{"max_tokens", 16}, {"seed", 77}, {"temperature", 1.0},
                                                         {"ignore_eos", true}});
  auto alone = server.client();
  const auto reference = post_json(alone, "/v1/chat/completions", body);
  INFO(body.dump() << " -> " << reference.raw);
  REQUIRE(reference.status == 200);
  std::vector<std::future<tc::test::JsonResponse>> futures;
  for (int i = 0; i < 16; ++i) {
    futures.push_back(std::async(std::launch::async, [&server, &body, i] {
      auto c = server.client();
      json b = body;
      // Half of them with a different request beside them in the batch.
      if (i % 2 == 1) b["seed"] = 1000 + i;
      return post_json(c, "/v1/chat/completions", b);
    }));
  }
  for (int i = 0; i < 16; ++i) {
    const auto r = futures[static_cast<size_t>(i)].get();
    INFO("request " << i << ": " << r.error << " " << r.raw << "\nserver log:\n" << server.log());
    REQUIRE(r.status == 200);
    if (i % 2 == 0) CHECK(r.body["choices"][0]["message"] == reference.body["choices"][0]["message"]);
  }
  CHECK(server.stop() == 0);
}

TEST_CASE("n choices, prompt arrays and prefix reuse", "[integration][api]") {
  ServerProcess server(test_model(), {}, tc::test::scratch_dir("openai_api_logs"));
  auto client = server.client();
  auto r = post_json(client, "/v1/completions",
                     {{"prompt", {"first", "second"}}, {"n", 2}, {"max_tokens", 3}, {"seed", 1}});
  REQUIRE(r.status == 200);
  REQUIRE(r.body["choices"].size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(r.body["choices"][i]["index"] == i);
  r = post_json(client, "/v1/completions", {{"prompt", {1, 50, 60}}, {"max_tokens", 2}});
  CHECK(r.status == 200);

  const json turn1 = {{"messages", {{{"role", "system"}, {"content", "You are a helpful assistant."}},
                                    {{"role", "user"}, {"content", "What is a hacker?"}}}},
                      {"max_tokens", 8},
                      {"seed", 2}};
  const auto first = post_json(client, "/v1/chat/completions", turn1);
  REQUIRE(first.status == 200);
  json turn2 = turn1;
  turn2["messages"].push_back(first.body["choices"][0]["message"]);
  turn2["messages"].push_back({{"role", "user"}, {"content", "And a wizard?"}});
  const auto second = post_json(client, "/v1/chat/completions", turn2);
  REQUIRE(second.status == 200);
  CHECK(second.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() >=
        first.body["usage"]["prompt_tokens"].get<int>() - 1);
  CHECK(server.stop() == 0);
}

TEST_CASE("a full queue answers 503 with Retry-After", "[integration][api]") {
  ServerProcess server(test_model(), {"--parallel", "1", "--queue-size", "1"}, tc::test::scratch_dir("openai_api_logs"));
  // A long request holds the only slot first, so that of the six that follow
  // one can wait in the queue and the others find it full, however the
  // client threads are scheduled.
  auto blocker = std::async(std::launch::async, [&server] {
    auto c = server.client();
    return post_json(c, "/v1/completions", {{"prompt", "hold the slot"}, {"max_tokens", 1500}, {"ignore_eos", true}});
  });
  REQUIRE(wait_for_running(server, 1));
  const json slow = {{"prompt", "keep going"}, {"max_tokens", 400}, {"ignore_eos", true}};
  std::vector<std::future<tc::test::JsonResponse>> futures;
  for (int i = 0; i < 6; ++i) {
    futures.push_back(std::async(std::launch::async, [&server, &slow] {
      auto c = server.client();
      return post_json(c, "/v1/completions", slow);
    }));
  }
  int ok = 0, busy = 0;
  for (auto& f : futures) {
    const auto r = f.get();
    if (r.status == 200) ++ok;
    if (r.status == 503) {
      ++busy;
      CHECK(r.body["error"]["type"] == "unavailable_error");
      bool retry_after = false;
      for (const auto& [k, v] : r.headers) retry_after = retry_after || k == "Retry-After";
      CHECK(retry_after);
    }
  }
  CHECK(ok >= 1);
  CHECK(busy >= 1);
  CHECK(ok + busy == 6);
  CHECK(blocker.get().status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("a cancellation flood leaves the server prompt and its memory flat", "[integration][api]") {
  ServerProcess server(test_model(), {"--parallel", "4", "--queue-size", "256"}, tc::test::scratch_dir("openai_api_logs"));
  const json slow = {{"prompt", "a long answer please"}, {"max_tokens", 500}, {"ignore_eos", true}, {"stream", true}};
  auto warm = server.client();
  for (int i = 0; i < 10; ++i) {
    REQUIRE(post_json(warm, "/v1/completions", {{"prompt", "warm up"}, {"max_tokens", 4}}).status == 200);
  }
  const long rss_before = server.rss_bytes();
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&server, &slow, t] {
      json body = slow;
      body["stream"] = t % 2 == 0;  // streamed and not: both must notice the client leaving
      for (int i = 0; i < 25; ++i) {
        httplib::Client c("127.0.0.1", server.port());
        c.set_read_timeout(0, 30'000);  // gives up after 30 ms: the request is aborted mid-way
        c.Post("/v1/completions", body.dump(), "application/json");
      }
    });
  }
  for (auto& t : clients) t.join();
  // 200 aborted requests later, a normal one finishes promptly.
  const auto start = std::chrono::steady_clock::now();
  auto c = server.client();
  const auto r = post_json(c, "/v1/completions", {{"prompt", "still there?"}, {"max_tokens", 8}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.status == 200);
  CHECK(seconds < 10.0);
  const long rss_after = server.rss_bytes();
  INFO("RSS before " << rss_before << " after " << rss_after);
  CHECK(rss_after - rss_before < 20L * 1024 * 1024);
  // Every aborted request is gone from the engine shortly after its client left.
  std::string metrics;
  for (int i = 0; i < 40; ++i) {
    const auto m = c.Get("/metrics");
    REQUIRE(m);
    metrics = m->body;
    if (metrics.find("thermocline_requests_running 0\n") != std::string::npos &&
        metrics.find("thermocline_requests_waiting 0\n") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(metrics.find("thermocline_requests_running 0\n") != std::string::npos);
  CHECK(metrics.find("thermocline_requests_waiting 0\n") != std::string::npos);
  CHECK(metrics.find("status=\"499\"") != std::string::npos);
  CHECK(server.stop() == 0);
}

TEST_CASE("SIGTERM lets a running stream finish and exits 0", "[integration][api]") {
  ServerProcess server(test_model(), {"--shutdown-grace-s", "20"}, tc::test::scratch_dir("openai_api_logs"));
  auto future = std::async(std::launch::async, [&server] {
    auto c = server.client();
    return post_stream(c, "/v1/completions",
                       {{"prompt", "go"}, {"max_tokens", 1500}, {"ignore_eos", true}, {"stream", true}});
  });
  REQUIRE(wait_for_running(server, 1));  // SIGTERM while the stream runs
  CHECK(server.stop() == 0);
  const auto s = future.get();
  REQUIRE(s.status == 200);
  CHECK(s.data.back() == "[DONE]");
  check_stream_invariants(s, false, false);
}

TEST_CASE("a stream waiting for a slot gets SSE pings, then its answer", "[integration][api]") {
  // Pings every 5 ms: the blocker's 1500 tokens take tens of ms at least.
  ServerProcess server(test_model(), {"--parallel", "1", "--sse-ping-s", "0.005"},
                       tc::test::scratch_dir("openai_api_logs"));
  auto blocker = std::async(std::launch::async, [&server] {
    auto c = server.client();
    return post_json(c, "/v1/completions", {{"prompt", "hold the slot"}, {"max_tokens", 1500}, {"ignore_eos", true}});
  });
  REQUIRE(wait_for_running(server, 1));  // the blocker holds the only slot
  auto c = server.client();
  const auto waiting = post_stream(c, "/v1/completions", {{"prompt", "after you"}, {"max_tokens", 4}, {"stream", true}});
  check_stream_invariants(waiting, false, false);
  CHECK(waiting.raw.rfind(": ping\n\n", 0) == 0);  // pings come before the first data event
  CHECK(blocker.get().status == 200);
  CHECK(server.stop() == 0);
}
