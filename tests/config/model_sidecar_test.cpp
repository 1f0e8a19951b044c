// NAME.toml beside a model in a models folder: the per-model keys and
// aliases apply on top of the server's options; server-wide or unknown keys,
// wrong types and bad values are errors naming the key and the file.
#include <catch2/catch.hpp>

#include <fstream>

#include "config/serve_config.h"
#include "tests/test_util.h"

namespace {

std::filesystem::path write(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  const auto p = dir / name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("a model's NAME.toml sets its own options and aliases", "[config]") {
  const auto dir = tc::test::scratch_dir("model_sidecar");
  tc::config::ServeOptions base;
  base.parallel = 3;
  base.models_dir = dir;
  const auto file = write(dir, "m.toml",
                          "ctx_size = 256\nsparsity = \"dense\"\nkeep_alive = \"10m\"\n"
                          "chat_template_file = \"m.jinja\"\naliases = [\"mini\", \"m:small\"]\n");
  const auto side = tc::config::read_model_sidecar(file, base);
  CHECK(side.options.ctx_size == 256);
  CHECK(side.options.parallel == 3);  // not set: the server's
  CHECK(side.options.sparsity == "dense");
  CHECK(side.options.keep_alive == "10m");
  CHECK(side.options.chat_template_file == dir / "m.jinja");  // relative to the file
  CHECK(side.aliases == std::vector<std::string>{"mini", "m:small"});
}

TEST_CASE("a model's NAME.toml rejects what it may not set", "[config]") {
  const auto dir = tc::test::scratch_dir("model_sidecar_errors");
  const tc::config::ServeOptions base;
  struct Case {
    std::string text, key, needle;
  };
  for (const Case& c : {Case{"port = 9000\n", "port", "server-wide"},
                        Case{"ctx_sise = 256\n", "ctx_sise", "unknown key"},
                        Case{"ctx_size = \"big\"\n", "ctx_size", "expected an integer"},
                        Case{"ctx_size = 2\n", "ctx_size", "16.."},
                        Case{"keep_alive = \"soon\"\n", "keep_alive", "soon"},
                        Case{"aliases = \"x\"\n", "aliases", "array"},
                        Case{"aliases = [\"\"]\n", "aliases", "non-empty"},
                        Case{"ctx_size = [\n", "config", "invalid TOML"}}) {
    INFO(c.text);
    const auto file = write(dir, "bad.toml", c.text);
    try {
      tc::config::read_model_sidecar(file, base);
      FAIL("accepted");
    } catch (const tc::config::ConfigError& e) {
      CHECK(e.key() == c.key);
      const std::string what = e.what();
      CHECK(what.find("bad.toml") != std::string::npos);
      CHECK(what.find(c.needle) != std::string::npos);
    }
  }
}

TEST_CASE("models_dir excludes model, and the new keys are validated", "[config]") {
  tc::config::ServeOptions o;
  o.models_dir = "/models";
  CHECK_NOTHROW(tc::config::validate(o));
  o.model = "/models/a.gguf";
  CHECK_THROWS_WITH(tc::config::validate(o), Catch::Contains("models_dir") && Catch::Contains("model"));
  o.model.clear();
  o.keep_alive = "forever";
  CHECK_THROWS_WITH(tc::config::validate(o), Catch::Contains("keep_alive"));
  o.keep_alive = "-1";
  o.models_ram_budget = "lots";
  CHECK_THROWS_WITH(tc::config::validate(o), Catch::Contains("models_ram_budget"));
  o.models_ram_budget = "2GiB";
  o.max_loaded_models = 0;
  CHECK_THROWS_WITH(tc::config::validate(o), Catch::Contains("max_loaded_models"));
}
