// api_key_file reading and --print-config (to_toml) round trips.
#include <catch2/catch.hpp>

#include "config/serve_config.h"
#include "tests/config/config_test_util.h"
#include "tests/test_util.h"

using tc::config::ServeOptions;
using tc::test::FakeEnv;
using tc::test::resolve;
using tc::test::resolve_error;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("api_key_file: one key per line, comments and blanks skipped, appended to api_keys", "[config]") {
  const auto dir = tc::test::scratch_dir("config_keyfile");
  tc::test::write_file(dir / "keys.txt",
                       "# team keys\n\n  sk-alpha  \r\n\t# indented comment\nsk-beta\r\n   \nsk-alpha\nsk-gamma");
  const ServeOptions o = resolve({"--api-key", "sk-flag", "--api-key-file", (dir / "keys.txt").string()});
  CHECK(o.api_keys == std::vector<std::string>{"sk-flag", "sk-alpha", "sk-beta", "sk-gamma"});
  CHECK(o.api_key_file == dir / "keys.txt");
}

TEST_CASE("api_key_file from the file is relative to it and from env used as given", "[config]") {
  const auto dir = tc::test::scratch_dir("config_keyfile_rel");
  tc::test::write_file(dir / "keys.txt", "k1\n");
  tc::test::write_file(dir / "serve.toml", "api_key_file = \"keys.txt\"\napi_keys = [\"k0\"]\n");
  CHECK(resolve({"--config", (dir / "serve.toml").string()}).api_keys == std::vector<std::string>{"k0", "k1"});
  FakeEnv env;
  env.vars = {{"THERMOCLINE_API_KEY_FILE", (dir / "keys.txt").string()}};
  CHECK(resolve({}, env).api_keys == std::vector<std::string>{"k1"});
}

TEST_CASE("api_key_file that is missing, empty or holds only comments is an error", "[config]") {
  const auto dir = tc::test::scratch_dir("config_keyfile_bad");
  const auto missing = resolve_error({"--api-key-file", (dir / "nope.txt").string()});
  CHECK(missing.key == "api_key_file");
  CHECK(missing.source == "flag --api-key-file");
  CHECK(contains(missing.message, "nope.txt"));

  tc::test::write_file(dir / "empty.txt", "");
  CHECK(resolve_error({"--api-key-file", (dir / "empty.txt").string()}).key == "api_key_file");

  tc::test::write_file(dir / "comments.txt", "# only\n\n   # comments\n");
  const auto comments = resolve_error({"--api-key-file", (dir / "comments.txt").string()});
  CHECK(comments.key == "api_key_file");
  CHECK(contains(comments.message, "no keys"));

  FakeEnv env;
  env.vars = {{"THERMOCLINE_API_KEY_FILE", dir.string()}};
  const auto folder = resolve_error({}, env);
  CHECK(folder.key == "api_key_file");
  CHECK(folder.source == "env THERMOCLINE_API_KEY_FILE");

  tc::test::write_file(dir / "bad.txt", "good\nbad key\n");
  const auto bad = resolve_error({"--api-key-file", (dir / "bad.txt").string()});
  CHECK(bad.key == "api_key_file");
  CHECK(contains(bad.source, "bad.txt:2"));
  CHECK_FALSE(contains(bad.message, "bad key"));
}

TEST_CASE("to_toml masks api keys", "[config]") {
  ServeOptions o;
  o.api_keys = {"sk-secret-1", "sk-secret-2"};
  const std::string text = tc::config::to_toml(o);
  CHECK(contains(text, "api_keys = [\"***\", \"***\"]"));
  CHECK_FALSE(contains(text, "sk-secret"));
  CHECK(contains(tc::config::to_toml(o, false), "sk-secret-1"));
}

TEST_CASE("to_toml of the defaults lists every key", "[config]") {
  const std::string text = tc::config::to_toml(ServeOptions{});
  CHECK(contains(text, "host = \"127.0.0.1\"\n"));
  CHECK(contains(text, "port = 8080\n"));
  CHECK(contains(text, "request_timeout_s = 600.0\n"));
  CHECK(contains(text, "max_body_bytes = 8388608\n"));
  CHECK(contains(text, "cors_origins = []\n"));
  CHECK(contains(text, "model = \"\"\n"));
}

TEST_CASE("print-config output parses back to the same options", "[config]") {
  const auto dir = tc::test::scratch_dir("config_roundtrip");
  tc::test::write_file(dir / "keys.txt", "file-key\n");
  const std::vector<std::string> args = {
      "--host", "0.0.0.0", "--port", "9999", "-m", (dir / "m \"q\".gguf").string(), "--alias",
      "tiny \\ \"quoted\" \t tab ünïcode", "--chat-template", (dir / "t.jinja").string(), "--http-threads", "3",
      "--parallel", "7", "-c", "12345", "--batch-size", "77", "--queue-size", "0", "-t", "5", "--max-tokens-cap",
      "999", "--max-n", "2", "--max-stop", "0", "--max-stop-bytes", "9", "--max-top-logprobs", "0",
      "--request-timeout-s", "0.1", "--max-body-bytes", "123456789012", "--api-key", "k1", "--api-key", "k2",
      "--api-key-file", (dir / "keys.txt").string(), "--cors-origin", "*", "--cors-origin", "https://x.example:1",
      "--shutdown-grace-s", "1e-3", "--log-level", "off", "--log-format", "json"};
  const ServeOptions first = resolve(args);
  REQUIRE(first.api_keys == std::vector<std::string>{"k1", "k2", "file-key"});
  const std::string text = tc::config::to_toml(first, false);
  CHECK(text != tc::config::to_toml(ServeOptions{}, false));

  tc::test::write_file(dir / "printed.toml", text);
  const ServeOptions second = resolve({"--config", (dir / "printed.toml").string()});
  CHECK(tc::config::to_toml(second, false) == text);
  CHECK(second.model_alias == first.model_alias);
  CHECK(second.model == first.model);
  CHECK(second.request_timeout_s == first.request_timeout_s);
  CHECK(second.shutdown_grace_s == first.shutdown_grace_s);
  CHECK(second.max_body_bytes == first.max_body_bytes);
  CHECK(second.api_keys == first.api_keys);  // the file's key is not added twice
  CHECK(second.cors_origins == first.cors_origins);
}

TEST_CASE("print-config of the defaults parses back to the defaults", "[config]") {
  const auto dir = tc::test::scratch_dir("config_roundtrip_defaults");
  tc::test::write_file(dir / "printed.toml", tc::config::to_toml(resolve({})));
  const ServeOptions o = resolve({"--config", (dir / "printed.toml").string()});
  CHECK(tc::config::to_toml(o, false) == tc::config::to_toml(ServeOptions{}, false));
}
