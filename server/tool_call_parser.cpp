// Tool calls in a model's reply (see tool_call_parser.h).
#include "server/tool_call_parser.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

namespace tc::server {
namespace {

using nlohmann::json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kFence = "```";
// Mistral's control tokens, in the text when the engine renders them
// (tool_marker_ids): [TOOL_CALLS] opens each call (or a JSON array of
// them), [ARGS] ends a name, [CALL_ID] a name that an id follows.
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";
constexpr std::string_view kMarkers[] = {kOpen, kMistralOpen};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t first_non_space(std::string_view s, size_t from = 0) {
  while (from < s.size() && is_space(s[from])) ++from;
  return from;
}

// Where the JSON object or array opening at s[start] ends (one past its
// closing bracket), or npos when it does not close. Brackets inside strings
// do not count; whether the text between is JSON is nlohmann's to say.
size_t value_end(std::string_view s, size_t start) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = start; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

bool add_calls(const json& j, const std::vector<std::string>& names, std::vector<ToolCall>& out) {
  if (j.is_array()) {
    if (j.empty()) return false;
    return std::all_of(j.begin(), j.end(), [&](const json& item) { return add_calls(item, names, out); });
  }
  if (!j.is_object()) return false;
  if (!j.contains("name")) {
    // {"tool_calls": [...]} and OpenAI's own {"type": "function", "function": {...}}.
    if (auto it = j.find("tool_calls"); it != j.end() && it->is_array()) return add_calls(*it, names, out);
    if (auto it = j.find("function"); it != j.end() && it->is_object()) return add_calls(*it, names, out);
    return false;
  }
  const json& name = j["name"];
  if (!name.is_string() || !std::binary_search(names.begin(), names.end(), name.get<std::string>())) return false;
  json arguments = json::object();
  auto it = j.find("arguments");
  if (it == j.end()) it = j.find("parameters");
  if (it != j.end() && !it->is_null()) {
    arguments = it->is_string() ? json::parse(it->get<std::string>(), nullptr, false) : *it;
    if (!arguments.is_object()) return false;
  }
  out.push_back({name.get<std::string>(), arguments.dump(-1, ' ', false, json::error_handler_t::replace), ""});
  return true;
}

// Calls written as JSON: `s` from its first non-space byte (an object, an
// array, or a ``` fence around them); nullopt unless all of it is calls.
std::optional<std::vector<ToolCall>> json_calls(std::string_view s, const std::vector<std::string>& names) {
  if (s.starts_with(kFence)) {
    const size_t line_end = s.find('\n');
    s = line_end == std::string_view::npos ? std::string_view() : s.substr(line_end + 1);
    const size_t last = s.find_last_not_of(" \n\t\r");
    if (last != std::string_view::npos && last >= 2 && s.substr(last - 2, 3) == kFence) s = s.substr(0, last - 2);
  }
  std::vector<ToolCall> calls;
  size_t i = 0;
  while (true) {
    while (i < s.size() && (is_space(s[i]) || s[i] == ';' || s[i] == ',')) ++i;
    if (i == s.size()) break;
    if (s[i] != '{' && s[i] != '[') return std::nullopt;
    const size_t end = value_end(s, i);
    if (end == std::string_view::npos) return std::nullopt;
    const json value = json::parse(s.substr(i, end - i), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded() || !add_calls(value, names, calls)) return std::nullopt;
    i = end;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// Hermes-style blocks from `open` (the first "<tool_call>"); nullopt when a
// block is not a call.
std::optional<ToolCallReply> tagged_calls(std::string_view text, size_t open, const std::vector<std::string>& names) {
  ToolCallReply reply;
  reply.content = std::string(text.substr(0, open));
  size_t at = open;
  while (at != std::string_view::npos) {
    const size_t body = at + kOpen.size();
    const size_t close = text.find(kClose, body);
    const std::string_view inside =
        text.substr(body, close == std::string_view::npos ? std::string_view::npos : close - body);
    auto calls = json_calls(inside.substr(first_non_space(inside)), names);
    if (!calls) return std::nullopt;
    reply.calls.insert(reply.calls.end(), calls->begin(), calls->end());
    if (close == std::string_view::npos) break;
    const size_t after = close + kClose.size();
    at = text.find(kOpen, after);
    const std::string_view between =
        text.substr(after, at == std::string_view::npos ? std::string_view::npos : at - after);
    if (first_non_space(between) < between.size()) reply.content.append(between);
  }
  return reply;
}

// One Mistral call after its [TOOL_CALLS]: NAME[ARGS]{...} or
// NAME[CALL_ID]ID[ARGS]{...} (v11 and later), or JSON (a call object or an
// array of them, v3); nullopt unless the whole segment is calls.
std::optional<std::vector<ToolCall>> mistral_segment(std::string_view seg, const std::vector<std::string>& names) {
  seg = seg.substr(first_non_space(seg));
  if (seg.empty()) return std::nullopt;
  if (seg[0] == '{' || seg[0] == '[') return json_calls(seg, names);
  const size_t args = seg.find(kMistralArgs);
  if (args == std::string_view::npos) return std::nullopt;
  std::string_view name = seg.substr(0, args);
  if (const size_t id = name.find(kMistralCallId); id != std::string_view::npos) name = name.substr(0, id);
  const std::string_view body = seg.substr(args + kMistralArgs.size());
  const size_t start = first_non_space(body);
  if (start == body.size() || body[start] != '{') return std::nullopt;
  const size_t end = value_end(body, start);
  if (end == std::string_view::npos || first_non_space(body, end) != body.size()) return std::nullopt;
  const json call = {{"name", std::string(name)},
                     {"arguments", json::parse(body.substr(start, end - start), nullptr, /*allow_exceptions=*/false)}};
  std::vector<ToolCall> out;
  if (call["arguments"].is_discarded() || !add_calls(call, names, out)) return std::nullopt;
  return out;
}

// Mistral's calls from `open` (the first [TOOL_CALLS]) to the end; nullopt
// when a segment is not a call.
std::optional<ToolCallReply> mistral_calls(std::string_view text, size_t open, const std::vector<std::string>& names) {
  ToolCallReply reply;
  reply.content = std::string(text.substr(0, open));
  size_t at = open;
  while (at != std::string_view::npos) {
    const size_t body = at + kMistralOpen.size();
    const size_t next = text.find(kMistralOpen, body);
    auto calls = mistral_segment(text.substr(body, next == std::string_view::npos ? std::string_view::npos : next - body), names);
    if (!calls) return std::nullopt;
    reply.calls.insert(reply.calls.end(), calls->begin(), calls->end());
    at = next;
  }
  return reply;
}

// Where the first marker of a call form begins in `text`, or npos.
size_t first_marker(std::string_view text) {
  size_t best = std::string_view::npos;
  for (const auto marker : kMarkers) best = std::min(best, text.find(marker));
  return best;
}

}  // namespace

std::vector<int32_t> tool_marker_ids(const std::vector<std::string>& pieces) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& p = pieces[i];
    if (p == kMistralOpen || p == kMistralArgs || p == kMistralCallId) out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

ToolCallReply parse_tool_calls(std::string_view text, const std::vector<std::string>& names) {
  if (const size_t open = text.find(kMistralOpen); open != std::string_view::npos && open < text.find(kOpen)) {
    if (auto reply = mistral_calls(text, open, names)) {
      if (first_non_space(reply->content) == reply->content.size()) reply->content.clear();
      return *reply;
    }
    return {std::string(text), {}};
  }
  if (const size_t open = text.find(kOpen); open != std::string_view::npos) {
    if (auto reply = tagged_calls(text, open, names)) {
      if (first_non_space(reply->content) == reply->content.size()) reply->content.clear();  // only blank lines
      return *reply;
    }
    return {std::string(text), {}};
  }
  const size_t start = first_non_space(text);
  if (start < text.size() && (text[start] == '{' || text[start] == '[' || text.substr(start).starts_with(kFence))) {
    if (auto calls = json_calls(text.substr(start), names)) return {std::string(), std::move(*calls)};
  }
  return {std::string(text), {}};
}

ToolCallStream::ToolCallStream(bool hold_all) : mode_(hold_all ? Mode::Holding : Mode::Undecided) {}

std::string ToolCallStream::release(size_t n) {
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  shown_ += out;
  return out;
}

std::string ToolCallStream::push(std::string_view text) {
  pending_.append(text);
  if (mode_ == Mode::Holding) return {};
  if (mode_ == Mode::Undecided) {
    const size_t start = first_non_space(pending_);
    if (start == pending_.size()) return {};
    const std::string_view rest = std::string_view(pending_).substr(start);
    if (rest[0] == '{' || rest[0] == '[' || rest.starts_with(kFence) || rest.starts_with(kOpen) ||
        rest.starts_with(kMistralOpen)) {
      mode_ = Mode::Holding;
      return {};
    }
    // "``", "<tool" or "[TOOL": wait ("[" alone was held above).
    if (kFence.starts_with(rest) || kOpen.starts_with(rest)) return {};
    mode_ = Mode::Text;
  }
  if (const size_t open = first_marker(pending_); open != std::string::npos) {
    std::string out = release(open);
    mode_ = Mode::Holding;
    return out;
  }
  // Keep back the longest tail that could begin a marker.
  size_t keep = 0;
  for (const auto marker : kMarkers) {
    size_t k = std::min(marker.size() - 1, pending_.size());
    while (k > keep && !std::string_view(pending_).ends_with(marker.substr(0, k))) --k;
    keep = std::max(keep, k);
  }
  return release(pending_.size() - keep);
}

ToolCallReply ToolCallStream::finish(const std::vector<std::string>& names) {
  ToolCallReply reply = parse_tool_calls(shown_ + pending_, names);
  if (reply.calls.empty()) {
    reply.content = std::move(pending_);
  } else {
    // The content before the first call begins with what was shown.
    reply.content = reply.content.size() > shown_.size() ? reply.content.substr(shown_.size()) : std::string();
  }
  pending_.clear();
  return reply;
}

}  // namespace tc::server
