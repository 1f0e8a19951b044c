// convert --to-f32 through the real binary: a Q8_0 model's F32 copy runs
// (perplexity within a fraction of a percent of the Q8_0 file's, which
// rounds its activations to int8), and the mode errors say what is missing.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>
#include <string>

#include "tests/test_util.h"

using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

double ppl_of(const std::string& output) {
  std::smatch m;
  REQUIRE(std::regex_search(output, m, std::regex(R"(ppl = ([0-9.]+))")));
  return std::stod(m[1].str());
}

}  // namespace

TEST_CASE("convert --to-f32: the F32 copy of a Q8_0 model runs as the same model", "[integration][convert]") {
  const auto dir = tc::test::scratch_dir("cli_convert_f32");
  const std::string model = (dir / "m.gguf").string();
  const std::string copy = (dir / "m.f32.gguf").string();
  const std::string corpus = (tc::test::source_dir() / "README.md").string();
  auto made = run_command(bin() + " make-model -o " + model +
                          " --n-embd 128 --n-layer 2 --n-ff 256 --n-head 4 --n-vocab 1024 --type q8_0 --seed 3 -t 2");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);

  auto conv = run_command(bin() + " convert --to-f32 " + model + " -o " + copy + " -t 2");
  INFO(conv.output);
  REQUIRE(conv.exit_code == 0);
  CHECK_THAT(conv.output, Catch::Contains("dequantized to f32"));
  auto shown = run_command(bin() + " inspect " + copy);
  CHECK_THAT(shown.output, Catch::Contains("thermocline.convert.dequantized_from"));

  const std::string args = " -f " + corpus + " -c 64 --chunks 4 -t 2";
  auto q8 = run_command(bin() + " perplexity -m " + model + args);
  auto f32 = run_command(bin() + " perplexity -m " + copy + args);
  INFO(q8.output << f32.output);
  REQUIRE(q8.exit_code == 0);
  REQUIRE(f32.exit_code == 0);
  // The same weights; only the Q8_0 path's int8 activations differ.
  const double a = ppl_of(q8.output), b = ppl_of(f32.output);
  CHECK(std::abs(a - b) / b < 0.01);
}

TEST_CASE("convert: the modes' options are checked before anything is read", "[integration][convert]") {
  const auto dir = tc::test::scratch_dir("cli_convert_modes");
  const std::string out = (dir / "out.gguf").string();
  auto none = run_command(bin() + " convert -o " + out);
  CHECK(none.exit_code != 0);
  CHECK_THAT(none.output, Catch::Contains("--to-pwri") && Catch::Contains("--to-f32"));
  auto both = run_command(bin() + " convert --to-pwri a.gguf --to-f32 a.gguf -o " + out);
  CHECK(both.exit_code != 0);
  CHECK_THAT(both.output, Catch::Contains("excludes"));
  auto stats = run_command(bin() + " convert --to-f32 a.gguf --stats s.gguf -o " + out);
  CHECK(stats.exit_code != 0);
  CHECK_THAT(stats.output, Catch::Contains("--stats requires --to-pwri"));
  auto no_stats = run_command(bin() + " convert --to-pwri a.gguf -o " + out);
  CHECK(no_stats.exit_code != 0);
  CHECK_THAT(no_stats.output, Catch::Contains("needs --stats"));
  auto missing = run_command(bin() + " convert --to-f32 " + (dir / "absent.gguf").string() + " -o " + out);
  CHECK(missing.exit_code != 0);
  CHECK_THAT(missing.output, Catch::Contains("absent.gguf") && Catch::Contains("no such file"));
  CHECK_FALSE(std::filesystem::exists(out));
}
