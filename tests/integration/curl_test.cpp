// The curl command line against a real `thermocline serve`: SSE streaming
// as `curl -N` sees it, the streaming headers, plain JSON, API keys, CORS
// preflight and origins, the body limit and sloppy paths. Skipped with a
// warning without curl, or failed where THERMOCLINE_REQUIRE_ORACLE is set.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

namespace fs = std::filesystem;

bool require_oracle() {
  const char* env = std::getenv("THERMOCLINE_REQUIRE_ORACLE");
  return env && *env && std::string(env) != "0";
}

// True when curl runs; otherwise warns (or fails under THERMOCLINE_REQUIRE_ORACLE).
bool have_curl() {
  if (tc::test::run_command("curl --version").exit_code == 0) return true;
  if (require_oracle()) FAIL("curl is not installed and THERMOCLINE_REQUIRE_ORACLE is set");
  WARN("skipping: curl is not installed");
  return false;
}


std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Header lines of the last response in a `curl -i` / `-D` dump (a
// "100 Continue" block before it is skipped).
std::vector<std::string> last_header_block(const std::string& dump) {
  std::vector<std::string> block;
  std::istringstream in(dump);
  std::string line;
  bool in_headers = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {
      block.clear();
      in_headers = true;
      continue;
    }
    if (!in_headers) continue;
    if (line.empty()) {
      in_headers = false;
      continue;
    }
    block.push_back(line);
  }
  return block;
}

// The value of header `name` (case-insensitive), "" when absent; `present`
// tells an empty value from a missing header.
std::string header(const std::string& dump, const std::string& name, bool* present = nullptr) {
  if (present) *present = false;
  for (const auto& line : last_header_block(dump)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || lower(line.substr(0, colon)) != lower(name)) continue;
    if (present) *present = true;
    std::string v = line.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.erase(0, 1);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
  }
  return "";
}

bool has_header(const std::string& dump, const std::string& name) {
  bool present = false;
  header(dump, name, &present);
  return present;
}

struct Curl {
  int exit_code = 0;
  int status = 0;
  std::string headers;  // the raw header dump
  std::string body;
  std::string command;
  std::string output;
};

// Runs `curl -sS -D H -o B -w '%{http_code}' ARGS URL`: the status from
// -w, the headers and body from the files.
Curl curl(const fs::path& dir, const std::string& args, const std::string& url) {
  const auto h = dir / "curl.headers";
  const auto b = dir / "curl.body";
  fs::remove(h);
  fs::remove(b);
  Curl r;
  r.command = "curl -sS --max-time 60 -D " + tc::test::shell_quote(h.string()) + " -o " + tc::test::shell_quote(b.string()) +
              " -w '%{http_code}' " + args + " " + tc::test::shell_quote(url);
  const auto out = tc::test::run_command(r.command);
  r.exit_code = out.exit_code;
  r.output = out.output;
  r.status = std::atoi(out.output.c_str());
  if (fs::exists(h)) r.headers = tc::test::read_file(h);
  if (fs::exists(b)) r.body = tc::test::read_file(b);
  return r;
}

// -d with a JSON body and its content type.
std::string json_data(const json& body) {
  return "-H 'Content-Type: application/json' --data-binary " + tc::test::shell_quote(body.dump());
}

const json kChat = {{"model", "tiny"},
                    {"messages", json::array({{{"role", "user"}, {"content", "Hello there"}}})},
                    {"max_tokens", 8},
                    {"seed", 7}};

// An OpenAI error body with this type (and code, when given).
void check_error_body(const std::string& raw, const std::string& type, const std::string& code = "") {
  INFO("body: " << raw);
  const json body = json::parse(raw, nullptr, false);
  REQUIRE(body.is_object());
  REQUIRE(body.contains("error"));
  const json& e = body["error"];
  CHECK(e["message"].is_string());
  CHECK(!e["message"].get<std::string>().empty());
  CHECK(e["type"] == type);
  CHECK(e.contains("param"));
  CHECK(e.contains("code"));
  if (!code.empty()) CHECK(e["code"] == code);
}

fs::path tiny_model(const fs::path& dir) {
  return tc::test::make_test_model(dir, "tiny",
                                   "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
}

}  // namespace

