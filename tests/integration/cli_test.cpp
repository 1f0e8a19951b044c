// The real binary: make-model, inspect (table, JSON, errors), generate with
// a JSON Schema, exit codes.
#include <catch2/catch.hpp>

#include <regex>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_generate.h"
#include "tests/test_util.h"

using tc::test::run_command;

namespace {

std::string bin() { return tc::test::thermocline_binary().string(); }

}  // namespace

TEST_CASE("make-model then inspect through the binary", "[integration][cli]") {
  const auto dir = tc::test::scratch_dir("cli_make_inspect");
  const auto model = (dir / "tiny.gguf").string();
  auto made = run_command(bin() + " make-model -o " + model +
                          " --n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --type q8_0"
                          " --ffn drelu --seed 3");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  CHECK_THAT(made.output, Catch::Contains("wrote"));

  auto table = run_command(bin() + " inspect " + model);
  INFO(table.output);
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.output, Catch::Contains("ffn form:      drelu"));
  CHECK_THAT(table.output, Catch::Contains("blk.1.ffn_down.weight"));

  auto js = run_command(bin() + " inspect --json " + model);
  REQUIRE(js.exit_code == 0);
  const auto j = nlohmann::json::parse(js.output);
  CHECK(j["model"]["n_layer"] == 2);
  CHECK(j["tensors"].size() == 3 + 2 * 9);
}

TEST_CASE("inspect names the file and the fault for bad files", "[integration][cli]") {
  const auto dir = tc::test::scratch_dir("cli_bad_files");
  SECTION("missing file") {
    auto r = run_command(bin() + " inspect " + (dir / "nope.gguf").string());
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("nope.gguf"));
  }
  SECTION("not a GGUF file") {
    tc::test::write_file(dir / "text.gguf", "this is not a model file at all, just text\n");
    auto r = run_command(bin() + " inspect " + (dir / "text.gguf").string());
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("text.gguf"));
    CHECK_THAT(r.output, Catch::Contains("magic"));
  }
  SECTION("truncated model") {
    const auto model = dir / "full.gguf";
    REQUIRE(run_command(bin() + " make-model -o " + model.string() +
                        " --n-embd 64 --n-layer 1 --n-ff 64 --n-head 4 --n-head-kv 4 --n-vocab 600 --type f16")
                .exit_code == 0);
    auto bytes = tc::test::read_file(model);
    tc::test::write_file(dir / "cut.gguf", bytes.substr(0, bytes.size() - 100));
    auto r = run_command(bin() + " inspect " + (dir / "cut.gguf").string());
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("cut.gguf"));
    CHECK_THAT(r.output, Catch::Contains("output.weight") || Catch::Contains("blk.0"));
  }
  SECTION("bad flags") {
    auto r = run_command(bin() + " make-model -o x.gguf --type q9_9");
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Catch::Contains("--type"));
  }
}

TEST_CASE("serve --print-config shows flags over env over file, and bad values name their key", "[integration][cli]") {
  const auto dir = tc::test::scratch_dir("print_config");
  const auto config = dir / "serve.toml";
  tc::test::write_file(config, "port = 9000\nparallel = 2\nqueue_size = 7\n");
  const std::string bin = tc::test::thermocline_binary().string();
  const auto r = run_command("THERMOCLINE_PARALLEL=3 THERMOCLINE_API_KEY=secret-key " + bin +
                             " serve --print-config --config " + config.string() + " --port 9100 -m " +
                             (dir / "m.gguf").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("port = 9100") != std::string::npos);       // flag over file
  CHECK(r.output.find("parallel = 3") != std::string::npos);      // env over file
  CHECK(r.output.find("queue_size = 7") != std::string::npos);    // file over default
  CHECK(r.output.find("host = \"127.0.0.1\"") != std::string::npos);  // default
  CHECK(r.output.find("secret-key") == std::string::npos);        // keys masked
  CHECK(r.output.find("***") != std::string::npos);

  const auto bad = run_command("THERMOCLINE_PORT=70000 " + bin + " serve --print-config");
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("port") != std::string::npos);
  CHECK(bad.output.find("THERMOCLINE_PORT") != std::string::npos);
  const auto unknown = run_command(bin + " serve --print-config --config " + config.string() + ".missing");
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.output.find(".missing") != std::string::npos);
}

