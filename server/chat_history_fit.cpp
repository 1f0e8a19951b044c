// Dropping a chat's oldest messages until its prompt fits (chat_history_fit.h).
#include "server/chat_history_fit.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "server/image_input.h"

namespace tc::server {
namespace {

using nlohmann::json;

bool has_role(const json& m, const char* role) {
  const auto r = m.find("role");
  return r != m.end() && r->is_string() && r->get<std::string>() == role;
}

}  // namespace

size_t tool_block_start(const json& messages, size_t i) {
  if (i == 0 || !has_role(messages[i], "tool")) return i;
  size_t start = i;
  while (start > 0 && has_role(messages[start - 1], "tool")) --start;
  if (start == 0) return i;
  const json& call = messages[start - 1];
  const auto calls = call.find("tool_calls");
  if (has_role(call, "assistant") && calls != call.end() && calls->is_array() && !calls->empty()) return start - 1;
  return i;
}

json kept_messages(const json& messages, size_t start) {
  json kept = json::array();
  for (size_t j = 0; j < start; ++j) {
    if (has_role(messages[j], "system")) kept.push_back(messages[j]);
  }
  for (size_t j = start; j < messages.size(); ++j) kept.push_back(messages[j]);
  return kept;
}

std::vector<std::string> kept_images(const ChatRequest& request, size_t start) {
  std::vector<std::string> kept;
  size_t next = 0;
  const json& messages = request.messages;
  for (size_t j = 0; j < messages.size(); ++j) {
    const auto content = messages[j].find("content");
    size_t n = 0;
    if (content != messages[j].end() && content->is_string()) {
      const std::string& text = content->get_ref<const std::string&>();
      for (size_t at = text.find(kImageMarker); at != std::string::npos; at = text.find(kImageMarker, at + 1)) ++n;
    }
    const bool keep = j >= start || has_role(messages[j], "system");
    for (size_t k = 0; k < n && next < request.images.size(); ++k, ++next) {
      if (keep) kept.push_back(request.images[next]);
    }
  }
  return kept;
}

Plan plan_chat_fitting_history(const ChatRequest& request, const ServingModel& serving,
                               const config::ServeOptions& options, size_t& dropped) {
  dropped = 0;
  Plan plan = plan_chat(request, serving, options);
  const size_t n = request.messages.size();
  if (!plan.error || plan.error->code != "context_length_exceeded" || n < 2) return plan;
  const int64_t n_ctx = serving.engine->n_ctx();
  // Room for the reply: max_tokens, or a quarter of the context (also when
  // the context shifts, which lets a longer reply go on past it).
  const int64_t reserve = request.common.context_shift ? std::min(request.common.max_tokens.value_or(n_ctx / 4), n_ctx / 4)
                                                       : request.common.max_tokens.value_or(n_ctx / 4);
  ChatRequest trial = request;
  // Whether the history kept from message i on leaves `reserve` tokens.
  auto fits = [&](size_t i) {
    const size_t start = tool_block_start(request.messages, i);
    trial.messages = kept_messages(request.messages, start);
    trial.images = kept_images(request, start);
    const ChatTokens tokens = tokenize_chat(trial, serving, /*image_rows=*/false);
    return !tokens.error && static_cast<int64_t>(tokens.ids.size()) + reserve <= n_ctx;
  };
  // Dropping more never lengthens the prompt: the first i in [1, n - 1]
  // that fits, by bisection.
  size_t lo = 1, hi = n - 1;
  if (!fits(hi)) return plan;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const size_t start = tool_block_start(request.messages, lo);
  trial.messages = kept_messages(request.messages, start);
  trial.images = kept_images(request, start);
  Plan fitted = plan_chat(trial, serving, options);
  if (fitted.error) return plan;
  dropped = n - trial.messages.size();
  return fitted;
}

Plan plan_chat_request(const ChatRequest& request, const ServingModel& serving, const config::ServeOptions& options) {
  if (!request.truncate) return plan_chat(request, serving, options);
  size_t dropped = 0;
  Plan plan = plan_chat_fitting_history(request, serving, options, dropped);
  if (dropped > 0) {
    spdlog::info("model {}: the conversation's {} oldest messages dropped to fit the context of {} tokens",
                 serving.model_id, dropped, serving.engine->n_ctx());
  }
  return plan;
}

}  // namespace tc::server
