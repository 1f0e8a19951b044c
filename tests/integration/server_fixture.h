// A real `thermocline serve` process for integration tests: a generated
// model, a loopback port the server picks (--port 0), /health polled until ready, SIGTERM on
// destruction (with the exit status checked by stop()).
#pragma once

#include <httplib.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tc::test {

// Generates (once per scratch dir) a small model with make-model flags.
std::filesystem::path make_test_model(const std::filesystem::path& dir, const std::string& name,
                                      const std::string& make_model_flags);

// How to start the server process: which binary (default: the build's), in
// which working directory (default: the test's), with which extra
// environment variables ("NAME=value").
struct ServerLaunch {
  std::filesystem::path binary;
  std::filesystem::path working_dir;
  std::vector<std::string> env;
  // false: start-up ends once /health answers at all (any status), for a
  // server whose engine is expected to fail.
  bool require_ready = true;
};

class ServerProcess {
 public:
  // Starts `thermocline serve -m model --port P extra_args...`, waits up to
  // 30 s for /health 200 (any answer unless launch.require_ready). REQUIREs
  // that it came up. An empty model passes
  // no --model (the bundled default model).
  ServerProcess(const std::filesystem::path& model, const std::vector<std::string>& extra_args,
                const std::filesystem::path& log_dir)
      : ServerProcess(ServerLaunch{}, model, extra_args, log_dir) {}
  ServerProcess(const ServerLaunch& launch, const std::filesystem::path& model,
                const std::vector<std::string>& extra_args, const std::filesystem::path& log_dir);
  ~ServerProcess();  // SIGKILL if still running

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  httplib::Client client() const;
  // SIGTERM, waits; returns the exit status (-1 if killed by a signal).
  int stop();
  // Resident set size of the server process in bytes (from /proc).
  long rss_bytes() const;
  std::string log() const;
  // The log once it contains `needle` (the server writes some lines after
  // /health already tells the same news), or as it is after 10 s.
  std::string log_when_contains(const std::string& needle) const;

 private:
  int pid_ = -1;
  int port_ = -1;
  std::filesystem::path log_path_;
};

// A server started with launch.require_ready = false: polls /health until
// the engine leaves Loading (200 ready, or 503 naming why it failed; 60 s
// at most) and returns that last answer.
struct HealthAnswer {
  int status = 0;
  std::string body;
};
HealthAnswer wait_until_loaded(httplib::Client& client);

// POST a JSON body; the parsed response (status, json body or null).
struct JsonResponse {
  int status = 0;       // 0: no HTTP response (see `error`)
  std::string error;    // httplib's client error when status is 0
  nlohmann::json body;
  std::string raw;
  httplib::Headers headers;
};
JsonResponse post_json(httplib::Client& client, const std::string& path, const nlohmann::json& body,
                       const httplib::Headers& headers = {});

// A streamed response split into its SSE `data:` payloads (JSON or "[DONE]")
// and comment lines.
struct SseResponse {
  int status = 0;      // 0: no HTTP response (see `error`)
  std::string error;   // httplib's client error when status is 0
  std::string content_type;
  std::vector<std::string> data;      // payloads in order, "[DONE]" included
  std::vector<nlohmann::json> events; // the JSON payloads
  std::string raw;
};
SseResponse post_stream(httplib::Client& client, const std::string& path, const nlohmann::json& body,
                        const httplib::Headers& headers = {});

}  // namespace tc::test
