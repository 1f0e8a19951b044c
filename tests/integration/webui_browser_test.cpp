// The built-in web page in a real browser: starts two servers (a sparse
// model with a stats file and --api-key; the bundled model, dense, without a
// key) and runs tests/integration/webui/webui_check.mjs, which drives
// Debian's chromium headless with puppeteer-core (both installed by
// scripts/setup.sh). Without them it is skipped with a warning, or fails
// where THERMOCLINE_REQUIRE_ORACLE is set (CI). THERMOCLINE_WEBUI_SCREENSHOTS
// names a folder for the screenshots (docs/images/ holds the ones shown in
// docs/webui.md).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/integration/image_fixtures.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;

bool require_oracle() {
  const char* env = std::getenv("THERMOCLINE_REQUIRE_ORACLE");
  return env && *env && std::string(env) != "0";
}

}  // namespace

TEST_CASE("the web page works in headless chromium", "[integration][webui][browser]") {
  const fs::path script = tc::test::source_dir() / "tests" / "integration" / "webui" / "webui_check.mjs";
  REQUIRE(fs::exists(script));
  const fs::path node_modules = tc::test::source_dir() / ".deps" / "npm" / "node_modules";
  const fs::path bundled = tc::test::source_dir() / "models" / "default.gguf";
  std::string missing;
  if (tc::test::run_command("node --version").exit_code != 0) {
    missing = "node is not installed";
  } else if (!fs::exists("/usr/bin/chromium")) {
    missing = "chromium is not installed (scripts/setup.sh installs Debian's chromium)";
  } else if (!fs::exists(node_modules / "puppeteer-core" / "package.json")) {
    missing = "the puppeteer-core npm package is not in " + node_modules.string() + " (run scripts/setup.sh)";
  } else if (!fs::exists(bundled)) {
    missing = "the bundled model " + bundled.string() + " is absent";
  }
  if (!missing.empty()) {
    if (require_oracle()) FAIL(missing << " and THERMOCLINE_REQUIRE_ORACLE is set");
    WARN("skipping the web page's browser test: " << missing);
    return;
  }

  const auto dir = tc::test::scratch_dir("webui_browser");
  // Sparse (planted sparsity, its own predictors), with a profile's stats
  // file for the firing curve; a long context so that a reply can be stopped
  // mid-way.
  const auto sparse = tc::test::make_test_model(
      dir, "sparse",
      "--sparse --n-embd 512 --n-layer 3 --n-ff 1536 --n-head 8 --n-head-kv 4 --n-vocab 1024 --predictor-rank 32 "
      "--n-ctx 8192 --seed 11");
  const std::string stats = (dir / "sparse.stats").string();
  if (!fs::exists(stats)) {
    const auto prof = tc::test::run_command(tc::test::thermocline_binary().string() + " profile -m " +
                                            tc::test::shell_quote(sparse.string()) + " --corpus " +
                                            tc::test::shell_quote((tc::test::source_dir() / "README.md").string()) +
                                            " -o " + tc::test::shell_quote(stats) + " --ctx 64 -n 256 -t 2");
    INFO(prof.output);
    REQUIRE(prof.exit_code == 0);
  }
  tc::test::ServerProcess sparse_server(sparse,
                                        {"--api-key", "sk-browser", "--alias", "sparse", "--stats", stats, "--ctx-size",
                                         "8192", "--parallel", "2", "--threads", "2"},
                                        dir);
  tc::test::ServerProcess dense_server(bundled, {"--parallel", "2", "--threads", "2"},
                                       tc::test::scratch_dir("webui_browser_dense"));
  // A Gemma 3 model with a random vision projector, and an image to attach.
  const auto gemma = tc::test::make_test_model(
      dir, "gemma", "--arch gemma3 --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 3");
  const fs::path mmproj = dir / "mmproj-gemma.gguf";
  const auto made = tc::test::run_command(
      tc::test::thermocline_binary().string() + " make-mmproj -o " + tc::test::shell_quote(mmproj.string()) +
      " --n-embd-text 64 --image-size 28 --patch-size 14 --n-embd 16 --n-ff 32 --n-layer 1 --n-head 2 --pool 2");
  REQUIRE(made.exit_code == 0);
  const fs::path image = dir / "picture.png";
  tc::test::write_file(image, tc::test::test_png(24, 16, 5));
  tc::test::ServerProcess vision_server(gemma, {"--mmproj", mmproj.string(), "--threads", "2"},
                                        tc::test::scratch_dir("webui_browser_vision"));
  // A models folder: a chat model beside an embedding model and a reranker
  // (listed, not offered for chat). "all-minilm" sorts first: the page must
  // still pick the chat model.
  const auto folder = tc::test::scratch_dir("webui_browser_folder");
  const std::string encoder = "--arch bert --tokenizer bert --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 "
                              "--n-head-kv 4 --n-ctx 64 ";
  tc::test::make_test_model(folder, "all-minilm", encoder + "--seed 5");
  tc::test::make_test_model(folder, "reranker", encoder + "--reranker --seed 6");
  tc::test::make_test_model(folder, "chat", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 "
                                            "--n-vocab 1024 --seed 7");
  tc::test::ServerProcess folder_server({}, {"--models-dir", folder.string(), "--threads", "2"},
                                        tc::test::scratch_dir("webui_browser_folder_logs"));

  std::string screenshots;
  if (const char* env = std::getenv("THERMOCLINE_WEBUI_SCREENSHOTS"); env && *env) {
    fs::create_directories(env);
    screenshots = " " + tc::test::shell_quote(env);
  }
  const std::string command = "TC_VISION_URL=" + tc::test::shell_quote(vision_server.url()) +
                              " TC_FOLDER_URL=" + tc::test::shell_quote(folder_server.url()) +
                              " TC_VISION_IMAGE=" + tc::test::shell_quote(image.string()) +
                              " timeout 240 node " + tc::test::shell_quote(script.string()) + " " +
                              tc::test::shell_quote(node_modules.string()) + " " +
                              tc::test::shell_quote(sparse_server.url()) + " sk-browser " +
                              tc::test::shell_quote(dense_server.url()) + screenshots;
  const auto r = tc::test::run_command(command);
  INFO("command: " << command);
  INFO("output:\n" << r.output);
  const std::string logs = r.exit_code != 0
                               ? sparse_server.log() + "\n---\n" + dense_server.log() + "\n---\n" + vision_server.log()
                               : "(not shown)";
  INFO("server logs:\n" << logs);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(" 0 failed") != std::string::npos);
  CHECK(sparse_server.stop() == 0);
  CHECK(dense_server.stop() == 0);
  CHECK(vision_server.stop() == 0);
  CHECK(folder_server.stop() == 0);
}
