// `thermocline serve` with a GPU split (placement, offload_layers,
// vram_budget) through the real binary: `--device cuda --placement auto`
// runs hybrid mode where a GPU is and elsewhere leaves the engine Failed
// with the backend's reason (/health 503, a log line); contradictory
// options are refused at start naming the key; --print-config shows them.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

// A sparse model and the stats `profile` recorded on it.
struct SparseModel {
  std::string model;
  std::string stats;
};
SparseModel sparse_model(const std::filesystem::path& dir) {
  SparseModel m{(dir / "m.gguf").string(), (dir / "m.stats").string()};
  auto made = run_command(bin() + " make-model --sparse -o " + m.model +
                          " --n-embd 128 --n-layer 2 --n-ff 512 --n-head 4 --n-vocab 1024 --type f16"
                          " --predictor-rank 32 --seed 4 -t 2");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  const std::string corpus = (tc::test::source_dir() / "README.md").string();
  auto prof = run_command(bin() + " profile -m " + m.model + " --corpus " + corpus + " -o " + m.stats +
                          " --ctx 128 -n 512 -t 2");
  INFO(prof.output);
  REQUIRE(prof.exit_code == 0);
  return m;
}

}  // namespace

TEST_CASE("serve --device cuda --placement auto runs hybrid mode on a GPU and says why not elsewhere",
          "[integration][serve][hybrid]") {
  const auto dir = tc::test::scratch_dir("serve_gpu_split");
  const SparseModel m = sparse_model(dir);
  tc::test::ServerLaunch launch;
  launch.require_ready = false;
  tc::test::ServerProcess server(launch, m.model,
                                 {"--device", "cuda", "--placement", "auto", "--stats", m.stats, "-t", "2",
                                  "--ctx-size", "128", "--parallel", "1"},
                                 dir);
  auto client = server.client();
  // Wait for the engine to leave Loading: 200 (ready) or 503 naming the failure.
  const auto [status, body] = tc::test::wait_until_loaded(client);
  INFO(body << "\n" << server.log());
  if (status == 200) {
    CHECK_THAT(server.log_when_contains("solved at start"),
               Catch::Contains("hybrid: ") && Catch::Contains("solved at start"));
  } else {
    // No CUDA in this build or no GPU here: the backend's reason, on /health and in the log.
    CHECK(status == 503);
    const std::string message = json::parse(body)["error"]["message"];
    CHECK_THAT(message, Catch::Contains("engine failed") && Catch::Contains("CUDA"));
    CHECK_THAT(server.log_when_contains("engine failed to start: "),
               Catch::Contains("error engine failed to start: ") && Catch::Contains("CUDA"));
    auto completion = tc::test::post_json(client, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 2}});
    CHECK(completion.status == 500);
  }
  CHECK(server.stop() == 0);
}

TEST_CASE("serve refuses contradictory GPU split options at start naming the key", "[integration][serve][hybrid]") {
  const auto dir = tc::test::scratch_dir("serve_gpu_split_refused");
  const auto model = tc::test::make_test_model(dir, "tiny", "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 "
                                                            "--n-head-kv 2 --n-vocab 1024");
  const std::string serve = bin() + " serve --port 0 -m " + model.string();
  struct Case {
    std::string args;
    std::string key;
    std::string words;
  };
  const Case cases[] = {
      {" --placement auto", "config 'placement' (flag --placement)", "needs --device cuda"},
      {" --device cuda --placement m.gpuidx --vram-budget 1GiB", "config 'vram_budget' (flag --vram-budget)",
       "--placement auto"},
      {" --device cuda --offload-layers 1 --vram-budget 1GiB", "config 'vram_budget'", "pick one"},
      {" --device cuda --placement auto --offload-layers 1", "config 'placement'", "pick one"},
      {" --device cuda --vram-budget lots", "config 'vram_budget'", "'lots'"},
      {" --offload-layers=-2 --device cuda", "config 'offload_layers'", "-1..1048576"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto r = run_command(serve + c.args);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("error: " + c.key) && Catch::Contains(c.words));
  }
  const auto printed = run_command("THERMOCLINE_PLACEMENT=auto " + serve + " --device cuda --vram-budget 2GiB "
                                   "--print-config");
  INFO(printed.output);
  CHECK(printed.exit_code == 0);
  CHECK_THAT(printed.output, Catch::Contains("placement = \"auto\"") && Catch::Contains("vram_budget = \"2GiB\"") &&
                                 Catch::Contains("offload_layers = -1"));
}
