// Ollama-style keep_alive durations (see keep_alive.h).
#include "config/keep_alive.h"

#include <charconv>
#include <cmath>

#include "config/text_util.h"

namespace tc::config {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw std::invalid_argument("keep_alive \"" + std::string(text) + "\" " + why +
                              " (expected a duration like \"5m\", \"1h30m\", \"90s\", a number of seconds, 0 to "
                              "unload at once or -1 to keep the model loaded)");
}

}  // namespace

KeepAlive keep_alive_from_seconds(double seconds) {
  if (!std::isfinite(seconds)) throw std::invalid_argument("keep_alive must be a finite number of seconds");
  if (seconds < 0) return KeepAlive::never_unload();
  // Beyond ~292 years milliseconds overflow; anything that long is "for ever".
  if (seconds > 9.0e15 / 1000) return KeepAlive::never_unload();
  return {false, std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)))};
}

KeepAlive parse_keep_alive(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) bad(text, "is empty");
  // A plain number: seconds.
  {
    double v = 0;
    const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
    if (res.ec == std::errc() && res.ptr == t.data() + t.size()) return keep_alive_from_seconds(v);
  }
  // Go's time.ParseDuration: [-+]? ( number unit )+, units ns us µs ms s m h.
  size_t i = 0;
  bool negative = false;
  if (t[i] == '-' || t[i] == '+') {
    negative = t[i] == '-';
    ++i;
  }
  if (i == t.size()) bad(text, "has no number");
  double total_ms = 0;
  while (i < t.size()) {
    const size_t start = i;
    while (i < t.size() && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.')) ++i;
    if (i == start) bad(text, "is not a duration");
    double v = 0;
    const auto res = std::from_chars(t.data() + start, t.data() + i, v);
    if (res.ec != std::errc() || res.ptr != t.data() + i) bad(text, "has a malformed number");
    const size_t unit_start = i;
    while (i < t.size() && !((t[i] >= '0' && t[i] <= '9') || t[i] == '.')) ++i;
    const std::string_view unit = t.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ns") scale = 1e-6;
    else if (unit == "us" || unit == "\xc2\xb5s" || unit == "\xce\xbcs") scale = 1e-3;
    else if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1e3;
    else if (unit == "m") scale = 60e3;
    else if (unit == "h") scale = 3600e3;
    else if (unit.empty()) bad(text, "has a number without a unit");
    else bad(text, "has an unknown unit \"" + std::string(unit) + "\"");
    total_ms += v * scale;
  }
  if (negative && total_ms > 0) return KeepAlive::never_unload();
  return keep_alive_from_seconds(total_ms / 1000);
}

std::string keep_alive_text(const KeepAlive& k) {
  if (k.forever) return "forever";
  int64_t ms = k.duration.count();
  if (ms == 0) return "0s";
  std::string out;
  const int64_t h = ms / 3600000;
  ms %= 3600000;
  const int64_t m = ms / 60000;
  ms %= 60000;
  if (h > 0) out += std::to_string(h) + "h";
  if (m > 0) out += std::to_string(m) + "m";
  if (ms > 0) {
    out += std::to_string(ms / 1000);
    if (ms % 1000 != 0) {
      std::string frac = std::to_string(1000 + ms % 1000).substr(1);
      while (!frac.empty() && frac.back() == '0') frac.pop_back();
      out += "." + frac;
    }
    out += "s";
  }
  return out;
}

}  // namespace tc::config
