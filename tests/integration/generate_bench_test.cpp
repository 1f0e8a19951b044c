// `thermocline generate` and `thermocline bench` through the binary: output
// streams, seeds reproduce, and bench reports llama-bench style figures.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

std::string make_tiny_model(const std::string& name, const std::string& type = "q8_0") {
  const auto path = (tc::test::scratch_dir(name) / "tiny.gguf").string();
  const auto r = run_command(bin() + " make-model -o " + path +
                             " --n-embd 128 --n-layer 2 --n-ff 256 --n-head 4 --n-head-kv 2 --n-vocab 1024"
                             " --type " + type + " --seed 5");
  REQUIRE(r.exit_code == 0);
  return path;
}

// stdout only: stderr carries the speed line.
std::string generate(const std::string& model, const std::string& flags) {
  const auto r = run_command(std::string("(").append(bin()) + " generate -m " + model + " -p 'The hacker' -t 2 " + flags + " 2>/dev/null)");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

}  // namespace

TEST_CASE("generate streams a continuation and reproduces with a seed", "[integration][generate]") {
  const auto model = make_tiny_model("cli_generate");
  const auto greedy = generate(model, "-n 20 --temp 0 --ignore-eos");
  CHECK(greedy.rfind("The hacker", 0) == 0);
  CHECK(greedy.size() > std::string("The hacker\n").size());
  CHECK(greedy == generate(model, "-n 20 --temp 0 --ignore-eos"));

  const auto seeded = generate(model, "-n 20 --temp 1 --seed 7 --ignore-eos");
  CHECK(seeded == generate(model, "-n 20 --temp 1 --seed 7 --ignore-eos"));
  CHECK(seeded != generate(model, "-n 20 --temp 1 --seed 8 --ignore-eos"));

  const auto r = run_command(bin() + " generate -m " + model + " -p 'x' -n 4 --temp 0 -t 1");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("decode: 4 tokens"));

  const auto bad = run_command(bin() + " generate -m " + model + " -p 'x' --top-p 0");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("top_p"));
}

TEST_CASE("bench reports pp and tg as mean and sd", "[integration][bench]") {
  const auto model = make_tiny_model("cli_bench");
  const auto r = run_command(std::string("(").append(bin()) + " bench -m " + model + " -p 32 -n 8 -r 3 -t 2 -o json 2>/dev/null)");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["test"] == "pp32");
  CHECK(j[1]["test"] == "tg8");
  for (const auto& s : j) {
    CHECK(s["samples_ts"].size() == 3);
    CHECK(s["avg_ts"].get<double>() > 0);
    CHECK(s["threads"] == 2);
  }
  const auto md = run_command(bin() + " bench -m " + model + " -p 16 -n 4 -r 1 -t 1");
  CHECK(md.exit_code == 0);
  CHECK_THAT(md.output, Catch::Contains("| tg4 |"));
}

TEST_CASE("bench --parallel adds a test of sequences decoding together", "[integration][bench]") {
  const auto model = make_tiny_model("cli_bench_parallel");
  const auto r = run_command(std::string("(").append(bin()) + " bench -m " + model +
                             " -p 0 -n 6 -r 2 -t 1 --parallel 3 -o json 2>/dev/null)");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["test"] == "tg6");
  CHECK(j[1]["test"] == "tg6x3");
  CHECK(j[1]["samples_ts"].size() == 2);
  CHECK(j[1]["avg_ts"].get<double>() > 0);
}

TEST_CASE("bench --repack picks the Q4_0 layout and refuses other values", "[integration][bench]") {
  const auto model = make_tiny_model("cli_bench_repack", "q4_0");
  const std::string run = bin() + " bench -m " + model + " -p 0 -n 2 -r 1 -t 1";
  const std::string repacked_line = "repacked into 16-row lane tiles";
  // auto: every variant but the portable one reads the tiles (this CPU's
  // is named in the table).
  const auto on = run_command(run + " --repack auto");
  INFO(on.output);
  REQUIRE(on.exit_code == 0);
  const bool portable = on.output.find("(portable") != std::string::npos;
  CHECK((on.output.find(repacked_line) != std::string::npos) == !portable);
  for (const char* off : {" --repack off", " --no-repack"}) {
    const auto r = run_command(run + off);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find(repacked_line) == std::string::npos);
  }
  const auto bad = run_command(run + " --repack on");  // not a value: auto repacks wherever it can
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("--repack"));
  const auto both = run_command(run + " --repack auto --no-repack");
  CHECK(both.exit_code != 0);
  CHECK_THAT(both.output, Catch::Contains("excludes"));
}

TEST_CASE("bench -d runs every test after a prefilled context, --probe-bandwidth adds the memory bandwidth",
          "[integration][bench]") {
  const auto model = make_tiny_model("cli_bench_depth");
  const auto r = run_command(std::string("(").append(bin()) + " bench -m " + model +
                             " -p 8 -n 4 -d 24 -r 2 -t 1 --parallel 2 --probe-bandwidth -o json 2>/dev/null)");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j.size() == 3);
  CHECK(j[0]["test"] == "pp8@d24");
  CHECK(j[1]["test"] == "tg4@d24");
  CHECK(j[2]["test"] == "tg4x2@d24");
  for (const auto& s : j) {
    CHECK(s["samples_ts"].size() == 2);
    CHECK(s["avg_ts"].get<double>() > 0);
    // A read of 512 MiB by one thread: far above 0.1 GB/s on any machine, far
    // below 10 TB/s.
    CHECK(s["probe_read_gbs"].get<double>() > 0.1);
    CHECK(s["probe_read_gbs"].get<double>() < 10000);
  }
  const auto md = run_command(bin() + " bench -m " + model + " -p 0 -n 2 -d 8 -r 1 -t 1 --probe-bandwidth");
  CHECK(md.exit_code == 0);
  CHECK_THAT(md.output, Catch::Contains("| tg2@d8 |"));
  CHECK_THAT(md.output, Catch::Contains("memory bandwidth of cpu"));
}

TEST_CASE("bench generate and inspect take fused and ungated FFNs and experts", "[integration][bench]") {
  struct Case {
    const char* flags;
    const char* inspect_line;  // what inspect says of the FFN
  };
  const Case cases[] = {{"--arch phi3", "ffn form:      swiglu"},
                        {"--arch falcon", "ffn form:      gelu"},
                        {"--arch arcee", "ffn form:      relu2"},
                        {"--arch qwen3moe --experts 8 --experts-used 2", "n_ff 128 per expert, 8 experts (2 per token)"}};
  for (const Case& c : cases) {
    INFO(c.flags);
    const auto path = (tc::test::scratch_dir("cli_layouts") / "m.gguf").string();
    REQUIRE(run_command(bin() + " make-model -o " + path + " " + c.flags +
                        " --n-embd 128 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --type q8_0")
                .exit_code == 0);
    const auto r = run_command(std::string("(").append(bin()) + " bench -m " + path + " -p 8 -n 2 -r 1 -t 2 -o json 2>/dev/null)");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.output);
    REQUIRE(j.size() == 2);
    CHECK(j[1]["type"] == "q8_0");
    CHECK(j[1]["avg_ts"].get<double>() > 0);
    CHECK(generate(path, "-n 4 --temp 0 --ignore-eos").rfind("The hacker", 0) == 0);
    const auto inspect = run_command(bin() + " inspect " + path);
    CHECK(inspect.exit_code == 0);
    CHECK_THAT(inspect.output, Catch::Contains(c.inspect_line));
  }
}
