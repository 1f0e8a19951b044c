// Metrics: counters and latency histograms recorded by the HTTP threads,
// rendered with the engine's gauges in the Prometheus text format (0.0.4)
// for GET /metrics. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/runtime/engine.h"

namespace tc::server {

// A cumulative histogram with fixed bucket bounds (seconds).
class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                    1,     2.5,  5,     10,   30,  60,  120};
  void observe(double seconds);
  // Appends "# HELP", "# TYPE" and the bucket/sum/count lines for `name`.
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::array<uint64_t, kBounds.size()> buckets_{};  // non-cumulative counts per bound
  uint64_t count_ = 0;
  double sum_ = 0;
};

// What one finished request contributes.
struct RequestRecord {
  std::string route;    // "/v1/chat/completions", ...
  int status = 200;
  std::string model{};     // generation requests: the model (resolved name); empty otherwise
  bool generated = false;  // a completion that ran on the engine (timings below are valid)
  double queue_seconds = 0;
  double first_token_seconds = 0;   // admission -> first token
  double total_seconds = 0;
  int64_t completion_tokens = 0;
};

class Metrics {
 public:
  void record(const RequestRecord& record);
  std::string render(const runtime::EngineStats& engine) const;
  // The above, then `per_model` (ModelRegistry::render_metrics's series).
  std::string render(const runtime::EngineStats& engine, const std::string& per_model) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) -> count
  std::map<std::pair<std::string, int>, uint64_t> model_requests_;  // (model, status) -> count
  Histogram time_to_first_token_;
  Histogram inter_token_latency_;
  Histogram queue_time_;
  Histogram request_duration_;
};

}  // namespace tc::server
