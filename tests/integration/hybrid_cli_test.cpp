// `--placement` (hybrid mode) through the real binary: a plan from `place`,
// or `--placement auto` solved at load, runs on `--device cuda` where a GPU
// is (the hybrid and prefetch lines on stderr), and everywhere else stops
// with the reason; misuse (of `--prefetch` too) is refused with a message.
#include <catch2/catch.hpp>

#include <string>

#include "tests/test_util.h"

using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

// A `--device cuda` run: where a GPU is it ran in hybrid mode and printed
// `ran_line`; with no CUDA in this build or no GPU here it stopped with the
// backend's reason, no crash.
void check_hybrid_or_no_cuda(const tc::test::CommandResult& r, const std::string& ran_line) {
  INFO(r.output);
  if (r.exit_code == 0) {
    CHECK_THAT(r.output, Catch::Contains("hybrid: ") && Catch::Contains(ran_line));
  } else {
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("error: ") && Catch::Contains("CUDA"));
  }
}

}  // namespace

TEST_CASE("generate --placement runs hybrid mode on a GPU and says why not elsewhere", "[integration][hybrid]") {
  const auto dir = tc::test::scratch_dir("cli_hybrid");
  const std::string model = (dir / "m.gguf").string();
  const std::string stats = (dir / "m.stats").string();
  const std::string plan = (dir / "m.gpuidx").string();
  const std::string corpus = (tc::test::source_dir() / "README.md").string();
  auto made = run_command(bin() + " make-model --sparse -o " + model +
                          " --n-embd 128 --n-layer 2 --n-ff 512 --n-head 4 --n-vocab 1024 --type f16"
                          " --predictor-rank 32 --seed 4 -t 2");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  auto prof = run_command(bin() + " profile -m " + model + " --corpus " + corpus + " -o " + stats +
                          " --ctx 128 -n 1024 -t 2");
  INFO(prof.output);
  REQUIRE(prof.exit_code == 0);
  // 34.35 MiB: the fixed part of this shape (33.96 MiB, 32 of it cuBLAS's workspace) and about half
  // of the neurons (384 KiB).
  auto placed = run_command(bin() + " place -m " + model + " --stats " + stats +
                            " --vram-budget 34.35MiB --ctx 128 --parallel 1 --batch 32 -o " + plan);
  INFO(placed.output);
  REQUIRE(placed.exit_code == 0);

  const std::string args = " -m " + model + " -p 'The quick brown fox' -n 8 -t 2 --placement " + plan;
  auto on_cpu = run_command(bin() + " generate" + args + " --device cpu");
  CHECK(on_cpu.exit_code != 0);
  CHECK_THAT(on_cpu.output, Catch::Contains("--placement") && Catch::Contains("needs --device cuda"));
  auto dense = run_command(bin() + " generate" + args + " --device cuda --sparsity dense");
  CHECK(dense.exit_code != 0);
  CHECK_THAT(dense.output, Catch::Contains("CUDA") || Catch::Contains("needs the sparse FFN"));

  check_hybrid_or_no_cuda(run_command(bin() + " generate" + args + " --device cuda"), "FFN neurons hot");

  // --placement auto: the same budget, solved at load from --stats.
  const std::string auto_args = " -m " + model + " -p 'The quick brown fox' -n 8 -t 2 --placement auto --stats " +
                                stats + " --vram-budget 34.35MiB -c 128 -b 32";
  auto auto_on_cpu = run_command(bin() + " generate" + auto_args + " --device cpu");
  CHECK(auto_on_cpu.exit_code == 1);
  CHECK_THAT(auto_on_cpu.output, Catch::Contains("--placement") && Catch::Contains("needs --device cuda"));
  auto file_and_budget = run_command(bin() + " generate" + args + " --device cuda --vram-budget 1GiB");
  CHECK(file_and_budget.exit_code == 1);
  CHECK_THAT(file_and_budget.output, Catch::Contains("--vram-budget with --placement FILE"));
  check_hybrid_or_no_cuda(run_command(bin() + " generate" + auto_args + " --device cuda"), "solved at start");

  // --prefetch: a bad value, and "on" without hybrid mode, are refused;
  // on a GPU the prefetch line says what runs.
  auto bad_mode = run_command(bin() + " generate" + args + " --device cuda --prefetch sometimes");
  CHECK(bad_mode.exit_code != 0);
  CHECK_THAT(bad_mode.output, Catch::Contains("--prefetch"));
  auto no_placement = run_command(bin() + " generate -m " + model + " -p 'x' -n 2 -t 2 --prefetch on");
  CHECK(no_placement.exit_code != 0);
  CHECK_THAT(no_placement.output, Catch::Contains("--prefetch on") && Catch::Contains("--placement"));
  auto prefetch_auto = run_command(bin() + " generate" + args + " --device cuda");
  check_hybrid_or_no_cuda(prefetch_auto, "prefetch: auto");
  if (prefetch_auto.exit_code == 0) {
    auto off = run_command(bin() + " generate" + args + " --device cuda --prefetch off");
    check_hybrid_or_no_cuda(off, "prefetch: off");
  }
}
