// llama.cpp's native completion objects for /completion and /infill (see
// native_responses.h).
#include "server/native_responses.h"

#include <algorithm>

#include "engine/text/unicode.h"

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

// A token's text as llama.cpp sends it: `token` cut to whole UTF-8
// characters (a piece may end inside one), `bytes` all of them.
void add_piece(nlohmann::json& out, const std::string& piece) {
  nlohmann::json bytes = nlohmann::json::array();
  for (const char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  out["token"] = piece.substr(0, text::utf8_complete_prefix(piece));
  out["bytes"] = std::move(bytes);
}

}  // namespace

nlohmann::json native_probabilities(const std::vector<runtime::TokenInfo>& tokens) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : tokens) {
    nlohmann::json entry = {{"id", t.id}};
    add_piece(entry, t.piece);
    entry["logprob"] = t.logprob;
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [piece, logprob] : t.top) {
      nlohmann::json alt;
      add_piece(alt, piece);
      alt["logprob"] = logprob;
      top.push_back(std::move(alt));
    }
    entry["top_logprobs"] = std::move(top);
    out.push_back(std::move(entry));
  }
  return out;
}

nlohmann::json native_chunk(const std::string& content, const std::vector<runtime::TokenInfo>& tokens) {
  nlohmann::json out = {{"index", 0}, {"content", content}, {"tokens", nlohmann::json::array()}, {"stop", false}};
  if (!tokens.empty()) out["completion_probabilities"] = native_probabilities(tokens);
  return out;
}

nlohmann::json native_final(const NativeMeta& meta, const ChoiceResult& reply, bool streamed,
                            const runtime::Usage& usage, const RequestRecord& record, bool probabilities) {
  const std::string& text = reply.text;
  const char* stop_type = reply.finish == runtime::FinishReason::Length ? "limit"
                          : reply.stop_word.empty()                     ? "eos"
                                                                        : "word";
  nlohmann::json timings = nlohmann::json::object();
  add_rate(timings, "prompt", usage.prompt_tokens - usage.cached_tokens, record.first_token_seconds);
  add_rate(timings, "predicted", usage.completion_tokens,
           record.total_seconds - record.queue_seconds - record.first_token_seconds);
  nlohmann::json out = {{"index", 0},
          {"content", streamed ? std::string() : text},
          {"tokens", nlohmann::json::array()},
          {"stop", true},
          {"model", meta.model},
          {"stop_type", stop_type},
          {"stopping_word", reply.stop_word},
          {"tokens_predicted", usage.completion_tokens},
          {"tokens_evaluated", usage.prompt_tokens},
          {"tokens_cached", usage.prompt_tokens + usage.completion_tokens},
          {"truncated", meta.truncated},
          {"has_new_line", text.find('\n') != std::string::npos},
          {"generation_settings", {{"n_ctx", meta.n_ctx}, {"n_predict", meta.n_predict}}},
          {"timings", std::move(timings)}};
  if (probabilities && !streamed && !reply.tokens.empty()) {
    out["completion_probabilities"] = native_probabilities(reply.tokens);
  }
  return out;
}

}  // namespace tc::server
