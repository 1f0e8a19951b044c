// Sloppy and hostile clients against the real `thermocline serve`, over
// loopback, with raw sockets: keep-alive latency, pipelining, framing errors
// (conflicting or invalid Content-Length, Content-Length with
// Transfer-Encoding, bad chunk sizes), malformed and oversized heads,
// garbage, HTTP/0.9, slow clients, memory after large and rejected bodies,
// and shutdown with streams running. Each case bounds its connections and
// its time; together they take well under a minute.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>
#include <random>
#include <regex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/raw_client.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::RawConnection;
using tc::test::RawResponse;
using tc::test::ServerProcess;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

const char* kModelFlags = "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 11";
constexpr char kNulRequest[] = "GET /health HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n";

std::filesystem::path test_model() {
  static const auto dir = tc::test::scratch_dir("http_hostile");
  return tc::test::make_test_model(dir, "tiny", kModelFlags);
}

// The same shape with an 8192-token context: four streams of 8000 tokens
// take several seconds even on a fast machine.
std::filesystem::path long_context_model() {
  static const auto dir = tc::test::scratch_dir("http_hostile");
  return tc::test::make_test_model(dir, "tiny-8k", std::string(kModelFlags) + " --n-ctx 8192");
}

std::filesystem::path log_dir() { return tc::test::scratch_dir("http_hostile_logs"); }

std::string get(const std::string& path, const std::string& extra_headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra_headers + "\r\n";
}

std::string post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The error message of an OpenAI error body, "" when it is none.
std::string error_message(const json& body) {
  if (!body.is_object() || !body.contains("error") || !body.at("error").is_object()) return "";
  const json& message = body.at("error").value("message", json());
  return message.is_string() ? message.get<std::string>() : "";
}

void check_error_body(const RawResponse& r) {
  INFO("body: " << r.body);
  const json body = json::parse(r.body, nullptr, false);
  CHECK(!error_message(body).empty());
  CHECK((body.is_object() && body.contains("error") && body.at("error").value("type", json()).is_string()));
}

// Sends `request` on a new connection; expects `status` within `within` and
// the connection closed right after it.
void expect_rejected(int port, const std::string& name, const std::string& request, int status,
                     milliseconds within = milliseconds(100), bool half_close = false) {
  INFO(name);
  RawConnection c(port);
  REQUIRE(c.connected());
  const auto start = Clock::now();
  c.send(request);  // may fail part-way once the server has answered and closed
  if (half_close) c.shutdown_write();
  const RawResponse r = c.read_response(std::chrono::seconds(10));
  const double answered = seconds_since(start);
  CHECK(r.status == status);
  CHECK(answered < std::chrono::duration<double>(within).count());
  if (r.status != 0) check_error_body(r);
  CHECK(c.wait_closed(milliseconds(1000)));
  CHECK(seconds_since(start) < std::chrono::duration<double>(within).count() + 0.1);
}

// The server still answers a plain request on a new connection.
void check_still_serving(int port) {
  RawConnection c(port);
  REQUIRE(c.connected());
  REQUIRE(c.send(get("/health")));
  CHECK(c.read_response(milliseconds(2000)).status == 200);
}

}  // namespace

// A request delayed by a TCP delayed ACK takes 40 ms or more; the timing
// checks below only tell that apart from a prompt answer.
constexpr double kStallBoundMs = 20.0;

