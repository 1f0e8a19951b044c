// ServerProcess and the HTTP helpers of the integration tests.
#include "tests/integration/server_fixture.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <atomic>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "tests/test_util.h"

namespace tc::test {

namespace {

// A log file name unique among the servers of all test processes.
std::string next_log_name() {
  static std::atomic<int> count{0};
  return "serve-" + std::to_string(getpid()) + "-" + std::to_string(count++) + ".log";
}

// The port from the server's "listening on http://HOST:PORT" line; -1 until
// it is logged.
int logged_port(const std::string& log) {
  static const std::regex listening(R"(listening on http://[^\s"]+:([0-9]+))");
  std::smatch m;
  return std::regex_search(log, m, listening) ? std::stoi(m[1].str()) : -1;
}

}  // namespace

std::filesystem::path make_test_model(const std::filesystem::path& dir, const std::string& name,
                                      const std::string& flags) {
  const auto path = dir / (name + ".gguf");
  if (!std::filesystem::exists(path)) {
    const auto r = run_command(thermocline_binary().string() + " make-model -o " + path.string() + " " + flags);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  return path;
}

ServerProcess::ServerProcess(const ServerLaunch& launch, const std::filesystem::path& model,
                             const std::vector<std::string>& extra_args, const std::filesystem::path& log_dir) {
  log_path_ = std::filesystem::absolute(log_dir / next_log_name());
  const std::string bin = launch.binary.empty() ? thermocline_binary().string() : launch.binary.string();
  // Port 0: the server binds a free port itself and logs it, so no other
  // process can take it between a probe and the bind.
  std::vector<std::string> args = {bin, "serve", "--port", "0"};
  if (!model.empty()) {
    args.push_back("--model");
    args.push_back(model.string());
  }
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    if (!freopen(log_path_.c_str(), "w", stderr)) _exit(126);
    dup2(STDERR_FILENO, STDOUT_FILENO);  // everything the server prints goes to the log, not the test output
    if (!launch.working_dir.empty() && chdir(launch.working_dir.c_str()) != 0) _exit(125);
    for (const auto& e : launch.env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  for (int i = 0; i < 300; ++i) {
    if (port_ < 0) port_ = logged_port(log());
    if (port_ > 0) {
      httplib::Client c("127.0.0.1", port_);
      c.set_connection_timeout(std::chrono::seconds(1));
      auto health = c.Get("/health");
      if (health && (health->status == 200 || !launch.require_ready)) return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      FAIL("thermocline serve exited during start-up:\n" << log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  FAIL("thermocline serve did not become healthy in 30 s:\n" << log());
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

httplib::Client ServerProcess::client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_connection_timeout(std::chrono::seconds(5));
  c.set_read_timeout(std::chrono::seconds(60));
  return c;
}

int ServerProcess::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

long ServerProcess::rss_bytes() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return -1;
}

std::string ServerProcess::log_when_contains(const std::string& needle) const {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string text = log();
  while (text.find(needle) == std::string::npos && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    text = log();
  }
  return text;
}

HealthAnswer wait_until_loaded(httplib::Client& client) {
  HealthAnswer answer;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {
    const auto health = client.Get("/health");
    REQUIRE(health);
    answer = {health->status, health->body};
    if (answer.status == 200 || answer.body.find("loading") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < give_up);
  return answer;
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

JsonResponse post_json(httplib::Client& client, const std::string& path, const nlohmann::json& body,
                       const httplib::Headers& headers) {
  JsonResponse r;
  auto res = client.Post(path, headers, body.dump(), "application/json");
  if (!res) {
    r.error = httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  r.raw = res->body;
  r.headers = res->headers;
  r.body = nlohmann::json::parse(res->body, nullptr, false);
  return r;
}

SseResponse post_stream(httplib::Client& client, const std::string& path, const nlohmann::json& body,
                        const httplib::Headers& headers) {
  SseResponse r;
  auto res = client.Post(path, headers, body.dump(), "application/json");
  if (!res) {
    r.error = httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  r.content_type = res->get_header_value("Content-Type");
  r.raw = res->body;
  size_t pos = 0;
  while (pos < r.raw.size()) {
    const size_t end = r.raw.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string event = r.raw.substr(pos, end - pos);
    pos = end + 2;
    // An event's data lines, joined; its `event:` line and comments
    // (": ping") are not data.
    std::string payload;
    bool has_data = false;
    for (size_t at = 0; at <= event.size();) {
      size_t eol = event.find('\n', at);
      if (eol == std::string::npos) eol = event.size();
      const std::string line = event.substr(at, eol - at);
      at = eol + 1;
      if (line.rfind("data: ", 0) != 0) continue;
      if (has_data) payload += '\n';
      payload += line.substr(6);
      has_data = true;
    }
    if (!has_data) continue;
    r.data.push_back(payload);
    if (payload != "[DONE]") r.events.push_back(nlohmann::json::parse(payload, nullptr, false));
  }
  return r;
}

}  // namespace tc::test
