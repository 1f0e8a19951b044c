// Flags > env > file > defaults, for keys of every kind, and the flag forms.
#include <catch2/catch.hpp>

#include "config/serve_config.h"
#include "tests/config/config_test_util.h"
#include "tests/test_util.h"

using tc::config::ServeOptions;
using tc::test::FakeEnv;
using tc::test::resolve;

namespace {

// The same keys at every level, each level with its own values.
const char* kFileText = R"(
host = "10.0.0.1"
port = 9001
model = "/models/file.gguf"
ctx_size = 1024
request_timeout_s = 30
cors_origins = ["https://file.example"]
log_level = "debug"
max_n = 3
)";

FakeEnv env_level() {
  FakeEnv env;
  env.vars = {{"THERMOCLINE_HOST", "10.0.0.2"},
              {"THERMOCLINE_PORT", "9002"},
              {"THERMOCLINE_MODEL", "/models/env.gguf"},
              {"THERMOCLINE_CTX_SIZE", "2048"},
              {"THERMOCLINE_REQUEST_TIMEOUT_S", "45.5"},
              {"THERMOCLINE_CORS_ORIGINS", "https://env.example, https://env2.example"}};
  return env;
}

}  // namespace

TEST_CASE("no file, env or flags: the defaults", "[config]") {
  const ServeOptions o = resolve({});
  CHECK(tc::config::to_toml(o, false) == tc::config::to_toml(ServeOptions{}, false));
}

TEST_CASE("the file overrides the defaults", "[config]") {
  const auto dir = tc::test::scratch_dir("config_prec_file");
  tc::test::write_file(dir / "serve.toml", kFileText);
  const ServeOptions o = resolve({"--config", (dir / "serve.toml").string()});
  CHECK(o.host == "10.0.0.1");
  CHECK(o.port == 9001);
  CHECK(o.model == "/models/file.gguf");
  CHECK(o.ctx_size == 1024);
  CHECK(o.request_timeout_s == 30.0);  // a TOML integer is fine for a float key
  CHECK(o.cors_origins == std::vector<std::string>{"https://file.example"});
  CHECK(o.log_level == "debug");
  CHECK(o.max_n == 3);
  CHECK(o.parallel == ServeOptions{}.parallel);  // not in the file: default
}

TEST_CASE("env overrides the file, key by key", "[config]") {
  const auto dir = tc::test::scratch_dir("config_prec_env");
  tc::test::write_file(dir / "serve.toml", kFileText);
  const ServeOptions o = resolve({"--config", (dir / "serve.toml").string()}, env_level());
  CHECK(o.host == "10.0.0.2");
  CHECK(o.port == 9002);
  CHECK(o.model == "/models/env.gguf");
  CHECK(o.ctx_size == 2048);
  CHECK(o.request_timeout_s == 45.5);
  CHECK(o.cors_origins == std::vector<std::string>{"https://env.example", "https://env2.example"});
  CHECK(o.log_level == "debug");  // only in the file
  CHECK(o.max_n == 3);
}

TEST_CASE("flags override env and the file", "[config]") {
  const auto dir = tc::test::scratch_dir("config_prec_flags");
  tc::test::write_file(dir / "serve.toml", kFileText);
  const ServeOptions o = resolve({"--config", (dir / "serve.toml").string(), "--host", "10.0.0.3", "--port", "9003",
                                  "-m", "/models/flag.gguf", "-c", "4000", "--request-timeout-s", "0.25",
                                  "--cors-origin", "https://flag.example"},
                                 env_level());
  CHECK(o.host == "10.0.0.3");
  CHECK(o.port == 9003);
  CHECK(o.model == "/models/flag.gguf");
  CHECK(o.ctx_size == 4000);
  CHECK(o.request_timeout_s == 0.25);
  CHECK(o.cors_origins == std::vector<std::string>{"https://flag.example"});
  CHECK(o.log_level == "debug");
  CHECK(o.max_n == 3);
}

TEST_CASE("env alone overrides the defaults", "[config]") {
  FakeEnv env;
  env.vars = {{"THERMOCLINE_PARALLEL", "12"}, {"THERMOCLINE_LOG_FORMAT", "json"}, {"THERMOCLINE_THREADS", " 6 "},
              {"THERMOCLINE_MAX_BODY_BYTES", "4096"}, {"THERMOCLINE_CHAT_TEMPLATE_FILE", "t.jinja"}};
  const ServeOptions o = resolve({}, env);
  CHECK(o.parallel == 12);
  CHECK(o.log_format == "json");
  CHECK(o.threads == 6);
  CHECK(o.max_body_bytes == 4096);
  CHECK(o.chat_template_file == "t.jinja");  // env and flag paths stay as given
}

TEST_CASE("an empty environment variable counts as unset", "[config]") {
  const auto dir = tc::test::scratch_dir("config_prec_empty_env");
  tc::test::write_file(dir / "serve.toml", "port = 9001\napi_keys = [\"filekey\"]\n");
  FakeEnv env;
  env.vars = {{"THERMOCLINE_PORT", ""}, {"THERMOCLINE_API_KEYS", "  "}, {"THERMOCLINE_API_KEY", ""},
              {"THERMOCLINE_CONFIG", (dir / "serve.toml").string()}};
  const ServeOptions o = resolve({}, env);
  CHECK(o.port == 9001);
  CHECK(o.api_keys == std::vector<std::string>{"filekey"});
}

