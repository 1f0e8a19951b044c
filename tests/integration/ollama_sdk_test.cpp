// The official Ollama JavaScript client (npm ollama, installed by
// scripts/setup.sh into .deps/npm) against `thermocline serve --models-dir`:
// tests/integration/sdk/ollama_sdk_check.mjs runs the checks; this test
// builds the folder (two models, a code model and a corrupt file), starts the server, runs
// node and reports its output. Without node or the client it is skipped
// with a warning, or fails where THERMOCLINE_REQUIRE_ORACLE is set (CI).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

TEST_CASE("the Ollama JavaScript client drives the server's Ollama API", "[integration][sdk][ollama]") {
  namespace fs = std::filesystem;
  const fs::path script = tc::test::source_dir() / "tests" / "integration" / "sdk" / "ollama_sdk_check.mjs";
  REQUIRE(fs::exists(script));
  const fs::path node_modules = tc::test::source_dir() / ".deps" / "npm" / "node_modules";
  std::string missing;
  if (tc::test::run_command("node --version").exit_code != 0) {
    missing = "node is not installed";
  } else if (!fs::exists(node_modules / "ollama" / "dist" / "index.mjs")) {
    missing = "the ollama npm package is not in " + node_modules.string() + " (run scripts/setup.sh)";
  }
  if (!missing.empty()) {
    const char* env = std::getenv("THERMOCLINE_REQUIRE_ORACLE");
    if (env && *env && std::string(env) != "0") FAIL(missing << " and THERMOCLINE_REQUIRE_ORACLE is set");
    WARN("skipping the Ollama client test: " << missing);
    return;
  }

  const auto dir = tc::test::scratch_dir("ollama_sdk");
  const auto models = dir / "models";
  fs::create_directories(models);
  const std::string shape = "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024";
  tc::test::make_test_model(models, "tiny", shape + " --seed 1");
  tc::test::make_test_model(models, "small", shape + " --seed 2");
  tc::test::make_test_model(models, "coder", shape + " --fim --seed 3");
  std::ofstream(models / "broken.gguf") << "GGUF this is not a model";
  tc::test::ServerProcess server({},
                                 {"--models-dir", models.string(), "--api-key", "test-key-1", "--ctx-size", "512",
                                  "--parallel", "2", "--threads", "2", "--max-loaded-models", "4"},
                                 dir);
  const std::string command = "node " + tc::test::shell_quote(script.string()) + " " +
                              tc::test::shell_quote(server.url()) + " test-key-1 tiny small broken coder " +
                              tc::test::shell_quote(node_modules.string());
  const auto r = tc::test::run_command(command);
  INFO("command: " << command);
  INFO("output:\n" << r.output);
  const std::string log = r.exit_code != 0 ? server.log() : std::string("(not shown)");
  INFO("server log:\n" << log);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("all ") != std::string::npos);
  CHECK(server.stop() == 0);
}
