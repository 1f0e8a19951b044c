// A Qwen3-Coder XML tool call into JSON arguments, byte by byte, and which
// parameters take text (see qwen3_coder_call_reader.h).
#include "server/qwen3_coder_call_reader.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tc::server {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kValueEnd = "\n</parameter>";
constexpr std::string_view kCallEnd = "</tool_call>";

bool is_blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Whether some declared name begins with `s`.
bool begins_a_name(const std::vector<std::string>& names, const std::string& s) {
  const auto it = std::lower_bound(names.begin(), names.end(), s);
  return it != names.end() && it->starts_with(s);
}

// The deepest nesting of brackets outside strings in a JSON text (past
// `limit`, limit + 1).
int nesting(std::string_view s, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') deepest = std::max(deepest, ++depth);
    else if (c == '}' || c == ']') --depth;
    if (deepest > limit) break;
  }
  return deepest;
}

// The schema a "#/..." JSON pointer names inside `root`, or null.
const ordered_json* resolve(const ordered_json& root, const std::string& ref) {
  if (!ref.starts_with("#")) return nullptr;
  try {
    const auto pointer = ordered_json::json_pointer(ref.substr(1));
    return root.contains(pointer) ? &root.at(pointer) : nullptr;
  } catch (const ordered_json::exception&) {
    return nullptr;
  }
}

// Whether schema `s` (`depth` levels into `root`) resolves to a string:
// llama.cpp's resolves_to_string; `visited`: the $refs followed (a cycle is no string).
bool resolves_to_string(const ordered_json& root, const ordered_json& s, std::set<std::string>& visited, int depth) {
  constexpr int kMaxSchemaDepth = 64;
  if (!s.is_object() || depth > kMaxSchemaDepth) return false;
  const auto check = [&](const ordered_json& sub) { return resolves_to_string(root, sub, visited, depth + 1); };
  if (const auto ref = s.find("$ref"); ref != s.end()) {
    if (!ref->is_string() || !visited.insert(ref->get<std::string>()).second) return false;
    const ordered_json* target = resolve(root, ref->get<std::string>());
    return target != nullptr && check(*target);
  }
  if (const auto type = s.find("type"); type != s.end()) {
    if (*type == "string") return true;
    if (type->is_array() && std::find(type->begin(), type->end(), "string") != type->end()) return true;
  }
  for (const char* any : {"oneOf", "anyOf"}) {
    if (const auto alts = s.find(any); alts != s.end() && alts->is_array()) {
      if (std::any_of(alts->begin(), alts->end(), check)) return true;
    }
  }
  if (const auto all = s.find("allOf"); all != s.end() && all->is_array()) {
    if (std::all_of(all->begin(), all->end(), check)) return true;
  }
  if (const auto c = s.find("const"); c != s.end() && c->is_string()) return true;
  if (const auto e = s.find("enum"); e != s.end() && e->is_array()) {
    if (std::any_of(e->begin(), e->end(), [](const ordered_json& v) { return v.is_string(); })) return true;
  }
  if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength")) return true;
  if (const auto f = s.find("format"); f != s.end() && f->is_string()) {
    const std::string format = f->get<std::string>();
    for (const char* string_format : {"date", "time", "date-time", "uri", "email", "hostname", "ipv4", "ipv6"}) {
      if (format == string_format) return true;
    }
    return format.starts_with("uuid");
  }
  return false;
}

}  // namespace