TEST_CASE("hostile: a reused connection answers as fast as a fresh one, pipelined requests in order",
          "[integration][hostile]") {
  ServerProcess server(test_model(), {"--alias", "tiny", "--threads", "1"}, log_dir());
  const int port = server.port();

  // Requests on a reused connection, the first on each connection not
  // counted (a server that closes connections after a few requests gets
  // new ones).
  std::optional<RawConnection> reused;
  std::vector<double> reused_ms, fresh_ms;
  int n_on_connection = 0;
  for (int attempts = 0; reused_ms.size() < 40 && attempts < 200; ++attempts) {
    if (!reused) {
      reused.emplace(port);
      n_on_connection = 0;
    }
    const auto start = Clock::now();
    const bool sent = reused->send(get("/health"));
    const RawResponse r = reused->read_response(milliseconds(2000));
    const double ms = 1000 * seconds_since(start);
    if (!sent || r.status == 0) {
      reused.reset();
      continue;
    }
    CHECK(r.status == 200);
    if (n_on_connection++ > 0 && attempts >= 5) reused_ms.push_back(ms);
    if (r.headers.count("connection") && r.headers.at("connection") == "close") reused.reset();
  }
  REQUIRE(reused_ms.size() == 40);
  for (int i = 0; i < 40; ++i) {
    const auto start = Clock::now();
    RawConnection fresh(port);
    REQUIRE(fresh.send(get("/health")));
    REQUIRE(fresh.read_response(milliseconds(2000)).status == 200);
    fresh_ms.push_back(1000 * seconds_since(start));
  }
  INFO("median /health: reused connection " << median(reused_ms) << " ms, fresh " << median(fresh_ms) << " ms");
  // The stalls this guards against are delayed ACKs (40 ms on Linux); the
  // bound leaves room for a loaded machine (a quiet one answers in < 1 ms).
  CHECK(median(reused_ms) < kStallBoundMs);

  // A client that writes a POST's head and body separately with Nagle's
  // algorithm on: its body waits for the head's ACK, which the server must
  // not delay on a reused connection.
  {
    RawConnection nagle(port);
    nagle.use_nagle();
    const std::string request = post("/tokenize", R"({"content":"hello world"})");
    const size_t head_end = request.find("\r\n\r\n") + 4;
    std::vector<double> post_ms;
    for (int i = 0; i < 25; ++i) {
      const auto start = Clock::now();
      REQUIRE(nagle.send(request.substr(0, head_end)));
      REQUIRE(nagle.send(request.substr(head_end)));
      REQUIRE(nagle.read_response(milliseconds(2000)).status == 200);
      if (i >= 5) post_ms.push_back(1000 * seconds_since(start));
    }
    INFO("median POST, head and body in two writes behind Nagle: " << median(post_ms) << " ms");
    CHECK(median(post_ms) < kStallBoundMs);
  }

  // Four requests in one write, a POST with its body among them: four
  // answers in order, the last one closing the connection as asked.
  RawConnection pipe(port);
  REQUIRE(pipe.send(get("/health") + post("/tokenize", R"({"content":"hello world"})") + get("/v1/models") +
                    get("/health", "Connection: close\r\n")));
  const RawResponse a = pipe.read_response(milliseconds(3000));
  const RawResponse b = pipe.read_response(milliseconds(3000));
  const RawResponse c = pipe.read_response(milliseconds(3000));
  RawResponse d = pipe.read_response(milliseconds(3000));
  CHECK(a.status == 200);
  CHECK(json::parse(a.body, nullptr, false)["status"] == "ok");
  CHECK(b.status == 200);
  CHECK(json::parse(b.body, nullptr, false)["count"].get<int>() > 0);
  CHECK(c.status == 200);
  CHECK(json::parse(c.body, nullptr, false)["data"][0]["id"] == "tiny");
  CHECK(d.status == 200);
  REQUIRE(d.headers.count("connection") == 1);
  CHECK(d.headers.at("connection") == "close");
  CHECK(pipe.wait_closed(milliseconds(1000)));

  // A pipelined request split across writes, its head arriving with the
  // previous request's body.
  RawConnection split(port);
  const std::string tokenize = post("/tokenize", R"({"content":"hi"})");
  const std::string both = tokenize + get("/health");
  REQUIRE(split.send(both.substr(0, tokenize.size() + 7)));
  std::this_thread::sleep_for(milliseconds(50));
  REQUIRE(split.send(both.substr(tokenize.size() + 7)));
  CHECK(split.read_response(milliseconds(3000)).status == 200);
  CHECK(split.read_response(milliseconds(3000)).status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("hostile: framing errors are a 400 within 100 ms and close the connection", "[integration][hostile]") {
  ServerProcess server(test_model(), {"--alias", "tiny", "--threads", "1"}, log_dir());
  const int port = server.port();
  const std::string body = R"({"prompt":"hi","max_tokens":1})";
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n";
  const std::string chunked_head = "POST /tokenize HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  const struct {
    const char* name;
    std::string request;
    int status;
  } cases[] = {
      {"two conflicting Content-Length headers",
       head + "Content-Length: " + std::to_string(body.size()) + "\r\nContent-Length: 100\r\n\r\n" + body, 400},
      {"a conflicting Content-Length list", head + "Content-Length: 30, 31\r\n\r\n" + body, 400},
      {"Content-Length -1", head + "Content-Length: -1\r\n\r\n", 400},
      {"a Content-Length past 64 bits", head + "Content-Length: 99999999999999999999\r\n\r\n", 400},
      {"Content-Length with junk", head + "Content-Length: 12abc\r\n\r\n", 400},
      {"an empty Content-Length", head + "Content-Length:\r\n\r\n", 400},
      {"Content-Length with Transfer-Encoding",
       head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"Transfer-Encoding not ending in chunked", head + "Transfer-Encoding: chunked, gzip\r\n\r\n", 400},
      {"an unsupported transfer coding", head + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"Transfer-Encoding in HTTP/1.0",
       "POST /tokenize HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"chunk size zz", chunked_head + "zz\r\nabc\r\n0\r\n\r\n", 400},
      {"chunk size -1", chunked_head + "-1\r\nabc\r\n0\r\n\r\n", 400},
      {"chunk size past 64 bits", chunked_head + "1FFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n", 400},
      {"chunk data longer than its size", chunked_head + "3\r\nabcdef\r\n0\r\n\r\n", 400},
      {"an empty chunk size", chunked_head + "\r\nabc\r\n0\r\n\r\n", 400},
      {"a chunk-size line of 2 KB", chunked_head + "3;" + std::string(2048, 'x') + "\r\nabc\r\n0\r\n\r\n", 400},
      {"a chunk past the body limit", chunked_head + "FFFFFFFFFF\r\nabc", 413},
      {"a Content-Length past the body limit", head + "Content-Length: 1000000000\r\n\r\n", 413},
  };
  for (const auto& c : cases) expect_rejected(port, c.name, c.request, c.status);
  // The same after the client half-closed: still answered at once.
  expect_rejected(port, "Content-Length -1, half-closed", head + "Content-Length: -1\r\n\r\n", 400, milliseconds(100),
                  true);
  check_still_serving(port);
  // Each rejection is logged and counted.
  auto client = server.client();
  const auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("route=\"/v1/completions\",status=\"400\"") != std::string::npos);
  CHECK(server.stop() == 0);
}

TEST_CASE("hostile: malformed, oversized and garbage heads get their status and a closed connection",
          "[integration][hostile]") {
  ServerProcess server(test_model(), {"--alias", "tiny", "--threads", "1"}, log_dir());
  const int port = server.port();
  std::string many_headers = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 10000; ++i) many_headers += "X-H" + std::to_string(i) + ": v\r\n";
  many_headers += "\r\n";
  std::string large_headers = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 60; ++i) large_headers += "X-Pad" + std::to_string(i) + ": " + std::string(300, 'p') + "\r\n";
  large_headers += "\r\n";
  std::string counted_headers = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 150; ++i) counted_headers += "X-N" + std::to_string(i) + ": v\r\n";
  counted_headers += "\r\n";
  std::mt19937 rng(35);
  std::string garbage(4096, '\0');
  for (char& ch : garbage) ch = static_cast<char>(rng() & 0xff);
  garbage += "\r\n\r\n";

  const struct {
    const char* name;
    std::string request;
    int status;
  } cases[] = {
      {"a 9000-byte request line", "GET /health?" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n", 414},
      {"a 9000-byte header line", get("/health", "X-Long: " + std::string(9000, 'a') + "\r\n"), 431},
      {"18 KB of headers", large_headers, 431},
      {"150 headers", counted_headers, 431},
      {"10,000 headers", many_headers, 431},
      {"HTTP/0.9", "GET /health\r\n\r\n", 400},
      {"garbage bytes", garbage, 400},
      {"a folded header line", "GET /health HTTP/1.1\r\nHost: t\r\nX-A: b\r\n  c\r\n\r\n", 400},
      {"a space before the colon", "GET /health HTTP/1.1\r\nHost : t\r\n\r\n", 400},
      {"two Host headers", "GET /health HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n", 400},
      {"no Host header", "GET /health HTTP/1.1\r\n\r\n", 400},
      {"a NUL in a header value", std::string(kNulRequest, sizeof kNulRequest - 1), 400},
      {"a bare CR", "GET /health HTTP/1.1\r\nHost: t\rX-A: b\r\n\r\n", 400},
      {"an unknown method", "BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501},
      {"HTTP/2.0", "GET /health HTTP/2.0\r\nHost: t\r\n\r\n", 505},
      {"an unknown expectation", get("/health", "Expect: 999-later\r\n"), 417},
  };
  for (const auto& c : cases) expect_rejected(port, c.name, c.request, c.status);

  {  // what well-behaved but unusual clients send still works
    RawConnection lf(port);  // LF line ends, blank lines before the request line
    REQUIRE(lf.send("\r\n\nGET /health HTTP/1.1\nHost: t\n\n"));
    CHECK(lf.read_response().status == 200);
    RawConnection absolute(port);  // absolute-form, as sent to a proxy
    REQUIRE(absolute.send("GET http://t/v1/models HTTP/1.1\r\nHost: t\r\n\r\n"));
    CHECK(absolute.read_response().status == 200);
    RawConnection http10(port);  // HTTP/1.0 without keep-alive: answered, then closed
    REQUIRE(http10.send("GET /health HTTP/1.0\r\n\r\n"));
    CHECK(http10.read_response().status == 200);
    CHECK(http10.wait_closed(milliseconds(1000)));
    RawConnection chunked(port);  // chunk extensions and a trailer
    REQUIRE(chunked.send("POST /tokenize HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "5;ext=1\r\n{\"con\r\n10\r\ntent\":\"hello wor\r\n3\r\nld\"\r\n1\r\n}\r\n0\r\nX-T: 1\r\n\r\n"));
    const RawResponse t = chunked.read_response();
    CHECK(t.status == 200);
    CHECK(json::parse(t.body, nullptr, false)["count"].get<int>() > 0);
    RawConnection expect(port);  // Expect: 100-continue: the body follows the interim answer
    const std::string body = R"({"content":"hello"})";
    REQUIRE(expect.send("POST /tokenize HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\nExpect: 100-continue\r\n\r\n"));
    CHECK(expect.read_response(milliseconds(1000)).status == 100);
    REQUIRE(expect.send(body));
    CHECK(expect.read_response().status == 200);
  }
  check_still_serving(port);
  CHECK(server.stop() == 0);
}

TEST_CASE("hostile: smaller HTTP-layer faults (metrics, logit_bias, role message)", "[integration][hostile]") {
  ServerProcess server(test_model(), {"--alias", "tiny", "--threads", "1"}, log_dir());
  auto client = server.client();
  // A scrape counts itself with its real status.
  for (int i = 0; i < 2; ++i) REQUIRE(client.Get("/metrics"));
  const auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("status=\"-1\"") == std::string::npos);
  CHECK(metrics->body.find("route=\"/metrics\",status=\"200\"} 2") != std::string::npos);
  // A logit_bias that bans every token is a 400 before the stream starts.
  json bias = json::object();
  for (int t = 0; t < 1024; ++t) bias[std::to_string(t)] = -100;
  for (const bool stream : {false, true}) {
    const auto r = tc::test::post_json(
        client, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 4}, {"logit_bias", bias}, {"stream", stream}});
    INFO(r.raw);
    CHECK(r.status == 400);
    CHECK(error_message(r.body).find("logit_bias") != std::string::npos);
  }
  // The role error names every role that is accepted, function included.
  const auto role = tc::test::post_json(client, "/v1/chat/completions",
                                        {{"messages", json::array({{{"role", "bogus"}, {"content", "x"}}})}});
  CHECK(role.status == 400);
  CHECK(error_message(role.body).find("function") != std::string::npos);
  const auto function = tc::test::post_json(
      client, "/v1/chat/completions",
      {{"messages", json::array({{{"role", "function"}, {"name", "f"}, {"content", "x"}},
                                 {{"role", "user"}, {"content", "hi"}}})},
       {"max_tokens", 2}});
  CHECK(function.status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("hostile: 500 slow clients cannot starve the server, the request deadline drops them",
          "[integration][hostile]") {
  const long fd_limit = tc::test::raise_open_files();
  const int n_slow = static_cast<int>(std::min<long>(500, fd_limit - 100));
  REQUIRE(n_slow >= 100);
  ServerProcess server(test_model(), {"--alias", "tiny", "--threads", "1", "--http-request-timeout-s", "3"},
                       log_dir());
  const int port = server.port();
  std::vector<RawConnection> slow;
  slow.reserve(static_cast<size_t>(n_slow));
  for (int i = 0; i < n_slow; ++i) {
    slow.emplace_back(port);
    REQUIRE(slow.back().connected());
    slow.back().send("GET /health HTTP/1.1\r\nHost: t\r\n");
  }
  RawConnection silent(port);  // connects and sends nothing
  REQUIRE(silent.connected());
  const auto opened = Clock::now();
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop.load()) {
      for (auto& c : slow) c.send("X-A: b\r\n");  // one header line each, every 500 ms
      std::this_thread::sleep_for(milliseconds(500));
    }
  });
  std::this_thread::sleep_for(milliseconds(1200));
  // A normal client is served at once, several times.
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    RawConnection normal(port);
    REQUIRE(normal.send(post("/tokenize", R"({"content":"hello"})")));
    const RawResponse r = normal.read_response(milliseconds(5000));
    CHECK(r.status == 200);
    CHECK(seconds_since(start) < 1.0);
  }
  // Past the deadline (3 s from their first byte) every slow client has had
  // a 408 and a closed connection, the silent one too.
  std::this_thread::sleep_for(milliseconds(3500) - (Clock::now() - opened));
  stop.store(true);
  trickle.join();
  CHECK(slow.front().read_response(milliseconds(1000)).status == 408);
  int n_closed = 0;
  for (auto& c : slow) n_closed += c.wait_closed(milliseconds(20)) ? 1 : 0;
  CHECK(n_closed == n_slow);
  CHECK(silent.wait_closed(milliseconds(1000)));
  check_still_serving(port);
  CHECK(server.stop() == 0);
}

