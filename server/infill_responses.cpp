// llama.cpp's native completion objects for /infill (see infill_responses.h).
#include "server/infill_responses.h"

#include <algorithm>

namespace tc::server {
namespace {

// Milliseconds and the per-token and per-second rates llama.cpp prints.
void add_rate(nlohmann::json& timings, const char* prefix, int64_t n, double seconds) {
  const std::string p(prefix);
  const double ms = std::max(0.0, seconds) * 1000.0;
  timings[p + "_n"] = n;
  timings[p + "_ms"] = ms;
  timings[p + "_per_token_ms"] = n > 0 ? ms / static_cast<double>(n) : 0.0;
  timings[p + "_per_second"] = ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0;
}

}  // namespace

nlohmann::json infill_chunk(const std::string& content) {
  return {{"index", 0}, {"content", content}, {"tokens", nlohmann::json::array()}, {"stop", false}};
}

nlohmann::json infill_final(const InfillMeta& meta, const std::string& text, bool streamed,
                            runtime::FinishReason finish, const runtime::Usage& usage, const RequestRecord& record) {
  nlohmann::json timings = nlohmann::json::object();
  add_rate(timings, "prompt", usage.prompt_tokens - usage.cached_tokens, record.first_token_seconds);
  add_rate(timings, "predicted", usage.completion_tokens,
           record.total_seconds - record.queue_seconds - record.first_token_seconds);
  return {{"index", 0},
          {"content", streamed ? std::string() : text},
          {"tokens", nlohmann::json::array()},
          {"stop", true},
          {"model", meta.model},
          {"stop_type", finish == runtime::FinishReason::Length ? "limit" : "eos"},
          {"stopping_word", ""},
          {"tokens_predicted", usage.completion_tokens},
          {"tokens_evaluated", usage.prompt_tokens},
          {"tokens_cached", usage.prompt_tokens + usage.completion_tokens},
          {"truncated", meta.truncated},
          {"has_new_line", text.find('\n') != std::string::npos},
          {"generation_settings", {{"n_ctx", meta.n_ctx}, {"n_predict", meta.n_predict}}},
          {"timings", std::move(timings)}};
}

}  // namespace tc::server