std::vector<std::string> text_parameters_of(const ordered_json& parameters) {
  std::vector<std::string> out;
  if (!parameters.is_object()) return out;
  const auto properties = parameters.find("properties");
  if (properties == parameters.end() || !properties->is_object()) return out;
  for (const auto& [key, property] : properties->items()) {
    std::set<std::string> visited;
    if (resolves_to_string(parameters, property, visited, 0)) out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Qwen3CoderCallReader::Qwen3CoderCallReader(bool opened) : at_(opened ? At::Blank : At::Name) {}

Qwen3CoderCallReader::Status Qwen3CoderCallReader::status() const {
  if (at_ == At::Done) return Status::Done;
  return at_ == At::Invalid ? Status::Invalid : Status::More;
}

Qwen3CoderCallReader::Status Qwen3CoderCallReader::fail() {
  at_ = At::Invalid;
  key_.clear();
  value_.clear();
  arguments_ = ordered_json::object();
  return Status::Invalid;
}

Qwen3CoderCallReader::Status Qwen3CoderCallReader::push(char c, const Qwen3CoderTools& tools) {
  if (at_ == At::Done || at_ == At::Invalid) return status();
  ++pushed_;
  return step(c, tools);
}

Qwen3CoderCallReader::Status Qwen3CoderCallReader::finish() {
  if (at_ == At::CloseBlank || at_ == At::Close) at_ = At::Done;  // no </tool_call>: the call ends at </function>
  if (at_ != At::Done) return fail();
  return Status::Done;
}

Qwen3CoderCallReader::Status Qwen3CoderCallReader::step(char c, const Qwen3CoderTools& tools) {
  switch (at_) {
    case At::Blank:
      if (is_blank(c)) return Status::More;
      at_ = At::Function;
      pos_ = 0;
      [[fallthrough]];
    case At::Function:
      if (c != kQwen3CoderFunction[pos_]) return fail();
      if (++pos_ == kQwen3CoderFunction.size()) at_ = At::Name;
      return Status::More;
    case At::Name:
      if (c == '>') {
        const auto it = std::lower_bound(tools.names.begin(), tools.names.end(), name_);
        if (it == tools.names.end() || *it != name_) return fail();
        function_ = static_cast<size_t>(it - tools.names.begin());
        at_ = At::Body;
        return Status::More;
      }
      name_ += c;
      return begins_a_name(tools.names, name_) ? Status::More : fail();
    case At::Body:
      if (is_blank(c)) return Status::More;
      if (c != '<') return fail();
      at_ = At::Tag;
      pos_ = 1;
      return Status::More;
    case At::Tag: {
      if (pos_ == 1) parameter_ = c == kParameter[1];
      const std::string_view tag = parameter_ ? kParameter : kFunctionEnd;
      if (c != tag[pos_]) return fail();
      if (++pos_ < tag.size()) return Status::More;
      if (parameter_) {
        at_ = At::Key;
        key_.clear();
      } else {
        at_ = At::CloseBlank;
        length_ = pushed_;
      }
      return Status::More;
    }
    case At::Key:
      if (c == '>') {
        if (key_.empty()) return fail();
        at_ = At::ValueStart;
        return Status::More;
      }
      key_ += c;
      return key_.size() <= kMaxKeyBytes ? Status::More : fail();
    case At::ValueStart:
      at_ = At::Value;
      value_.clear();
      if (c == '\n') return Status::More;  // the newline after the tag
      [[fallthrough]];
    case At::Value:
      value_ += c;
      if (value_ == kValueEnd.substr(1)) {
        add_value({}, tools);
      } else if (value_.ends_with(kValueEnd)) {
        value_.resize(value_.size() - kValueEnd.size());
        add_value(std::move(value_), tools);
      }
      return Status::More;
    case At::CloseBlank:
      if (is_blank(c)) return Status::More;
      if (c != '<') {
        at_ = At::Done;  // no </tool_call>: the call ends at </function>
        return Status::Done;
      }
      at_ = At::Close;
      pos_ = 1;
      return Status::More;
    case At::Close:
      if (c != kCallEnd[pos_]) {
        at_ = At::Done;  // (likewise)
        return Status::Done;
      }
      if (++pos_ == kCallEnd.size()) {
        at_ = At::Done;
        length_ = pushed_;
        return Status::Done;
      }
      return Status::More;
    case At::Done:
    case At::Invalid:
      break;
  }
  return fail();
}

void Qwen3CoderCallReader::add_value(std::string value, const Qwen3CoderTools& tools) {
  bool text = false;
  if (function_ < tools.text_parameters.size()) {
    const auto& list = tools.text_parameters[function_];
    text = std::binary_search(list.begin(), list.end(), key_);
  }
  ordered_json parsed(ordered_json::value_t::discarded);
  if (!text && nesting(value, kMaxDepth) <= kMaxDepth) {
    parsed = ordered_json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_number_float() && !std::isfinite(parsed.get<double>())) parsed = ordered_json::value_t::discarded;
  }
  arguments_[key_] = text || parsed.is_discarded() ? ordered_json(std::move(value)) : std::move(parsed);
  key_.clear();
  value_.clear();
  at_ = At::Body;
}

ToolCall Qwen3CoderCallReader::call() const {
  return {name_, arguments_.dump(-1, ' ', false, ordered_json::error_handler_t::replace), ""};
}

}  // namespace tc::server