TEST_CASE("hostile: memory comes back after large and rejected bodies", "[integration][hostile]") {
  // THERMOCLINE_HOSTILE_BODY_ROUNDS raises the number of rounds (the issue's
  // target is 1,000 bodies: 500 rounds of two).
  const char* env = std::getenv("THERMOCLINE_HOSTILE_BODY_ROUNDS");
  const int rounds = env && *env ? std::atoi(env) : 15;
  ServerProcess server(test_model(), {"--alias", "tiny", "--threads", "1"}, log_dir());
  const int port = server.port();
  json valid = {{"prompt", "hi"}, {"max_tokens", 1}, {"padding", std::string(4 << 20, 'x')}};
  const std::string valid_request = post("/v1/completions", valid.dump());
  json bias = json::object();
  for (int t = 0; t < 100000; ++t) bias[std::to_string(t)] = 1;
  const std::string rejected_request =
      post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 1}, {"logit_bias", bias}}.dump());
  auto round = [&] {
    for (const auto& [request, status] : {std::pair{&valid_request, 200}, std::pair{&rejected_request, 400}}) {
      RawConnection c(port);
      REQUIRE(c.send(*request));
      CHECK(c.read_response(milliseconds(20000)).status == status);
    }
  };
  for (int i = 0; i < 3; ++i) round();
  std::this_thread::sleep_for(milliseconds(200));
  const long warm = server.rss_bytes();
  for (int i = 0; i < rounds; ++i) round();
  // Rejected without reading: a length past the limit.
  for (int i = 0; i < 20; ++i) {
    RawConnection big(port);
    big.send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 9000000\r\n\r\n");
    CHECK(big.read_response(milliseconds(2000)).status == 413);
  }
  std::this_thread::sleep_for(milliseconds(200));
  const long after = server.rss_bytes();
  INFO("RSS warm " << warm / (1 << 20) << " MiB, after " << 2 * rounds << " large or rejected bodies "
                   << after / (1 << 20) << " MiB");
  CHECK(after - warm < 64L << 20);
  CHECK(server.stop() == 0);
}

