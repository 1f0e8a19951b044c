// `--offload-layers` / `--vram-budget` (layer offload) through the real
// binary: on generate, bench and perplexity; without a GPU it stops at start
// with the reason (never a crash); misuse is refused with a message.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/test_util.h"

using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

}  // namespace

TEST_CASE("layer offload options need a GPU and say why not elsewhere", "[integration][offload]") {
  const auto dir = tc::test::scratch_dir("cli_offload");
  const std::string model = (dir / "m.gguf").string();
  auto made = run_command(bin() + " make-model -o " + model +
                          " --n-embd 64 --n-layer 3 --n-ff 128 --n-head 4 --n-vocab 512 --type q8_0 --seed 4 -t 2");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  const std::string text = (tc::test::source_dir() / "README.md").string();
  const std::string m = " -m " + model + " -t 2";

  // Every shared-option command knows the flag, and refuses it on the CPU.
  const std::vector<std::string> commands = {" generate -p hi -n 4", " bench -p 8 -n 4 -r 1",
                                             " perplexity -c 16 --chunks 1 --file " + text};
  for (const std::string& cmd : commands) {
    INFO(cmd);
    auto on_cpu = run_command(bin() + cmd + m + " --device cpu --offload-layers 1");
    CHECK(on_cpu.exit_code == 1);
    CHECK_THAT(on_cpu.output, Catch::Contains("--offload-layers") && Catch::Contains("needs --device cuda"));
    auto budget_on_cpu = run_command(bin() + cmd + m + " --vram-budget 1GiB");
    CHECK(budget_on_cpu.exit_code == 1);
    CHECK_THAT(budget_on_cpu.output, Catch::Contains("--vram-budget") && Catch::Contains("needs --device cuda"));
  }
  auto both = run_command(bin() + " generate -p hi" + m + " --device cuda --offload-layers 1 --vram-budget 1GiB");
  CHECK(both.exit_code != 0);
  CHECK_THAT(both.output, Catch::Contains("excludes"));
  auto bad_budget = run_command(bin() + " generate -p hi" + m + " --device cuda --vram-budget lots");
  CHECK(bad_budget.exit_code == 1);
  CHECK_THAT(bad_budget.output, Catch::Contains("--vram-budget: ") && Catch::Contains("lots"));

  auto offload = run_command(bin() + " generate -p hi -n 4" + m + " --device cuda --offload-layers 2");
  INFO(offload.output);
  if (offload.exit_code == 0) {
    CHECK_THAT(offload.output, Catch::Contains("layer offload: the first 2 of 3 layers"));
    auto too_many = run_command(bin() + " generate -p hi -n 4" + m + " --device cuda --offload-layers 4");
    CHECK(too_many.exit_code == 1);
    CHECK_THAT(too_many.output, Catch::Contains("has 3 layers"));
  } else {
    // No CUDA in this build or no GPU here: the backend's reason, no crash.
    CHECK(offload.exit_code == 1);
    CHECK_THAT(offload.output, Catch::Contains("error: ") && Catch::Contains("CUDA"));
  }
}