TEST_CASE("generate --json-schema writes an instance of the schema, and a bad schema names the file and the keyword",
          "[integration][cli][schema]") {
  const auto dir = tc::test::scratch_dir("cli_json_schema");
  const auto model = (tc::test::source_dir() / "models" / "default.gguf").string();
  const auto schema = dir / "mood.json";
  tc::test::write_file(schema, R"({"type": "object", "properties": {"mood": {"enum": ["happy", "sad"]},
      "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 2}},
      "required": ["mood", "n", "tags"]})");
  const std::string prompt = "The answer:";
  const auto out = dir / "out.txt";  // stdout alone: the prompt, then the reply
  const auto r = run_command("{ " + bin() + " generate -m " + model + " -p '" + prompt +
                             "' -n 240 -s 3 --json-schema " + schema.string() + " > " + out.string() + "; }");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("stop: complete"));
  const std::string text = tc::test::read_file(out);
  INFO(text);
  REQUIRE(text.rfind(prompt, 0) == 0);
  const auto reply = nlohmann::ordered_json::parse(text.substr(prompt.size()));
  REQUIRE(reply.size() == 3);
  CHECK(reply.begin().key() == "mood");  // declared order
  CHECK((reply["mood"] == "happy" || reply["mood"] == "sad"));
  CHECK(reply["n"].is_number_integer());
  REQUIRE(reply["tags"].is_array());
  CHECK(reply["tags"].size() <= 2);

  const auto json_mode = run_command(bin() + " generate -m " + model + " -p '{' -n 8 -s 1 --json");
  INFO(json_mode.output);
  CHECK(json_mode.exit_code == 0);

  const auto bad = dir / "bad.json";
  tc::test::write_file(bad, R"({"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}})");
  const auto refused = run_command(bin() + " generate -m " + model + " -p x --json-schema " + bad.string());
  INFO(refused.output);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.output, Catch::Contains(bad.string() + ": 'format' \"email\" is not supported (date, time, date-time and uuid are) at /properties/mail"));
  tc::test::write_file(bad, "{not json");
  const auto not_json = run_command(bin() + " generate -m " + model + " -p x --json-schema " + bad.string());
  CHECK(not_json.exit_code != 0);
  CHECK_THAT(not_json.output, Catch::Contains(bad.string() + ": not JSON"));
  const auto both = run_command(bin() + " generate -m " + model + " -p x --json --json-schema " + schema.string());
  CHECK(both.exit_code != 0);
}

TEST_CASE("generate --dry-multiplier holds back a repetition of the prompt, and a bad DRY value names its field",
          "[integration][cli][dry]") {
  const auto model = (tc::test::source_dir() / "models" / "default.gguf").string();
  // The bundled model continues "God created" as the prompt's first sentence did.
  const std::string prompt =
      "In the beginning God created the heaven and the earth. And the earth was without form. In the beginning God "
      "created";
  const auto greedy = run_command(bin() + " generate -m " + model + " -p '" + prompt + "' -n 6 --temp 0");
  REQUIRE(greedy.exit_code == 0);
  INFO(greedy.output);
  REQUIRE(greedy.output.find(prompt + " the earth") != std::string::npos);
  const auto dry = run_command(bin() + " generate -m " + model + " -p '" + prompt +
                               "' -n 6 --temp 0 --dry-multiplier 5 --dry-sequence-breaker ';'");
  REQUIRE(dry.exit_code == 0);
  INFO(dry.output);
  CHECK(dry.output.find(prompt) != std::string::npos);
  CHECK(dry.output.find(prompt + " the earth") == std::string::npos);  // "God created the" repeats three tokens
  const auto bad = run_command(bin() + " generate -m " + model + " -p x --dry-base 0.5");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("dry_base must be >= 1"));
}

TEST_CASE("generate --samplers and --sampling-seq: a stage left out is off, and --grammar-file constrains the text",
          "[integration][cli][gbnf]") {
  const auto dir = tc::test::scratch_dir("cli_samplers");
  const auto model = (tc::test::source_dir() / "models" / "default.gguf").string();
  const std::string base = "-m " + model + " -p 'In the beginning' -n 12 ";
  const auto run = [&](const std::string& args) { return tc::test::generated(base + args); };
  const std::string greedy = run("--temp 0");
  // Top-k 1 at any temperature is greedy; left out of the list, it is off.
  CHECK(run("--temp 1.5 -s 3 --top-k 1 --samplers 'top_k;temperature'") == greedy);
  CHECK(run("--temp 1.5 -s 3 --top-k 1 --sampling-seq kt") == greedy);
  CHECK(run("--temp 1.5 -s 3 --top-k 1 --sampling-seq t") != greedy);

  const auto grammar = dir / "answer.gbnf";
  tc::test::write_file(grammar, "root ::= (\"yes\" | \"no\") \", \" [a-z ]{1,20} \".\"\n");
  const std::string text = run("--temp 0.9 -s 4 --grammar-file " + grammar.string());
  INFO(text);
  CHECK(std::regex_search(text, std::regex(R"(In the beginning(yes|no), [a-z ]{1,20}\.)")));
  tc::test::write_file(grammar, "root ::= x\nx ::= x \"a\"\n");
  const auto refused = run_command(bin() + " generate " + base + "--grammar-file " + grammar.string());
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.output, Catch::Contains(grammar.string() + ": grammar: rule 'x' is left-recursive"));
}
