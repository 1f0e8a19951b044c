// The boolean keys (webui, time_split): a pair of value-less flags (the last one wins),
// true/false words in the environment, TOML booleans in the file, and the
// errors for anything else.
#include <catch2/catch.hpp>

#include "config/serve_config.h"
#include "tests/config/config_test_util.h"
#include "tests/test_util.h"

using tc::test::FakeEnv;
using tc::test::resolve;
using tc::test::resolve_error;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

FakeEnv env_with(const std::string& name, const std::string& value) {
  FakeEnv env;
  env.vars = {{name, value}};
  return env;
}

std::vector<std::string> config_file(const std::string& name, const std::string& text) {
  const auto dir = tc::test::scratch_dir(name);
  tc::test::write_file(dir / "serve.toml", text);
  return {"--config", (dir / "serve.toml").string()};
}

}  // namespace

TEST_CASE("webui is on by default and each source can turn it off", "[config]") {
  CHECK(resolve({}).webui);
  CHECK_FALSE(resolve({"--no-webui"}).webui);
  CHECK(resolve({"--webui"}).webui);
  CHECK(resolve({"--no-webui", "--webui"}).webui);
  CHECK_FALSE(resolve({"--webui", "--no-webui"}).webui);
  for (const char* off : {"false", "0", "off", "No", " FALSE "}) {
    INFO(off);
    CHECK_FALSE(resolve({}, env_with("THERMOCLINE_WEBUI", off)).webui);
  }
  for (const char* on : {"true", "1", "on", "yes"}) {
    INFO(on);
    CHECK(resolve(config_file("config_bool_on", "webui = false\n"), env_with("THERMOCLINE_WEBUI", on)).webui);
  }
  CHECK_FALSE(resolve(config_file("config_bool_file", "webui = false\n")).webui);
  // Flags beat the environment.
  CHECK(resolve({"--webui"}, env_with("THERMOCLINE_WEBUI", "false")).webui);
  CHECK(contains(tc::config::to_toml(tc::config::ServeOptions{}), "webui = true\n"));
}

TEST_CASE("webui rejects what is not a boolean", "[config]") {
  const auto env = resolve_error({}, env_with("THERMOCLINE_WEBUI", "maybe"));
  CHECK(env.key == "webui");
  CHECK(env.source == "env THERMOCLINE_WEBUI");
  CHECK(contains(env.message, "maybe"));
  CHECK(contains(env.message, "boolean"));

  const auto file = resolve_error(config_file("config_bool_bad", "webui = \"no\"\n"));
  CHECK(file.key == "webui");
  CHECK(contains(file.message, "expected a boolean, got a string"));
  CHECK(contains(file.source, "serve.toml:1"));
}

TEST_CASE("time_split is off by default and each source can turn it on", "[config]") {
  CHECK_FALSE(resolve({}).time_split);
  CHECK(resolve({"--time-split"}).time_split);
  CHECK_FALSE(resolve({"--time-split", "--no-time-split"}).time_split);
  CHECK(resolve({}, env_with("THERMOCLINE_TIME_SPLIT", "on")).time_split);
  CHECK(resolve(config_file("config_bool_split", "time_split = true\n")).time_split);
  CHECK_FALSE(resolve({"--no-time-split"}, env_with("THERMOCLINE_TIME_SPLIT", "1")).time_split);
  CHECK(contains(tc::config::to_toml(tc::config::ServeOptions{}), "time_split = false\n"));
  CHECK(resolve_error({}, env_with("THERMOCLINE_TIME_SPLIT", "2")).key == "time_split");
}