TEST_CASE("curl: SSE streaming, JSON, paths, body limit, no CORS by default", "[integration][curl]") {
  if (!have_curl()) return;
  const auto dir = tc::test::scratch_dir("curl_stream");
  tc::test::ServerProcess server(tiny_model(dir), {"--alias", "tiny", "--max-body-bytes", "2048", "--threads", "2"},
                                 dir);
  const std::string base = server.url();

  SECTION("curl -sN streams SSE ending in [DONE]") {
    json body = kChat;
    body["stream"] = true;
    const std::string cmd = "curl -sN --max-time 60 " + json_data(body) + " " + tc::test::shell_quote(base + "/v1/chat/completions");
    const auto r = tc::test::run_command(cmd);
    INFO(cmd << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
    // Events are "data: ...\n\n" (or ": ping" comments); the last is [DONE].
    std::vector<std::string> payloads;
    size_t pos = 0;
    while (pos < r.output.size()) {
      const size_t end = r.output.find("\n\n", pos);
      REQUIRE(end != std::string::npos);  // every event is terminated by a blank line
      const std::string event = r.output.substr(pos, end - pos);
      pos = end + 2;
      if (event.rfind(": ", 0) == 0) continue;
      REQUIRE(event.rfind("data: ", 0) == 0);
      CHECK(event.find('\n') == std::string::npos);
      payloads.push_back(event.substr(6));
    }
    REQUIRE(payloads.size() >= 3);
    CHECK(payloads.back() == "[DONE]");
    CHECK(std::count(payloads.begin(), payloads.end(), std::string("[DONE]")) == 1);
    std::string id;
    int finishes = 0;
    for (size_t i = 0; i + 1 < payloads.size(); ++i) {
      const json chunk = json::parse(payloads[i], nullptr, false);
      INFO(payloads[i]);
      REQUIRE(chunk.is_object());
      CHECK(chunk["object"] == "chat.completion.chunk");
      if (id.empty()) id = chunk["id"].get<std::string>();
      CHECK(chunk["id"] == id);
      for (const auto& c : chunk["choices"]) finishes += c["finish_reason"].is_null() ? 0 : 1;
    }
    CHECK(finishes == 1);
    CHECK(json::parse(payloads[0])["choices"][0]["delta"]["role"] == "assistant");
  }

  SECTION("curl -i shows the SSE headers") {
    json body = kChat;
    body["stream"] = true;
    const std::string cmd =
        "curl -sN -i --max-time 60 " + json_data(body) + " " + tc::test::shell_quote(base + "/v1/chat/completions");
    const auto r = tc::test::run_command(cmd);
    INFO(cmd << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(header(r.output, "Content-Type").rfind("text/event-stream", 0) == 0);
    CHECK(header(r.output, "Cache-Control") == "no-cache");
    CHECK(header(r.output, "X-Accel-Buffering") == "no");
    CHECK(!has_header(r.output, "Content-Length"));
    CHECK(r.output.find("data: [DONE]") != std::string::npos);
  }

  SECTION("a non-streamed completion is JSON") {
    const json body = {{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 8}};
    const auto r = curl(dir, json_data(body), base + "/v1/completions");
    INFO(r.command << "\n" << r.output << "\n" << r.headers << r.body);
    REQUIRE(r.exit_code == 0);
    CHECK(r.status == 200);
    CHECK(header(r.headers, "Content-Type").rfind("application/json", 0) == 0);
    const json j = json::parse(r.body, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["object"] == "text_completion");
    CHECK(j["choices"][0]["text"].is_string());
    CHECK(j["usage"]["total_tokens"] == j["usage"]["prompt_tokens"].get<int>() +
                                           j["usage"]["completion_tokens"].get<int>());
  }

  SECTION("sloppy paths: //v1//chat/completions/ and no /v1") {
    for (const std::string path : {"//v1//chat/completions/", "/chat/completions", "/v1/chat//completions"}) {
      const auto r = curl(dir, json_data(kChat), base + path);
      INFO(path << ": " << r.command << "\n" << r.output << "\n" << r.body);
      REQUIRE(r.exit_code == 0);
      CHECK(r.status == 200);
      const json j = json::parse(r.body, nullptr, false);
      REQUIRE(j.is_object());
      CHECK(j["object"] == "chat.completion");
    }
    const auto models = curl(dir, "", base + "//v1///models/");
    CHECK(models.status == 200);
  }

  SECTION("a body over --max-body-bytes is a 413 with an OpenAI error") {
    json body = kChat;
    body["messages"][0]["content"] = std::string(4096, 'a');
    const auto path = dir / "big.json";
    tc::test::write_file(path, body.dump());
    REQUIRE(fs::file_size(path) > 4096);
    // With and without "Expect: 100-continue" (curl sends it for large
    // bodies), and chunked (no Content-Length: httplib 0.11 reads it whole).
    for (const std::string extra : {"-H 'Expect: 100-continue'", "-H 'Expect:'", "-H 'Transfer-Encoding: chunked'"}) {
      const auto r = curl(dir, "-H 'Content-Type: application/json' --data-binary @" + tc::test::shell_quote(path.string()) +
                                   " " + extra,
                          base + "/v1/chat/completions");
      INFO(r.command << "\n" << r.output << "\n" << r.headers << r.body);
      REQUIRE(r.exit_code == 0);
      CHECK(r.status == 413);
      check_error_body(r.body, "invalid_request_error");
    }
    const auto tokenize = curl(dir, "-H 'Transfer-Encoding: chunked' --data-binary @" + tc::test::shell_quote(path.string()),
                               base + "/tokenize");
    CHECK(tokenize.status == 413);
    // The server still serves afterwards.
    CHECK(curl(dir, json_data(kChat), base + "/v1/chat/completions").status == 200);
  }

  SECTION("without --cors-origin there are no CORS headers") {
    const auto post = curl(dir, "-H 'Origin: http://ui.test' " + json_data(kChat), base + "/v1/chat/completions");
    INFO(post.headers);
    CHECK(post.status == 200);
    CHECK(!has_header(post.headers, "Access-Control-Allow-Origin"));
    const auto pre = curl(dir,
                          "-X OPTIONS -H 'Origin: http://ui.test' -H 'Access-Control-Request-Method: POST' "
                          "-H 'Access-Control-Request-Headers: content-type'",
                          base + "/v1/chat/completions");
    INFO(pre.headers);
    CHECK(!has_header(pre.headers, "Access-Control-Allow-Origin"));
    CHECK(!has_header(pre.headers, "Access-Control-Allow-Methods"));
  }

  CHECK(server.stop() == 0);
}

// `curl -d` without a Content-Type sends application/x-www-form-urlencoded;
// httplib 0.11 would parse such a body as form fields and answer 413 past
// 8 KiB. The JSON routes read their bodies themselves (json_post_route.h).
TEST_CASE("curl: JSON bodies sent with curl -d's default content type, of any size", "[integration][curl]") {
  if (!have_curl()) return;
  const auto dir = tc::test::scratch_dir("curl_form_type");
  tc::test::ServerProcess server(tiny_model(dir), {"--alias", "tiny", "--max-body-bytes", "100000", "--threads", "2"},
                                 dir);
  const std::string base = server.url();
  // 20 KB: unknown fields are ignored, so the padding only makes it large.
  json body = {{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 4}, {"seed", 3}};
  body["padding"] = std::string(20000, 'x');
  const auto path = dir / "big.json";
  tc::test::write_file(path, body.dump());
  const std::string data = "--data-binary @" + tc::test::shell_quote(path.string());

  for (const std::string extra : {"", "-H 'Transfer-Encoding: chunked'", "-H 'Expect:'"}) {
    const auto r = curl(dir, data + " " + extra, base + "/v1/completions");
    INFO(r.command << "\n" << r.output << "\n" << r.headers << r.body);
    REQUIRE(r.exit_code == 0);
    CHECK(r.status == 200);
    const json j = json::parse(r.body, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["object"] == "text_completion");
    CHECK(j["usage"]["completion_tokens"] == 4);
  }
  const auto tokens = curl(dir, data, base + "/tokenize");
  INFO(tokens.body);
  CHECK(tokens.status == 200);
  CHECK(json::parse(tokens.body, nullptr, false)["count"].get<int>() > 0);

  // Over --max-body-bytes it is still a 413, with or without a length.
  body["padding"] = std::string(150000, 'x');
  tc::test::write_file(path, body.dump());
  for (const std::string extra : {"", "-H 'Transfer-Encoding: chunked'"}) {
    const auto r = curl(dir, data + " " + extra, base + "/v1/completions");
    INFO(r.command << "\n" << r.headers << r.body);
    CHECK(r.status == 413);
    check_error_body(r.body, "invalid_request_error");
  }

  // A multipart form is no JSON: a 400 naming it, not a 500.
  const auto form = curl(dir, "-F prompt=hello", base + "/v1/completions");
  INFO(form.headers << form.body);
  CHECK(form.status == 400);
  check_error_body(form.body, "invalid_request_error");
  CHECK(form.body.find("multipart/form-data") != std::string::npos);

  // The connection is in step afterwards: the server still answers.
  CHECK(curl(dir, json_data(kChat), base + "/v1/chat/completions").status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("curl: API keys", "[integration][curl]") {
  if (!have_curl()) return;
  const auto dir = tc::test::scratch_dir("curl_auth");
  tc::test::ServerProcess server(tiny_model(dir), {"--alias", "tiny", "--api-key", "k1", "--api-key", "k2",
                                                   "--threads", "2"},
                                 dir);
  const std::string base = server.url();

  SECTION("no key or a wrong key: 401 invalid_api_key") {
    for (const std::string auth : {"", "-H 'Authorization: Bearer k3'", "-H 'X-Api-Key: nope'",
                                   "-H 'Authorization: k1'"}) {
      const auto r = curl(dir, auth + " " + json_data(kChat), base + "/v1/chat/completions");
      INFO(auth << ": " << r.headers << r.body);
      REQUIRE(r.exit_code == 0);
      CHECK(r.status == 401);
      CHECK(header(r.headers, "Content-Type").rfind("application/json", 0) == 0);
      check_error_body(r.body, "authentication_error", "invalid_api_key");
    }
    const auto models = curl(dir, "", base + "/v1/models");
    CHECK(models.status == 401);
    check_error_body(models.body, "authentication_error", "invalid_api_key");
  }

  SECTION("either key, as Bearer or X-Api-Key: 200") {
    const auto bearer = curl(dir, "-H 'Authorization: Bearer k2' " + json_data(kChat), base + "/v1/chat/completions");
    INFO(bearer.body);
    CHECK(bearer.status == 200);
    CHECK(json::parse(bearer.body, nullptr, false)["object"] == "chat.completion");
    const auto x_api_key = curl(dir, "-H 'X-Api-Key: k1'", base + "/v1/models");
    INFO(x_api_key.body);
    CHECK(x_api_key.status == 200);
    CHECK(json::parse(x_api_key.body, nullptr, false)["data"][0]["id"] == "tiny");
    json stream = kChat;
    stream["stream"] = true;
    const auto streamed = curl(dir, "-N -H 'X-Api-Key: k1' " + json_data(stream), base + "/v1/chat/completions");
    CHECK(streamed.status == 200);
    CHECK(streamed.body.find("data: [DONE]") != std::string::npos);
  }

  SECTION("/health never needs a key") {
    const auto r = curl(dir, "", base + "/health");
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(json::parse(r.body, nullptr, false)["status"] == "ok");
  }

  CHECK(server.stop() == 0);
}

TEST_CASE("curl: CORS preflight and origins", "[integration][curl]") {
  if (!have_curl()) return;
  const auto dir = tc::test::scratch_dir("curl_cors");
  tc::test::ServerProcess server(tiny_model(dir), {"--alias", "tiny", "--cors-origin", "http://ui.test", "--api-key",
                                                   "k1", "--threads", "2"},
                                 dir);
  const std::string base = server.url();
  const std::string preflight =
      "-X OPTIONS -H 'Access-Control-Request-Method: POST' "
      "-H 'Access-Control-Request-Headers: authorization,content-type'";

  SECTION("a preflight from the allowed origin: 204 without a key") {
    const auto r = curl(dir, preflight + " -H 'Origin: http://ui.test'", base + "/v1/chat/completions");
    INFO(r.headers << r.body);
    REQUIRE(r.exit_code == 0);
    CHECK(r.status == 204);
    CHECK(header(r.headers, "Access-Control-Allow-Origin") == "http://ui.test");
    CHECK(header(r.headers, "Access-Control-Allow-Methods").find("POST") != std::string::npos);
    CHECK(lower(header(r.headers, "Access-Control-Allow-Headers")) == "authorization,content-type");
    CHECK(lower(header(r.headers, "Vary")).find("origin") != std::string::npos);
  }

  SECTION("a preflight from another origin gets no CORS headers") {
    const auto r = curl(dir, preflight + " -H 'Origin: http://evil.test'", base + "/v1/chat/completions");
    INFO(r.headers << r.body);
    CHECK(!has_header(r.headers, "Access-Control-Allow-Origin"));
    CHECK(!has_header(r.headers, "Access-Control-Allow-Methods"));
  }

  SECTION("a POST from the allowed origin carries Access-Control-Allow-Origin") {
    const std::string auth = "-H 'Authorization: Bearer k1' ";
    const auto r = curl(dir, auth + "-H 'Origin: http://ui.test' " + json_data(kChat), base + "/v1/chat/completions");
    INFO(r.headers << r.body);
    CHECK(r.status == 200);
    CHECK(header(r.headers, "Access-Control-Allow-Origin") == "http://ui.test");
    json stream = kChat;
    stream["stream"] = true;
    const auto s = curl(dir, "-N " + auth + "-H 'Origin: http://ui.test' " + json_data(stream),
                        base + "/v1/chat/completions");
    INFO(s.headers);
    CHECK(s.status == 200);
    CHECK(header(s.headers, "Access-Control-Allow-Origin") == "http://ui.test");
    // Errors too, so that the page can read them.
    const auto no_key = curl(dir, "-H 'Origin: http://ui.test' " + json_data(kChat), base + "/v1/chat/completions");
    INFO(no_key.headers << no_key.body);
    CHECK(no_key.status == 401);
    CHECK(header(no_key.headers, "Access-Control-Allow-Origin") == "http://ui.test");
  }

  SECTION("a POST from another origin has no Access-Control-Allow-Origin") {
    const auto r = curl(dir, "-H 'Authorization: Bearer k1' -H 'Origin: http://evil.test' " + json_data(kChat),
                        base + "/v1/chat/completions");
    INFO(r.headers << r.body);
    CHECK(r.status == 200);
    CHECK(!has_header(r.headers, "Access-Control-Allow-Origin"));
  }

  CHECK(server.stop() == 0);
}
