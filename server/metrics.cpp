// Prometheus text rendering of the server's metrics.
#include "server/metrics.h"

#include <fmt/format.h>

namespace tc::server {

void Histogram::observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) {
      ++buckets_[i];
      break;
    }
  }
  ++count_;
  sum_ += seconds;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

void Metrics::record(const RequestRecord& r) {
  std::lock_guard lock(mutex_);
  ++requests_[{r.route, r.status}];
  if (!r.model.empty()) ++model_requests_[{r.model, r.status}];
  if (!r.generated) return;
  queue_time_.observe(r.queue_seconds);
  request_duration_.observe(r.total_seconds);
  if (r.completion_tokens > 0) time_to_first_token_.observe(r.queue_seconds + r.first_token_seconds);
  if (r.completion_tokens > 1) {
    const double decode = r.total_seconds - r.queue_seconds - r.first_token_seconds;  // total counts from queueing
    inter_token_latency_.observe(decode / static_cast<double>(r.completion_tokens - 1));
  }
}

namespace {

void gauge(std::string& out, const char* name, const char* help, const char* type, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

}  // namespace

std::string Metrics::render(const runtime::EngineStats& e) const {
  std::string out;
  gauge(out, "thermocline_engine_ready", "1 when the engine serves requests", "gauge",
        e.state == runtime::EngineState::Ready ? 1 : 0);
  gauge(out, "thermocline_requests_running", "Requests holding a sequence slot", "gauge", e.requests_running);
  gauge(out, "thermocline_requests_waiting", "Requests queued for a slot", "gauge", e.requests_waiting);
  gauge(out, "thermocline_prompt_tokens_total", "Prompt tokens processed (not counting cached)", "counter",
        static_cast<double>(e.prompt_tokens_total));
  gauge(out, "thermocline_prompt_tokens_cached_total", "Prompt tokens reused from the KV cache", "counter",
        static_cast<double>(e.cached_tokens_total));
  gauge(out, "thermocline_generation_tokens_total", "Tokens generated", "counter",
        static_cast<double>(e.generated_tokens_total));
  gauge(out, "thermocline_engine_steps_total", "Forward steps run by the engine", "counter",
        static_cast<double>(e.steps_total));
  gauge(out, "thermocline_context_shifts_total", "Full sequences that dropped their context's oldest half to go on",
        "counter", static_cast<double>(e.context_shifts_total));
  gauge(out, "thermocline_draft_tokens_total", "Lookup-drafted tokens run through the model (--lookup-draft)",
        "counter", static_cast<double>(e.draft_tokens_total));
  gauge(out, "thermocline_draft_tokens_accepted_total",
        "Lookup-drafted tokens that sampling kept, each a decode step saved", "counter",
        static_cast<double>(e.draft_tokens_accepted_total));
  gauge(out, "thermocline_kv_cache_tokens_used", "KV cache entries in use over all slots", "gauge",
        static_cast<double>(e.kv_tokens_used));
  gauge(out, "thermocline_kv_cache_usage_ratio", "Share of the KV cache in use", "gauge",
        e.kv_tokens_capacity > 0 ? static_cast<double>(e.kv_tokens_used) / static_cast<double>(e.kv_tokens_capacity)
                                 : 0.0);
  std::lock_guard lock(mutex_);
  out += "# HELP thermocline_http_requests_total HTTP requests by route and status\n"
         "# TYPE thermocline_http_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    out += fmt::format("thermocline_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", key.first, key.second,
                       count);
  }
  time_to_first_token_.render(out, "thermocline_time_to_first_token_seconds",
                              "Time from arrival to the first generated token");
  inter_token_latency_.render(out, "thermocline_inter_token_latency_seconds",
                              "Mean time between generated tokens, per request");
  queue_time_.render(out, "thermocline_queue_time_seconds", "Time a request waited for a slot");
  request_duration_.render(out, "thermocline_request_duration_seconds", "Time from queueing to the last token");
  if (!model_requests_.empty()) {
    out += "# HELP thermocline_model_requests_total Generation requests by model and status\n"
           "# TYPE thermocline_model_requests_total counter\n";
    for (const auto& [key, count] : model_requests_) {
      out += fmt::format("thermocline_model_requests_total{{model=\"{}\",status=\"{}\"}} {}\n", key.first,
                         key.second, count);
    }
  }
  return out;
}

std::string Metrics::render(const runtime::EngineStats& engine, const std::string& per_model) const {
  return render(engine) + per_model;
}

}  // namespace tc::server
