// The per-request log line (request_log.h).
#include "server/request_log.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <string_view>
#include <utility>

namespace tc::server {
namespace {

std::atomic<bool> g_json{false};

}  // namespace

RequestLogLine plain_request_line(std::string method, std::string route, int status, double total_s,
                                  std::string error) {
  RequestLogLine line;
  line.method = std::move(method);
  line.route = std::move(route);
  line.status = status;
  line.total_s = total_s;
  line.error = std::move(error);
  return line;
}

std::string request_log_text(const RequestLogLine& l) {
  std::string out = fmt::format("request {} {} {} status={}", l.id, l.method, l.route, l.status);
  if (l.prompt_tokens) out += fmt::format(" prompt_tokens={}", *l.prompt_tokens);
  if (l.completion_tokens) out += fmt::format(" completion_tokens={}", *l.completion_tokens);
  if (l.cached_tokens) out += fmt::format(" cached_tokens={}", *l.cached_tokens);
  if (l.queue_s) out += fmt::format(" queue_s={:.3f}", *l.queue_s);
  if (l.ttft_s) out += fmt::format(" ttft_s={:.3f}", *l.ttft_s);
  out += fmt::format(" total_s={:.3f}", l.total_s);
  if (!l.model.empty()) out += " model=" + nlohmann::json(l.model).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Quoted with JSON escapes, so an error message cannot forge fields or lines.
  if (!l.error.empty()) out += " error=" + nlohmann::json(l.error).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return out;
}

nlohmann::json request_log_json(const RequestLogLine& l) {
  nlohmann::json j = {{"event", "request"}, {"id", l.id},         {"method", l.method},
                      {"route", l.route},   {"status", l.status}, {"total_s", l.total_s}};
  if (!l.model.empty()) j["model"] = l.model;
  if (l.prompt_tokens) j["prompt_tokens"] = *l.prompt_tokens;
  if (l.completion_tokens) j["completion_tokens"] = *l.completion_tokens;
  if (l.cached_tokens) j["cached_tokens"] = *l.cached_tokens;
  if (l.queue_s) j["queue_s"] = *l.queue_s;
  if (l.ttft_s) j["ttft_s"] = *l.ttft_s;
  if (!l.error.empty()) j["error"] = l.error;
  return j;
}

void set_request_log_json(bool json) { g_json.store(json); }

void log_request(const RequestLogLine& line) {
  auto ends_with = [&](std::string_view suffix) {
    return line.route.size() >= suffix.size() && line.route.compare(line.route.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool polled = ends_with("/health") || ends_with("/metrics");
  const auto level = polled ? spdlog::level::debug : spdlog::level::info;
  if (!spdlog::should_log(level)) return;
  if (g_json.load()) {
    spdlog::log(level, "{}", request_log_json(line).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    spdlog::log(level, "{}", request_log_text(line));
  }
}

}  // namespace tc::server
