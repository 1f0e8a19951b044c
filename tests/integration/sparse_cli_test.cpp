// The sparse workflow through the real binary: make-model --no-predictors,
// profile --train-predictors --teal into a stats file, then generate with
// --stats in every --sparsity mode (errors that say what is missing),
// convert --to-pwri and the PWRI file running sparse on its own predictors
// with the same bits.
#include <catch2/catch.hpp>

#include <string>

#include "tests/integration/cli_generate.h"
#include "tests/test_util.h"

using tc::test::generated;
using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

}  // namespace

TEST_CASE("profile --train-predictors feeds generate --sparsity relu, and convert --to-pwri", "[integration][sparse]") {
  const auto dir = tc::test::scratch_dir("cli_sparse");
  const std::string model = (dir / "m.gguf").string();
  const std::string stats = (dir / "m.stats").string();
  const std::string pwri = (dir / "m.powerinfer.gguf").string();
  const std::string corpus = (tc::test::source_dir() / "README.md").string();
  auto made = run_command(bin() + " make-model --sparse --no-predictors -o " + model +
                          " --n-embd 128 --n-layer 2 --n-ff 512 --n-head 4 --n-vocab 1024 --type f16"
                          " --predictor-rank 32 --seed 4 -t 2");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);

  // Without predictors: auto runs dense, relu says what is missing.
  auto relu = run_command(bin() + " generate -m " + model + " -p hello -n 4 --sparsity relu");
  CHECK(relu.exit_code != 0);
  CHECK_THAT(relu.output, Catch::Contains("predictors") && Catch::Contains("--train-predictors"));
  auto teal = run_command(bin() + " generate -m " + model + " -p hello -n 4 --sparsity teal:0.3");
  CHECK(teal.exit_code != 0);
  CHECK_THAT(teal.output, Catch::Contains("--teal"));
  auto bad = run_command(bin() + " generate -m " + model + " -p hello -n 4 --sparsity sparse");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("--sparsity") && Catch::Contains("'sparse'"));

  auto prof = run_command(bin() + " profile -m " + model + " --corpus " + corpus + " -o " + stats +
                          " --ctx 128 -n 4096 --train-predictors --predictor-tokens 1024 --teal -t 2");
  INFO(prof.output);
  REQUIRE(prof.exit_code == 0);
  CHECK_THAT(prof.output, Catch::Contains("TEAL: calibrated"));

  const std::string args = "-m " + model + " --stats " + stats + " -p 'The quick brown fox' -n 24 -t 2";
  // TEAL at 0 zeroes nothing: the same bits as dense. (How close the sparse
  // FFN's text is to dense is measured in tests/engine/model and bench/;
  // a random model's near-flat logits make exact text equality a coin toss.)
  const std::string dense = generated(args + " --sparsity dense");
  CHECK(generated(args + " --sparsity teal:0") == dense);
  auto plan = run_command(bin() + " generate " + args + " --sparsity auto");
  CHECK_THAT(plan.output, Catch::Contains("sparsity: sparse FFN (predictors: " + stats));
  auto teal_plan = run_command(bin() + " generate " + args + " --sparsity teal:0.4");
  CHECK(teal_plan.exit_code == 0);
  CHECK_THAT(teal_plan.output, Catch::Contains("TEAL at target sparsity 0.40"));

  auto conv = run_command(bin() + " convert --to-pwri " + model + " --stats " + stats + " -o " + pwri);
  INFO(conv.output);
  REQUIRE(conv.exit_code == 0);
  // f16 ffn_down_t is exactly ffn_down transposed and the predictors are the
  // stats file's: with the prompt on the sparse path too (a dense prompt
  // sums ffn_down and ffn_down_t in different orders), the PWRI file's run
  // has the same bits as the GGUF's.
  const std::string all_sparse = " -p 'The quick brown fox' -n 24 -t 2 --sparsity relu --sparse-max-tokens 64";
  CHECK(generated("-m " + pwri + all_sparse) == generated("-m " + model + " --stats " + stats + all_sparse));
}
