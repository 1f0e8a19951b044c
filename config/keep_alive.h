// How long an idle model stays loaded (serve's keep_alive, Ollama's
// meaning): a Go-style duration ("5m", "1h30m", "90s", "1.5h", "300ms"), or
// a plain number of seconds; 0 unloads as soon as the model is idle, any
// negative value keeps it loaded for ever. Pure functions, thread-safe.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tc::config {

struct KeepAlive {
  bool forever = false;
  std::chrono::milliseconds duration{0};  // when not forever; >= 0

  static KeepAlive never_unload() { return {true, std::chrono::milliseconds(0)}; }
  bool operator==(const KeepAlive&) const = default;
};

// Parses a duration string as above; throws std::invalid_argument with a
// message quoting `text` and naming the accepted forms.
KeepAlive parse_keep_alive(std::string_view text);
// A number of seconds, as Ollama's API takes it in JSON (negative: for ever).
KeepAlive keep_alive_from_seconds(double seconds);
// "5m0s"-like text for logs and /api/ps: "forever", "0s", "1h2m3s", "1.5s".
std::string keep_alive_text(const KeepAlive& k);

}  // namespace tc::config
