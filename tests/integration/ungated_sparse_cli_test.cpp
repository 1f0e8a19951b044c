// The sparse workflow on the ungated ReLU-family FFNs through the real
// binary: Falcon's (PowerInfer's ReluFalcon: relu(up), attention and FFN
// side by side), Arcee's (relu(up)^2, sequential) and Nemotron's (relu(up)^2
// after LayerNorms). make-model, profile
// --train-predictors, generate with the sparse FFN on those predictors,
// convert --to-pwri (a PWRI file of the same architecture with ffn_down_t,
// as ReluFalcon-40B's) running with the same bits, and place spending a
// budget on its neurons.
#include <catch2/catch.hpp>

#include <string>

#include "engine/gguf/gguf_file.h"
#include "tests/integration/cli_generate.h"
#include "tests/test_util.h"

using tc::test::generated;
using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

}  // namespace

TEST_CASE("ungated relu FFNs: profile --train-predictors, generate --sparsity relu, convert --to-pwri, place",
          "[integration][sparse][arch]") {
  struct Case {
    const char* arch;
    const char* flags;
  };
  for (const Case c : {Case{"falcon", "--arch falcon --ffn relu"}, Case{"arcee", "--arch arcee"},
                       Case{"nemotron", "--arch nemotron --rope-dims 16"}}) {
    INFO(c.flags);
    const auto dir = tc::test::scratch_dir(std::string("cli_sparse_") + c.arch);
    const std::string model = (dir / "m.gguf").string();
    const std::string stats = (dir / "m.stats").string();
    const std::string pwri = (dir / "m.powerinfer.gguf").string();
    const std::string corpus = (tc::test::source_dir() / "README.md").string();
    auto made = run_command(bin() + " make-model " + c.flags + " -o " + model +
                            " --n-embd 128 --n-layer 2 --n-ff 512 --n-head 4 --n-head-kv 1 --n-vocab 1024 --type f16"
                            " --seed 6 -t 2");
    INFO(made.output);
    REQUIRE(made.exit_code == 0);

    auto prof = run_command(bin() + " profile -m " + model + " --corpus " + corpus + " -o " + stats +
                            " --ctx 128 -n 2048 --train-predictors --predictor-tokens 1024 -t 2");
    INFO(prof.output);
    REQUIRE(prof.exit_code == 0);

    const std::string args = "-m " + model + " --stats " + stats + " -p 'The quick brown fox' -n 16 -t 2";
    auto plan = run_command(bin() + " generate " + args + " --sparsity auto");
    INFO(plan.output);
    REQUIRE(plan.exit_code == 0);
    CHECK_THAT(plan.output, Catch::Contains("sparsity: sparse FFN (predictors: " + stats));
    CHECK_FALSE(generated(args + " --sparsity relu").empty());

    auto conv = run_command(bin() + " convert --to-pwri " + model + " --stats " + stats + " -o " + pwri);
    INFO(conv.output);
    REQUIRE(conv.exit_code == 0);
    const auto converted = tc::gguf::GgufFile::open(pwri);
    CHECK(converted.get_string("general.architecture") == c.arch);
    CHECK(converted.find_tensor("blk.0.ffn_down_t.weight") != nullptr);
    // f16 ffn_down_t is exactly ffn_down transposed and the predictors are
    // the stats file's: all on the sparse path, the PWRI file gives the same
    // bits.
    const std::string all_sparse = " -p 'The quick brown fox' -n 16 -t 2 --sparsity relu --sparse-max-tokens 64";
    CHECK(generated("-m " + pwri + all_sparse) == generated("-m " + model + " --stats " + stats + all_sparse));
    CHECK_FALSE(generated("-m " + pwri + " -p 'The quick brown fox' -n 8 -t 2 --sparsity dense").empty());

    auto place = run_command(bin() + " place -m " + model + " --stats " + stats +
                             " --ctx 128 --parallel 1 --batch 32 --vram-budget 1GiB -o " + (dir / "m.gpuidx").string());
    INFO(place.output);
    CHECK(place.exit_code == 0);
    CHECK_THAT(place.output, Catch::Contains("| 0 | 512 / 512 |"));
  }
}
