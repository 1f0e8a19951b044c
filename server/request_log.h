// One log line per HTTP request (issue 4): id, method, route, status,
// prompt / completion / cached tokens, queue time, time to first token and
// total time. As text: `request <id> <METHOD> <route> status=200 key=value
// ...`; with --log-format json the same fields are keys of the line's JSON
// object (cli/cmd_serve.cpp's formatter merges them), so log shippers get
// numbers, not a sentence to parse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tc::server {

struct RequestLogLine {
  std::string id = "-";  // the response id of a generation request ("chatcmpl-..."), else "-"
  std::string method;
  std::string route;  // canonical ("/v1/chat/completions"), or the raw path of an unknown one
  int status = 200;
  std::string model;                      // the model a generation request named (resolved), else empty
  std::optional<int64_t> prompt_tokens, completion_tokens, cached_tokens;  // generation routes
  std::optional<double> queue_s, ttft_s;  // seconds; generation requests that reached the engine
  double total_s = 0;                     // arrival (or admission) to the last byte handed to the client
  std::string error;                      // empty on success
};

// A line with no token counts or engine timings (routes that do not generate,
// requests answered before routing).
RequestLogLine plain_request_line(std::string method, std::string route, int status, double total_s = 0,
                                  std::string error = {});

std::string request_log_text(const RequestLogLine& line);
// {"event": "request", "id": ..., ...}: absent optionals are left out.
nlohmann::json request_log_json(const RequestLogLine& line);

// Whether log_request writes JSON payloads (set once at start by serve).
void set_request_log_json(bool json);

// Logs the line through spdlog: at debug for the polled routes (/health,
// /metrics) so a load balancer's checks do not flood the log, else at info.
void log_request(const RequestLogLine& line);

}  // namespace tc::server
