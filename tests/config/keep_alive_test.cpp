// keep_alive durations as Ollama takes them: Go durations, seconds, 0 and
// negatives; bad values name what is accepted.
#include <catch2/catch.hpp>

#include "config/keep_alive.h"

using tc::config::KeepAlive;
using tc::config::parse_keep_alive;
using namespace std::chrono_literals;

TEST_CASE("keep_alive takes Go durations, seconds, 0 and -1", "[config]") {
  CHECK(parse_keep_alive("5m") == KeepAlive{false, 300000ms});
  CHECK(parse_keep_alive("1h30m") == KeepAlive{false, 5400000ms});
  CHECK(parse_keep_alive("1.5h") == KeepAlive{false, 5400000ms});
  CHECK(parse_keep_alive("90s") == KeepAlive{false, 90000ms});
  CHECK(parse_keep_alive("250ms") == KeepAlive{false, 250ms});
  CHECK(parse_keep_alive(" 30 ") == KeepAlive{false, 30000ms});
  CHECK(parse_keep_alive("0") == KeepAlive{false, 0ms});
  CHECK(parse_keep_alive("0s") == KeepAlive{false, 0ms});
  CHECK(parse_keep_alive("-1").forever);
  CHECK(parse_keep_alive("-1m").forever);
  CHECK(parse_keep_alive("-0.5").forever);
  CHECK(tc::config::keep_alive_from_seconds(-1).forever);
  CHECK(tc::config::keep_alive_from_seconds(2.5) == KeepAlive{false, 2500ms});
}

TEST_CASE("a bad keep_alive is an error quoting it", "[config]") {
  for (const char* bad : {"", "five minutes", "5x", "m", "5m3", "--5m", "1e400"}) {
    INFO(bad);
    try {
      parse_keep_alive(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find("keep_alive") != std::string::npos);
      CHECK(what.find("\"5m\"") != std::string::npos);
    }
  }
}

TEST_CASE("keep_alive_text writes durations back", "[config]") {
  CHECK(tc::config::keep_alive_text(KeepAlive::never_unload()) == "forever");
  CHECK(tc::config::keep_alive_text(parse_keep_alive("0")) == "0s");
  CHECK(tc::config::keep_alive_text(parse_keep_alive("1h2m3s")) == "1h2m3s");
  CHECK(tc::config::keep_alive_text(parse_keep_alive("1500ms")) == "1.5s");
}