TEST_CASE("THERMOCLINE_CONFIG names the file and --config wins over it", "[config]") {
  const auto dir = tc::test::scratch_dir("config_prec_config_env");
  tc::test::write_file(dir / "a.toml", "port = 1111\n");
  tc::test::write_file(dir / "b.toml", "port = 2222\n");
  FakeEnv env;
  env.vars = {{"THERMOCLINE_CONFIG", (dir / "a.toml").string()}};
  CHECK(resolve({}, env).port == 1111);
  CHECK(resolve({"--config", (dir / "b.toml").string()}, env).port == 2222);
}

TEST_CASE("every key has its --<key-with-dashes> flag and the short forms work", "[config]") {
  const ServeOptions o = resolve({"--model-alias", "tiny", "--ctx-size", "512", "--http-threads", "2",
                                  "--chat-template-file", "a.jinja", "--api-keys", "k1", "--cors-origins", "*",
                                  "-t", "3", "--max-tokens-cap", "100", "--max-stop", "4", "--max-stop-bytes", "64",
                                  "--max-top-logprobs", "5", "--shutdown-grace-s", "2.5", "--batch-size", "256",
                                  "--queue-size", "0", "--parallel", "2", "--max-n", "1"});
  CHECK(o.model_alias == "tiny");
  CHECK(o.ctx_size == 512);
  CHECK(o.http_threads == 2);
  CHECK(o.chat_template_file == "a.jinja");
  CHECK(o.api_keys == std::vector<std::string>{"k1"});
  CHECK(o.cors_origins == std::vector<std::string>{"*"});
  CHECK(o.threads == 3);
  CHECK(o.max_tokens_cap == 100);
  CHECK(o.max_stop == 4);
  CHECK(o.max_stop_bytes == 64);
  CHECK(o.max_top_logprobs == 5);
  CHECK(o.shutdown_grace_s == 2.5);
  CHECK(o.batch_size == 256);
  CHECK(o.queue_size == 0);
  CHECK(o.parallel == 2);
  CHECK(o.max_n == 1);

  const ServeOptions s = resolve({"--alias", "a2", "--chat-template", "b.jinja", "-c", "64", "--threads", "1",
                                  "--model", "m.gguf"});
  CHECK(s.model_alias == "a2");
  CHECK(s.chat_template_file == "b.jinja");
  CHECK(s.ctx_size == 64);
  CHECK(s.threads == 1);
  CHECK(s.model == "m.gguf");
}

TEST_CASE("list flags repeat and accept commas and replace lower lists", "[config]") {
  FakeEnv env;
  env.vars = {{"THERMOCLINE_API_KEYS", "envkey1,envkey2"}, {"THERMOCLINE_CORS_ORIGINS", "https://env.example"}};
  const ServeOptions o = resolve({"--api-key", "k1", "--api-key", "k2,k3", "--cors-origin", "https://a.example",
                                  "--cors-origin", "http://b.example:8080"},
                                 env);
  CHECK(o.api_keys == std::vector<std::string>{"k1", "k2", "k3"});
  CHECK(o.cors_origins == std::vector<std::string>{"https://a.example", "http://b.example:8080"});
  // Without the flags, env's lists stand.
  const ServeOptions e = resolve({}, env);
  CHECK(e.api_keys == std::vector<std::string>{"envkey1", "envkey2"});
}

TEST_CASE("THERMOCLINE_API_KEY adds one key to THERMOCLINE_API_KEYS and replaces the file's", "[config]") {
  const auto dir = tc::test::scratch_dir("config_prec_api_key_alias");
  tc::test::write_file(dir / "serve.toml", "api_keys = [\"filekey\"]\n");
  const std::string cfg = (dir / "serve.toml").string();
  FakeEnv env;
  env.vars = {{"THERMOCLINE_API_KEY", "single"}};
  CHECK(resolve({"--config", cfg}, env).api_keys == std::vector<std::string>{"single"});
  env.vars["THERMOCLINE_API_KEYS"] = "a,b";
  CHECK(resolve({"--config", cfg}, env).api_keys == std::vector<std::string>{"a", "b", "single"});
  CHECK(resolve({"--config", cfg, "--api-key", "flag"}, env).api_keys == std::vector<std::string>{"flag"});
}

TEST_CASE("a repeated scalar flag: the last one wins", "[config]") {
  CHECK(resolve({"--port", "1000", "--port", "2000"}).port == 2000);
}

TEST_CASE("relative paths in the file are relative to the file's folder", "[config]") {
  const auto dir = tc::test::scratch_dir("config_prec_relative");
  std::filesystem::create_directories(dir / "sub");
  tc::test::write_file(dir / "sub" / "serve.toml",
                       "model = \"models/m.gguf\"\nchat_template_file = \"/abs/t.jinja\"\nmodel_alias = \"x/y\"\n");
  const ServeOptions o = resolve({"--config", (dir / "sub" / "serve.toml").string()});
  CHECK(o.model == dir / "sub" / "models/m.gguf");
  CHECK(o.chat_template_file == "/abs/t.jinja");
  CHECK(o.model_alias == "x/y");  // a string, not a path
}

TEST_CASE("print-config is recorded on the flags handle", "[config]") {
  CHECK_FALSE(tc::config::print_config_requested(*tc::test::parse_serve_flags({})));
  CHECK(tc::config::print_config_requested(*tc::test::parse_serve_flags({"--print-config"})));
}

TEST_CASE("CLI11 itself rejects unknown serve flags", "[config]") {
  CHECK_THROWS_AS(tc::test::parse_serve_flags({"--ctx-sise", "5"}), CLI::ParseError);
  CHECK_THROWS_AS(tc::test::parse_serve_flags({"--port"}), CLI::ParseError);
}
