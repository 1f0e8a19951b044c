// parse_request_head and canonical_head (see request_head.h): RFC 9112's
// request line, field syntax and message body length rules, strictly.
#include "server/http/request_head.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tc::server::http {
namespace {

constexpr std::array<std::string_view, 7> kMethods = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
// Longer than any method.
constexpr size_t kMaxMethodBytes = 32;
// At most 10^18 bytes: 18 digits cannot overflow uint64_t.
constexpr size_t kMaxLengthDigits = 18;

// RFC 9110 token characters.
bool is_tchar(unsigned char c) {
  if (std::isalnum(c)) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

// A field value's characters: HTAB, SP, visible ASCII and obs-text (0x80-0xFF).
bool is_field_value(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\t' || (c >= 0x20 && c != 0x7f)) continue;
    return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Calls fn(element) for each non-empty trimmed element of a comma list.
template <class Fn>
void for_each_list_element(std::string_view value, Fn&& fn) {
  size_t i = 0;
  while (i <= value.size()) {
    const size_t comma = value.find(',', i);
    const size_t end = comma == std::string_view::npos ? value.size() : comma;
    const std::string_view element = trim(value.substr(i, end - i));
    if (!element.empty()) fn(element);
    if (comma == std::string_view::npos) break;
    i = comma + 1;
  }
}

HeadParse fail(int status, std::string message) {
  HeadParse out;
  out.status = HeadStatus::Error;
  out.error = {status, std::move(message)};
  return out;
}

// Bytes of empty lines (CRLF or LF) before the request line; RFC 9112
// section 2.2 lets a server skip them.
size_t leading_empty_lines(std::string_view b) {
  size_t i = 0;
  while (true) {
    if (i + 1 < b.size() && b[i] == '\r' && b[i + 1] == '\n') {
      i += 2;
    } else if (i < b.size() && b[i] == '\n') {
      i += 1;
    } else {
      return i;
    }
  }
}

// The position of the LF ending the head (the LF of its empty line) at or
// after `from`, or npos.
size_t find_head_end(std::string_view b, size_t start, size_t from) {
  for (size_t p = std::max(from, start); p < b.size(); ++p) {
    p = b.find('\n', p);
    if (p == std::string_view::npos) return p;
    if (p == start) continue;  // cannot happen after leading_empty_lines; kept for safety
    if (b[p - 1] == '\n') return p;
    if (b[p - 1] == '\r' && p >= start + 2 && b[p - 2] == '\n') return p;
  }
  return std::string_view::npos;
}

HeadParse parse_request_line(std::string_view line, RequestHead& head) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos) return fail(400, "malformed request line");
  if (sp2 == std::string_view::npos) {
    return fail(400, "malformed request line (HTTP/0.9 requests are not supported; send HTTP/1.1)");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || version.find(' ') != std::string_view::npos) {
    return fail(400, "malformed request line");
  }
  for (const char ch : target) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return fail(400, "malformed request target");
  }
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (version.size() == 8 && version.substr(0, 7) == "HTTP/1." && digit(version[7])) {
    head.minor_version = version[7] == '0' ? 0 : 1;  // 1.2 and later are read as 1.1
  } else if (version.substr(0, 5) == "HTTP/" && version.size() >= 6 && digit(version[5])) {
    return fail(505, "HTTP version " + std::string(version.substr(5)) + " is not supported; send HTTP/1.1");
  } else {
    return fail(400, "malformed request line");
  }
  if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
    return fail(501, "method " + std::string(method) + " is not supported");
  }
  head.method = std::string(method);
  // Absolute-form (what a client sends to a proxy) is taken as its path.
  std::string_view t = target;
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (t.size() >= scheme.size() && equals_ignore_case(t.substr(0, scheme.size()), scheme)) {
      const size_t slash = t.find('/', scheme.size());
      const size_t query = t.find('?', scheme.size());
      if (slash == std::string_view::npos || (query != std::string_view::npos && query < slash)) {
        head.target = "/" + std::string(query == std::string_view::npos ? "" : t.substr(query));
      } else {
        head.target = std::string(t.substr(slash));
      }
      return {};
    }
  }
  if (t != "*" && t.front() != '/') return fail(400, "malformed request target");
  if (t == "*" && method != "OPTIONS") return fail(400, "malformed request target");
  head.target = std::string(t);
  return {};
}