TEST_CASE("hostile: SIGTERM with streams running exits within the grace period plus 1 s", "[integration][hostile]") {
  ServerProcess server(long_context_model(),
                       {"--alias", "tiny", "--threads", "1", "--parallel", "4", "-c", "8192", "--shutdown-grace-s", "2"},
                       log_dir());
  const int port = server.port();
  // Keep-alive connections that finished their requests and idle.
  std::vector<RawConnection> idle;
  for (int i = 0; i < 3; ++i) {
    idle.emplace_back(port);
    REQUIRE(idle.back().send(get("/health")));
    REQUIRE(idle.back().read_response().status == 200);
  }
  std::vector<std::future<tc::test::SseResponse>> streams;
  for (int i = 0; i < 4; ++i) {
    streams.push_back(std::async(std::launch::async, [&server, i] {
      auto c = server.client();
      return tc::test::post_stream(c, "/v1/completions",
                                   {{"prompt", "stream " + std::to_string(i)},
                                    {"max_tokens", 8000},
                                    {"ignore_eos", true},
                                    {"stream", true}});
    }));
  }
  auto probe = server.client();
  bool running = false;
  for (int i = 0; i < 500 && !running; ++i) {
    const auto m = probe.Get("/metrics");
    running = m && m->body.find("thermocline_requests_running 4\n") != std::string::npos;
    if (!running) std::this_thread::sleep_for(milliseconds(10));
  }
  REQUIRE(running);
  const auto start = Clock::now();
  CHECK(server.stop() == 0);
  const double exit_seconds = seconds_since(start);
  INFO("exit after SIGTERM: " << exit_seconds << " s");
  CHECK(exit_seconds < 3.0);
  for (auto& f : streams) {
    const auto s = f.get();
    INFO(s.raw.substr(s.raw.size() > 300 ? s.raw.size() - 300 : 0));
    CHECK(s.status == 200);
    REQUIRE(s.data.size() >= 2);
    CHECK(s.data.back() == "[DONE]");
    // The event before [DONE]: the finish chunk or the shutdown's error.
    const json last = json::parse(s.data[s.data.size() - 2], nullptr, false);
    const bool finished = last.contains("choices") && !last["choices"].empty() &&
                          !last["choices"][0]["finish_reason"].is_null();
    CHECK((finished || last.contains("error")));
  }
  // Streams cut by the shutdown log the tokens they had produced.
  const std::string log = server.log();
  const std::regex cut(R"(POST /v1/completions status=500 prompt_tokens=\d+ completion_tokens=(\d+))");
  int n_cut = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), cut); it != std::sregex_iterator(); ++it) {
    ++n_cut;
    CHECK(std::stoi((*it)[1].str()) > 0);
  }
  CHECK(n_cut > 0);
}
