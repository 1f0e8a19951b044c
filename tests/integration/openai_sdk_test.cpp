// The official OpenAI Node SDK (npm openai, installed by scripts/setup.sh into
// .deps/npm) against a real `thermocline serve`: tests/integration/sdk/
// openai_sdk_check.mjs (chat, completions, embeddings) and
// openai_responses_check.mjs (the Responses API) run the checks; these tests
// start the server, run node and report its output. Without node or the SDK it is skipped with a
// warning, or fails where THERMOCLINE_REQUIRE_ORACLE is set (CI).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

namespace {

bool require_oracle() {
  const char* env = std::getenv("THERMOCLINE_REQUIRE_ORACLE");
  return env && *env && std::string(env) != "0";
}

// Runs tests/integration/sdk/SCRIPT against a server on a tiny model.
void run_sdk_script(const std::string& script_name, const std::string& scratch) {
  namespace fs = std::filesystem;
  const fs::path script = tc::test::source_dir() / "tests" / "integration" / "sdk" / script_name;
  REQUIRE(fs::exists(script));
  const fs::path node_modules = tc::test::source_dir() / ".deps" / "npm" / "node_modules";

  std::string missing;
  if (tc::test::run_command("node --version").exit_code != 0) {
    missing = "node is not installed";
  } else if (!fs::exists(node_modules / "openai" / "index.mjs")) {
    missing = "the openai npm package is not in " + node_modules.string() + " (run scripts/setup.sh)";
  }
  if (!missing.empty()) {
    if (require_oracle()) FAIL(missing << " and THERMOCLINE_REQUIRE_ORACLE is set");
    WARN("skipping the OpenAI SDK test: " << missing);
    return;
  }

  const auto dir = tc::test::scratch_dir(scratch);
  const auto model = tc::test::make_test_model(
      dir, "tiny", "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024");
  // A 512-token context keeps the overflow check cheap; two slots let n: 2 run together.
  tc::test::ServerProcess server(model,
                                 {"--api-key", "test-key-1", "--alias", "tiny", "--ctx-size", "512", "--parallel",
                                  "2", "--threads", "2"},
                                 dir);

  const std::string command = "node " + tc::test::shell_quote(script.string()) + " " +
                              tc::test::shell_quote(server.url() + "/v1") + " test-key-1 tiny " +
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


}  // namespace

TEST_CASE("the OpenAI Node SDK drives the server", "[integration][sdk]") {
  run_sdk_script("openai_sdk_check.mjs", "openai_sdk");
}

TEST_CASE("the OpenAI Node SDK's Responses API drives the server", "[integration][sdk]") {
  run_sdk_script("openai_responses_check.mjs", "openai_responses_sdk");
}
