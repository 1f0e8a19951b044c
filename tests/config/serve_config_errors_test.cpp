// Bad configuration is rejected at start with the key and where it came from.
#include <catch2/catch.hpp>

#include <cmath>

#include "config/serve_config.h"
#include "config/serve_option_table.h"
#include "tests/config/config_test_util.h"
#include "tests/test_util.h"

using tc::config::OptionKind;
using tc::test::FakeEnv;
using tc::test::resolve_error;

namespace {

// Writes `text` as a config file and returns the --config flags for it.
std::vector<std::string> config_flags(const std::string& scratch, const std::string& text) {
  const auto dir = tc::test::scratch_dir(scratch);
  tc::test::write_file(dir / "serve.toml", text);
  return {"--config", (dir / "serve.toml").string()};
}

FakeEnv env_with(const std::string& name, const std::string& value) {
  FakeEnv env;
  env.vars[name] = value;
  return env;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("an unknown TOML key is an error naming it, its line and the key meant", "[config]") {
  const auto e = resolve_error(config_flags("config_err_unknown", "port = 8081\n\nctx_sise = 100\n"));
  CHECK(e.key == "ctx_sise");
  CHECK(contains(e.source, "serve.toml:3"));
  CHECK(contains(e.message, "unknown key"));
  CHECK(contains(e.message, "did you mean 'ctx_size'"));

  const auto t = resolve_error(config_flags("config_err_unknown_table", "[server]\nport = 1\n"));
  CHECK(t.key == "server");
  CHECK(contains(t.message, "unknown key"));
}

TEST_CASE("a TOML value of the wrong type names the key, the types and the line", "[config]") {
  struct Case {
    const char* text;
    const char* key;
    const char* expected;
  };
  const Case cases[] = {
      {"port = \"8080\"", "port", "expected an integer, got a string"},
      {"port = 8080.0", "port", "expected an integer, got a float"},
      {"ctx_size = true", "ctx_size", "expected an integer, got a boolean"},
      {"host = 5", "host", "expected a string, got an integer"},
      {"model = [\"a\"]", "model", "expected a string (a path), got an array"},
      {"request_timeout_s = \"soon\"", "request_timeout_s", "expected a number, got a string"},
      {"api_keys = \"k\"", "api_keys", "expected an array of strings, got a string"},
      {"cors_origins = [\"*\", 5]", "cors_origins", "item 2 is an integer"},
      {"log_level = { a = 1 }", "log_level", "expected a string, got a table"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto e = resolve_error(config_flags("config_err_type", std::string("\n") + c.text + "\n"));
    CHECK(e.key == c.key);
    CHECK(contains(e.message, c.expected));
    CHECK(contains(e.source, "serve.toml:2"));
  }
}

TEST_CASE("a TOML syntax error or an unreadable file is a 'config' error", "[config]") {
  const auto syntax = resolve_error(config_flags("config_err_syntax", "port = 1\nhost = \n"));
  CHECK(syntax.key == "config");
  CHECK(contains(syntax.message, "invalid TOML"));
  CHECK(contains(syntax.source, "serve.toml:2"));

  const auto dup = resolve_error(config_flags("config_err_dup", "port = 1\nport = 2\n"));
  CHECK(dup.key == "config");

  const auto missing = resolve_error({"--config", "/nonexistent/thermocline.toml"});
  CHECK(missing.key == "config");
  CHECK(missing.source == "flag --config");
  CHECK(contains(missing.message, "/nonexistent/thermocline.toml"));

  const auto from_env = resolve_error({}, env_with("THERMOCLINE_CONFIG", "/nonexistent/x.toml"));
  CHECK(from_env.source == "env THERMOCLINE_CONFIG");
}

TEST_CASE("an env value that does not parse names the variable", "[config]") {
  struct Case {
    const char* var;
    const char* value;
    const char* key;
  };
  const Case cases[] = {
      {"THERMOCLINE_PORT", "80a", "port"},
      {"THERMOCLINE_PORT", "8080.5", "port"},
      {"THERMOCLINE_CTX_SIZE", "4k", "ctx_size"},
      {"THERMOCLINE_THREADS", "many", "threads"},
      {"THERMOCLINE_REQUEST_TIMEOUT_S", "10s", "request_timeout_s"},
      {"THERMOCLINE_SHUTDOWN_GRACE_S", "-", "shutdown_grace_s"},
      {"THERMOCLINE_MAX_BODY_BYTES", "1e6", "max_body_bytes"},
  };
  for (const auto& c : cases) {
    INFO(c.var << "=" << c.value);
    const auto e = resolve_error({}, env_with(c.var, c.value));
    CHECK(e.key == c.key);
    CHECK(e.source == std::string("env ") + c.var);
    CHECK(contains(e.message, "cannot parse"));
    CHECK(contains(e.message, c.value));
  }
}

TEST_CASE("a flag value that does not parse names the flag", "[config]") {
  const auto e = resolve_error({"-c", "big"});
  CHECK(e.key == "ctx_size");
  CHECK(e.source == "flag --ctx-size");
  const auto d = resolve_error({"--request-timeout-s", "x"});
  CHECK(d.key == "request_timeout_s");
}

TEST_CASE("an integer too large for its field is a range error, not a wrap-around", "[config]") {
  const auto env = resolve_error({}, env_with("THERMOCLINE_PORT", "4294975488"));
  CHECK(env.key == "port");
  CHECK(contains(env.message, "must be in 0..65535"));
  const auto file = resolve_error(config_flags("config_err_wrap", "parallel = 4294967297\n"));
  CHECK(file.key == "parallel");
  CHECK(contains(file.message, "must be in 1..256"));
  const auto huge = resolve_error({"--max-body-bytes", "99999999999999999999999"});
  CHECK(huge.key == "max_body_bytes");
  CHECK(contains(huge.message, ">= 1024"));
}

TEST_CASE("the bounds of the issue are the table's", "[config]") {
  struct Bound {
    const char* key;
    double min;
    double max;  // < 0: none
  };
  const Bound bounds[] = {
      {"port", 0, 65535},         {"parallel", 1, 256},       {"ctx_size", 16, 1 << 20},
      {"queue_size", 0, 100000},  {"threads", 0, 1024},       {"max_n", 1, 128},
      {"max_top_logprobs", 0, 20}, {"request_timeout_s", 0, -1}, {"max_body_bytes", 1024, -1},
      {"http_threads", 1, 1024},  {"http_request_timeout_s", 0.1, 86400}, {"http_keep_alive_s", 0, 86400},
      {"http_write_timeout_s", 0.1, 86400}, {"http_max_header_bytes", 1024, 1 << 20}, {"http_max_headers", 1, 10000},
      {"http_max_connections", 16, 1000000},
  };
  for (const auto& b : bounds) {
    INFO(b.key);
    const auto* d = tc::config::find_serve_option(b.key);
    REQUIRE(d != nullptr);
    CHECK(d->min == b.min);
    if (b.max < 0) {
      CHECK_FALSE(d->max.has_value());
    } else {
      REQUIRE(d->max.has_value());
      CHECK(*d->max == b.max);
    }
  }
}

TEST_CASE("every bounded key rejects values just outside its range, from each source", "[config]") {
  for (const auto& d : tc::config::serve_option_table()) {
    if (!d.numeric()) continue;
    const std::string key(d.key);
    const bool integral = d.kind() != OptionKind::Double;
    std::vector<std::string> outside;
    outside.push_back(integral ? std::to_string(static_cast<int64_t>(d.min) - 1) : "-0.5");
    if (d.max) outside.push_back(std::to_string(static_cast<int64_t>(*d.max) + 1));
    std::vector<std::string> inside = {integral ? std::to_string(static_cast<int64_t>(d.min)) : std::to_string(d.min)};
    if (d.max) inside.push_back(std::to_string(static_cast<int64_t>(*d.max)));
    for (const auto& v : outside) {
      INFO(key << " = " << v);
      const auto env = resolve_error({}, env_with(d.env_name(), v));
      CHECK(env.key == key);
      CHECK(env.source == "env " + d.env_name());
      CHECK(contains(env.message, "must be"));
      CHECK(contains(env.message, v));

      const auto flag = resolve_error({d.long_flag(), v});
      CHECK(flag.key == key);
      CHECK(flag.source == "flag " + d.long_flag());

      const auto file = resolve_error(config_flags("config_err_range", "\n\n" + key + " = " + v + "\n"));
      CHECK(file.key == key);
      CHECK(contains(file.source, "serve.toml:3"));
    }
    for (const auto& v : inside) {
      INFO(key << " = " << v);
      // Layer offload (any K >= 0) needs a CUDA device besides a K in range.
      if (key == "offload_layers") {
        CHECK_NOTHROW(tc::test::resolve({"--device", "cuda", d.long_flag(), v}));
      } else {
        CHECK_NOTHROW(tc::test::resolve({d.long_flag(), v}));
      }
    }
  }
}

TEST_CASE("float keys reject infinities and NaN", "[config]") {
  const auto file = resolve_error(config_flags("config_err_inf", "request_timeout_s = inf\n"));
  CHECK(file.key == "request_timeout_s");
  CHECK(contains(file.message, "finite"));
  const auto env = resolve_error({}, env_with("THERMOCLINE_SHUTDOWN_GRACE_S", "nan"));
  CHECK(env.key == "shutdown_grace_s");
}

TEST_CASE("log_level and log_format take only their names", "[config]") {
  const auto level = resolve_error({}, env_with("THERMOCLINE_LOG_LEVEL", "verbose"));
  CHECK(level.key == "log_level");
  CHECK(contains(level.message, "trace|debug|info|warn|error|off"));
  const auto format = resolve_error({"--log-format", "xml"});
  CHECK(format.key == "log_format");
  CHECK(format.source == "flag --log-format");
  for (const char* ok : {"trace", "debug", "info", "warn", "error", "off"}) {
    CHECK(tc::test::resolve({"--log-level", ok}).log_level == ok);
  }
  CHECK(tc::test::resolve({"--log-format", "json"}).log_format == "json");
}

TEST_CASE("host, api keys and CORS origins are checked", "[config]") {
  CHECK(resolve_error(config_flags("config_err_host", "host = \"\"\n")).key == "host");
  CHECK(resolve_error({"--host", "a b"}).key == "host");

  const auto key = resolve_error(config_flags("config_err_key", "api_keys = [\"ok\", \"has space\"]\n"));
  CHECK(key.key == "api_keys");
  CHECK(contains(key.message, "key 2 of 2"));
  CHECK_FALSE(contains(key.message, "has space"));  // keys are secrets
  const auto empty_flag = resolve_error({"--api-key", ""});
  CHECK(empty_flag.key == "api_keys");
  CHECK(empty_flag.source == "flag --api-keys");

  const auto origin = resolve_error({"--cors-origin", "example.com"});
  CHECK(origin.key == "cors_origins");
  CHECK(contains(origin.message, "example.com"));
  CHECK(resolve_error({"--cors-origin", "https://example.com/"}).key == "cors_origins");
  CHECK(resolve_error({}, env_with("THERMOCLINE_CORS_ORIGINS", "https://a.example,https://b.example/x")).key ==
        "cors_origins");
}

TEST_CASE("validate() uses the same table and names the key", "[config]") {
  tc::config::ServeOptions o;
  o.ctx_size = 8;
  try {
    tc::config::validate(o);
    FAIL("no error");
  } catch (const tc::config::ConfigError& e) {
    CHECK(e.key() == "ctx_size");
    CHECK(std::string(e.what()) == "config 'ctx_size': must be in 16..1048576, got 8");
  }
  o = {};
  o.log_format = "yaml";
  CHECK_THROWS_AS(tc::config::validate(o), tc::config::ConfigError);
}

TEST_CASE("a ConfigError message carries key, source and problem", "[config]") {
  const tc::config::ConfigError e("port", "must be in 1..65535, got 0", "env THERMOCLINE_PORT");
  CHECK(std::string(e.what()) == "config 'port' (env THERMOCLINE_PORT): must be in 1..65535, got 0");
  CHECK(e.source() == "env THERMOCLINE_PORT");
}