// Content-Length: every value of every field (a field may hold a list)
// must be the same run of digits.
HeadParse read_content_length(RequestHead& head, bool& seen) {
  bool malformed = false;
  bool conflicting = false;
  for (const auto& [name, value] : head.fields) {
    if (!equals_ignore_case(name, "Content-Length")) continue;
    bool any = false;
    for_each_list_element(value, [&](std::string_view element) {
      any = true;
      if (element.size() > kMaxLengthDigits ||
          !std::all_of(element.begin(), element.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        malformed = true;
        return;
      }
      uint64_t v = 0;
      for (const char c : element) v = v * 10 + static_cast<uint64_t>(c - '0');
      if (seen && v != head.content_length) conflicting = true;
      seen = true;
      head.content_length = v;
    });
    malformed = malformed || !any;
  }
  if (malformed) return fail(400, "invalid Content-Length (it must be one decimal number of bytes)");
  if (conflicting) return fail(400, "conflicting Content-Length values");
  return {};
}

HeadParse read_framing(RequestHead& head) {
  bool has_length = false;
  if (auto r = read_content_length(head, has_length); r.status == HeadStatus::Error) return r;
  std::vector<std::string> codings;
  bool has_te = false;
  for (const auto& [name, value] : head.fields) {
    if (!equals_ignore_case(name, "Transfer-Encoding")) continue;
    has_te = true;
    for_each_list_element(value, [&](std::string_view c) { codings.push_back(lower(c)); });
  }
  if (has_te) {
    if (has_length) return fail(400, "Content-Length and Transfer-Encoding together");
    if (head.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (codings.empty() || codings.back() != "chunked") {
      return fail(400, "Transfer-Encoding must end with chunked");
    }
    if (std::count(codings.begin(), codings.end(), "chunked") > 1) return fail(400, "chunked applied twice");
    if (codings.size() > 1) return fail(501, "only the chunked transfer coding is supported");
    head.framing = BodyFraming::Chunked;
  } else if (has_length) {
    head.framing = head.content_length > 0 ? BodyFraming::Length : BodyFraming::None;
  }
  return {};
}

HeadParse read_semantics(RequestHead& head) {
  size_t n_host = 0;
  bool close = false;
  bool keep_alive = false;
  for (const auto& [name, value] : head.fields) {
    if (equals_ignore_case(name, "Host")) {
      ++n_host;
    } else if (equals_ignore_case(name, "Connection")) {
      for_each_list_element(value, [&](std::string_view token) {
        close = close || equals_ignore_case(token, "close");
        keep_alive = keep_alive || equals_ignore_case(token, "keep-alive");
      });
    } else if (equals_ignore_case(name, "Expect")) {
      if (!equals_ignore_case(trim(value), "100-continue")) {
        return fail(417, "only 'Expect: 100-continue' is supported");
      }
      head.expect_continue = true;
    }
  }
  head.keep_alive = !close && (head.minor_version >= 1 || keep_alive);
  if (n_host > 1) return fail(400, "more than one Host header");
  if (n_host == 0 && head.minor_version >= 1) return fail(400, "an HTTP/1.1 request needs a Host header");
  return read_framing(head);
}

}  // namespace

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view RequestHead::field(std::string_view name) const {
  for (const auto& [n, v] : fields) {
    if (equals_ignore_case(n, name)) return v;
  }
  return {};
}

std::string_view RequestHead::path() const {
  const std::string_view t = target;
  return t.substr(0, t.find('?'));
}

HeadParse parse_request_head(std::string_view b, const HttpLimits& limits, size_t& scan_from) {
  const size_t start = leading_empty_lines(b);
  const size_t line_limit = std::min(kMaxRequestLineBytes, limits.max_header_bytes);
  const size_t end = find_head_end(b, start, scan_from >= 2 ? scan_from - 2 : 0);
  if (end == std::string_view::npos) {
    scan_from = b.size();
    const size_t first_lf = b.find('\n', start);
    if ((first_lf == std::string_view::npos ? b.size() - start : first_lf + 1 - start) > line_limit) {
      return fail(414, "request line longer than " + std::to_string(line_limit) + " bytes");
    }
    if (b.size() > limits.max_header_bytes) {
      return fail(431, "request headers larger than " + std::to_string(limits.max_header_bytes) + " bytes");
    }
    // A complete request line is checked at once, and so is the method as
    // it arrives: an HTTP/0.9 client, TLS sent to this plain-HTTP port or
    // garbage would otherwise wait for an end of head that never comes.
    const std::string_view method = b.substr(start, std::min(b.find(' ', start), first_lf) - start);
    const size_t bad = std::find_if(method.begin(), method.end(),
                                    [](char c) { return !is_tchar(static_cast<unsigned char>(c)); }) -
                       method.begin();
    if ((bad < method.size() && !(method[bad] == '\r' && bad + 1 == method.size())) || bad > kMaxMethodBytes) {
      return fail(400, "malformed request line");
    }
    if (first_lf != std::string_view::npos) {
      std::string_view line = b.substr(start, first_lf - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find('\r') != std::string_view::npos) return fail(400, "a CR not followed by LF in the request head");
      RequestHead probe;
      if (auto r = parse_request_line(line, probe); r.status == HeadStatus::Error) return r;
    }
    return {};
  }

  HeadParse out;
  RequestHead& head = out.head;
  head.head_bytes = end + 1;
  size_t pos = start;
  bool first = true;
  while (pos < end) {
    const size_t lf = b.find('\n', pos);
    std::string_view line = b.substr(pos, lf - pos);
    const size_t line_bytes = lf + 1 - pos;
    pos = lf + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return fail(400, "a CR not followed by LF in the request head");
    if (first) {
      first = false;
      if (line_bytes > line_limit) {
        return fail(414, "request line longer than " + std::to_string(line_limit) + " bytes");
      }
      if (auto r = parse_request_line(line, head); r.status == HeadStatus::Error) return r;
      continue;
    }
    if (line.empty()) break;  // the head's end
    if (line_bytes > kMaxHeaderLineBytes) {
      return fail(431, "a header line longer than " + std::to_string(kMaxHeaderLineBytes) + " bytes");
    }
    if (head.fields.size() >= limits.max_headers) {
      return fail(431, "more than " + std::to_string(limits.max_headers) + " request headers");
    }
    if (line.front() == ' ' || line.front() == '\t') return fail(400, "folded header lines are not allowed");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return fail(400, "malformed header line");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return fail(400, "a control character in a header value");
    head.fields.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  if (head.head_bytes > limits.max_header_bytes) {
    return fail(431, "request headers larger than " + std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (auto r = read_semantics(head); r.status == HeadStatus::Error) return r;
  out.status = HeadStatus::Complete;
  return out;
}

std::string canonical_head(const RequestHead& head, uint64_t body_bytes) {
  std::string out;
  out.reserve(head.head_bytes + 32);
  out += head.method;
  out += ' ';
  out += head.target;
  out += head.minor_version == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n";
  for (const auto& [name, value] : head.fields) {
    if (equals_ignore_case(name, "Content-Length") || equals_ignore_case(name, "Transfer-Encoding") ||
        equals_ignore_case(name, "Expect")) {
      continue;
    }
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  const bool expects_content =
      head.method == "POST" || head.method == "PUT" || head.method == "PATCH" || head.method == "DELETE";
  if (body_bytes > 0 || expects_content) {
    out += "Content-Length: ";
    out += std::to_string(body_bytes);
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

}  // namespace tc::server::http
