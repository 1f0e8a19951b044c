// Python str operations for the chat template engine (see jinja_strings.h).
#include "engine/text/jinja_strings.h"

#include "engine/text/jinja_value.h"
#include "engine/text/unicode.h"

namespace tc::text::jinja {
namespace {
char32_t upper(char32_t c) { return (c >= U'a' && c <= U'z') ? c - 32 : c; }
char32_t lower(char32_t c) { return (c >= U'A' && c <= U'Z') ? c + 32 : c; }
}  // namespace

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  const std::u32string u = to_u32(s);
  const std::u32string set = chars ? to_u32(*chars) : std::u32string();
  const auto strip = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t b = 0, e = u.size();
  if (side != StripSide::Right) {
    while (b < e && strip(u[b])) ++b;
  }
  if (side != StripSide::Left) {
    while (e > b && strip(u[e - 1])) --e;
  }
  return to_utf8(std::u32string_view(u).substr(b, e - b));
}

std::string py_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(upper(static_cast<unsigned char>(c)));
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(lower(static_cast<unsigned char>(c)));
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::u32string u = to_u32(s);
  for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? upper(u[i]) : lower(u[i]);
  return to_utf8(u);
}

std::string py_title(std::string_view s) {
  std::u32string u = to_u32(s);
  bool prev_cased = false;
  for (char32_t& c : u) {
    const bool letter = is_letter(c);
    c = prev_cased ? lower(c) : upper(c);
    prev_cased = letter;
  }
  return to_utf8(u);
}

std::string jinja_title(std::string_view s) {
  std::u32string u = to_u32(s);
  bool word_start = true;
  for (char32_t& c : u) {
    const bool delim = py_isspace(c) || c == U'-' || c == U'(' || c == U'{' || c == U'[' || c == U'<';
    c = word_start ? upper(c) : lower(c);
    word_start = delim;
  }
  return to_utf8(u);
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, long long count) {
  std::string out;
  if (old.empty()) {
    const std::u32string u = to_u32(s);
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || static_cast<long long>(i) < count) out += repl;
      if (i < u.size()) out += to_utf8(std::u32string_view(&u[i], 1));
    }
    return out;
  }
  size_t pos = 0;
  for (long long n = 0; count < 0 || n < count; ++n) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(repl);
    pos = hit + old.size();
  }
  out.append(s.substr(pos));
  return out;
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, long long maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) throw JinjaError("empty separator");
    size_t pos = 0;
    for (long long n = 0; maxsplit < 0 || n < maxsplit; ++n) {
      const size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      parts.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    parts.emplace_back(s.substr(pos));
    return parts;
  }
  const std::u32string u = to_u32(s);
  size_t i = 0;
  while (true) {
    while (i < u.size() && py_isspace(u[i])) ++i;
    if (i == u.size()) break;
    if (maxsplit >= 0 && static_cast<long long>(parts.size()) == maxsplit) {
      size_t e = u.size();
      while (e > i && py_isspace(u[e - 1])) --e;
      parts.push_back(to_utf8(std::u32string_view(u).substr(i, e - i)));
      break;
    }
    const size_t b = i;
    while (i < u.size() && !py_isspace(u[i])) ++i;
    parts.push_back(to_utf8(std::u32string_view(u).substr(b, i - b)));
  }
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, long long maxsplit) {
  if (maxsplit < 0) return py_split(s, sep, maxsplit);
  if (!sep) {
    // Whitespace rsplit with a limit: split from the right by hand.
    const std::u32string u = to_u32(s);
    std::vector<std::string> parts;
    size_t i = u.size();
    while (true) {
      while (i > 0 && py_isspace(u[i - 1])) --i;
      if (i == 0) break;
      if (static_cast<long long>(parts.size()) == maxsplit) {
        size_t b = 0;
        while (b < i && py_isspace(u[b])) ++b;
        parts.push_back(to_utf8(std::u32string_view(u).substr(b, i - b)));
        break;
      }
      const size_t e = i;
      while (i > 0 && !py_isspace(u[i - 1])) --i;
      parts.push_back(to_utf8(std::u32string_view(u).substr(i, e - i)));
    }
    return {parts.rbegin(), parts.rend()};
  }
  if (sep->empty()) throw JinjaError("empty separator");
  std::vector<std::string> parts;
  size_t end = s.size();
  for (long long n = 0; n < maxsplit; ++n) {
    if (end < sep->size()) break;
    const size_t hit = s.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
  }
  parts.emplace_back(s.substr(0, end));
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  size_t b = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.emplace_back(s.substr(b, i - b));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      b = i + 1;
    }
  }
  if (b < s.size()) lines.emplace_back(s.substr(b));
  return lines;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace tc::text::jinja
