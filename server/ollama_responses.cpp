// Ollama response lines and bodies (see ollama_responses.h).
#include "server/ollama_responses.h"

#include <fmt/format.h>

#include <ctime>

#include "server/openai_responses.h"

namespace tc::server {
namespace {

int64_t nanos(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

nlohmann::json base(const OllamaMeta& meta, const std::string& text, bool done,
                    const std::vector<ToolCall>& calls = {}, const std::string& thinking = "") {
  nlohmann::json j = {{"model", meta.model}, {"created_at", rfc3339(std::chrono::system_clock::now())}};
  if (meta.chat) {
    j["message"] = {{"role", "assistant"}, {"content", text}};
    if (!thinking.empty()) j["message"]["thinking"] = thinking;
    if (!calls.empty()) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& call : calls) {
        out.push_back({{"function", {{"name", call.name}, {"arguments", nlohmann::json::parse(call.arguments)}}}});
      }
      j["message"]["tool_calls"] = std::move(out);
    }
  } else {
    j["response"] = text;
    if (!thinking.empty()) j["thinking"] = thinking;
  }
  j["done"] = done;
  return j;
}

}  // namespace

std::string rfc3339(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ns % 1000000000);
}

nlohmann::json ollama_chunk(const OllamaMeta& meta, const std::string& text, const std::vector<ToolCall>& calls) {
  return base(meta, text, false, calls);
}

nlohmann::json ollama_thinking_chunk(const OllamaMeta& meta, const std::string& thinking) {
  return base(meta, "", false, {}, thinking);
}

nlohmann::json ollama_done(const OllamaMeta& meta, const std::string& text, runtime::FinishReason finish,
                           const runtime::Usage& usage, const RequestRecord& record,
                           std::chrono::steady_clock::time_point arrived, const std::vector<ToolCall>& calls,
                           const std::string& thinking) {
  nlohmann::json j = base(meta, text, true, calls, thinking);
  j["done_reason"] = finish == runtime::FinishReason::Length ? "length" : "stop";
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
  j["total_duration"] = nanos(total);
  j["load_duration"] = nanos(meta.load_seconds);
  j["prompt_eval_count"] = usage.prompt_tokens;
  j["prompt_eval_duration"] = nanos(record.first_token_seconds);
  j["eval_count"] = usage.completion_tokens;
  j["eval_duration"] =
      nanos(std::max(0.0, record.total_seconds - record.queue_seconds - record.first_token_seconds));
  return j;
}

nlohmann::json ollama_load_reply(const OllamaMeta& meta, const char* done_reason) {
  nlohmann::json j = base(meta, "", true);
  j["done_reason"] = done_reason;
  return j;
}

nlohmann::json ollama_capabilities(const std::string& arch, const nlohmann::json& metadata,
                                   const std::string& chat_template, bool fill_in_middle, bool vision) {
  if (metadata.is_object()) {
    const auto it = metadata.find(arch + ".pooling_type");
    if (it != metadata.end() && it->is_number_integer() && it->get<int64_t>() != 0) {
      // Rank pooling (4): a reranker, for /v1/rerank (not one of Ollama's words; its clients skip it).
      if (it->get<int64_t>() == 4) return nlohmann::json::array({"embedding", "rerank"});
      return nlohmann::json::array({"embedding"});
    }
  }
  nlohmann::json out = nlohmann::json::array({"completion", "tools"});
  if (chat_template.find("<think>") != std::string::npos ||
      chat_template.find("enable_thinking") != std::string::npos ||
      chat_template.find("<|channel|>analysis") != std::string::npos ||  // gpt-oss's harmony
      chat_template.find("<|channel>thought") != std::string::npos) {   // Gemma 4's
    out.push_back("thinking");
  }
  if (fill_in_middle) out.push_back("insert");
  if (vision) out.push_back("vision");
  return out;
}

std::string ndjson_line(const nlohmann::json& j) { return dump_json(j) + "\n"; }

std::string ollama_error_body(const std::string& message) { return dump_json({{"error", message}}); }

}  // namespace tc::server
