// ServeOptions validation names the key at fault.
#include <catch2/catch.hpp>

#include "config/serve_options.h"

using tc::config::ConfigError;
using tc::config::ServeOptions;

TEST_CASE("serve options defaults are valid and bind to loopback", "[config]") {
  ServeOptions o;
  CHECK_NOTHROW(tc::config::validate(o));
  CHECK(o.host == "127.0.0.1");
  CHECK(o.port == 8080);
}

TEST_CASE("invalid serve options name their key", "[config]") {
  auto key_of = [](const ServeOptions& o) -> std::string {
    try {
      tc::config::validate(o);
    } catch (const ConfigError& e) {
      return e.key();
    }
    return "";
  };
  ServeOptions o;
  o.port = -1;
  CHECK(key_of(o) == "port");
  o.port = 0;  // any free port
  CHECK(key_of(o).empty());
  o.port = 70000;
  CHECK(key_of(o) == "port");
  o = {};
  o.host = "";
  CHECK(key_of(o) == "host");
  o = {};
  o.http_threads = 0;
  CHECK(key_of(o) == "http_threads");
}
