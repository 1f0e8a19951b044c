// The out-of-the-box path: `thermocline serve` with no --model serves the
// bundled trained model (models/default.gguf), from a build tree and from a
// `cmake --install` prefix laid out as in the Docker images, and its chat
// answers are English words in the style of its training text (the KJV).
#include <catch2/catch.hpp>

#include <httplib.h>

#include <algorithm>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

const std::filesystem::path kBundledModel = tc::test::source_dir() / "models/default.gguf";

// Distinct words of `text` (letters only, lower-cased) that are among the
// 100 commonest words of the model's training text (the KJV, counted by
// scripts/train/prepare_corpus.py's output; the fragment "s" left out). A
// random-weight model over the same vocabulary emits fragments and rarely
// hits more than one.
std::set<std::string> common_kjv_words(const std::string& text) {
  static const std::set<std::string> kCommon = {
      "the",   "and",   "of",     "to",       "that",   "in",       "he",     "shall",  "unto",   "for",
      "i",     "his",   "a",      "lord",     "they",   "be",       "is",     "him",    "not",    "them",
      "it",    "with",  "all",    "thou",     "thy",    "god",      "was",    "my",     "which",  "me",
      "said",  "but",   "ye",     "their",    "have",   "will",     "thee",   "from",   "as",     "are",
      "when",  "out",   "this",   "were",     "man",    "upon",     "you",    "by",     "israel", "king",
      "up",    "son",   "there",  "hath",     "then",   "people",   "came",   "house",  "had",    "into",
      "her",   "on",    "come",   "one",      "we",     "children", "before", "your",   "also",   "day",
      "land",  "an",    "so",     "against",  "men",    "if",       "shalt",  "at",     "let",    "go",
      "hand",  "us",    "saying", "went",     "made",   "no",       "even",   "do",     "now",    "behold",
      "saith", "every", "these",  "therefore", "because", "after",  "our",    "things", "father"};
  std::set<std::string> found;
  std::string word;
  for (char c : text + " ") {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      if (kCommon.count(word)) found.insert(word);
      word.clear();
    }
  }
  return found;
}

// Asks the running server for a greedy chat answer and checks it.
void check_chats_in_english(tc::test::ServerProcess& server) {
  auto client = server.client();
  auto models = client.Get("/v1/models");
  REQUIRE(models);
  CHECK(json::parse(models->body)["data"][0]["id"] == "default");

  const json request = {
      {"messages", {{{"role", "user"}, {"content", "In the beginning God created the heaven and the earth."}}}},
      {"max_tokens", 48},
      {"temperature", 0}};
  const auto reply = tc::test::post_json(client, "/v1/chat/completions", request);
  INFO(reply.raw);
  REQUIRE(reply.status == 200);
  const std::string content = reply.body["choices"][0]["message"]["content"];
  INFO("answer: " << content);
  CHECK(reply.body["usage"]["completion_tokens"].get<int>() > 4);
  CHECK(common_kjv_words(content).size() >= 4);
}

}  // namespace

TEST_CASE("the English-word check tells text from noise", "[integration][default_model]") {
  CHECK(common_kjv_words("And the LORD said unto Moses, Go in unto Pharaoh.").size() >= 4);
  CHECK(common_kjv_words("ffacrim zoth, uplon ewardest quibb a").size() < 4);
}

TEST_CASE("serve with no --model serves the bundled model and chats in English", "[integration][default_model]") {
  REQUIRE(std::filesystem::is_regular_file(kBundledModel));
  const auto dir = tc::test::scratch_dir("default_model");
  // Started outside the source tree, so the working-directory fallback
  // (models/default.gguf) cannot be what finds it.
  tc::test::ServerProcess server({.binary = {}, .working_dir = dir, .env = {}}, {}, {}, dir);
  CHECK(server.log().find("loading " + kBundledModel.string()) != std::string::npos);
  check_chats_in_english(server);
  CHECK(server.stop() == 0);
}

TEST_CASE("an installed thermocline finds the bundled model under its prefix", "[integration][default_model]") {
  REQUIRE(std::filesystem::is_regular_file(kBundledModel));
  const auto dir = tc::test::scratch_dir("install_layout");
  const auto prefix = dir / "usr/local";
  const auto build_dir = tc::test::thermocline_binary().parent_path().parent_path();
  // The Dockerfiles' build stage runs scripts/install.sh (with the build).
  const auto install = tc::test::run_command(
      "THERMOCLINE_BUILD_DIR=" + tc::test::shell_quote(build_dir.string()) + " " +
      tc::test::shell_quote((tc::test::source_dir() / "scripts/install.sh").string()) + " --skip-build --prefix " +
      tc::test::shell_quote(prefix.string()));
  INFO(install.output);
  REQUIRE(install.exit_code == 0);
  const auto installed_model = prefix / "share/thermocline/models/default.gguf";
  REQUIRE(std::filesystem::is_regular_file(installed_model));
  CHECK(std::filesystem::is_regular_file(prefix / "share/thermocline/models/default.md"));
  CHECK(std::filesystem::is_regular_file(prefix / "share/thermocline/thermocline.example.toml"));
  CHECK(tc::test::read_file(prefix / "share/thermocline/runtime-packages.txt").find("libcpp-httplib") !=
        std::string::npos);
  // A CUDA build's plugin lands in lib/thermocline/, where the installed
  // binary finds it with THERMOCLINE_CUDA_PLUGIN unset (bin/../lib/thermocline).
  const auto plugin = prefix / "lib/thermocline/libthermocline_cuda.so";
  CHECK(std::filesystem::is_regular_file(plugin) == !tc::test::built_cuda_plugin().empty());
  if (std::filesystem::is_regular_file(plugin)) {
    const auto cuda = tc::test::run_command("env -u THERMOCLINE_CUDA_PLUGIN " +
                                            tc::test::shell_quote((prefix / "bin/thermocline").string()) +
                                            " generate -p hi -n 1 -t 1 --device cuda");
    INFO(cuda.output);
    CHECK_THAT(cuda.output, !Catch::Contains("no CUDA plugin found") && !Catch::Contains("could not be loaded"));
  }

  // As the container runs it: the host from THERMOCLINE_HOST, no --model.
  tc::test::ServerProcess server(
      {.binary = prefix / "bin/thermocline", .working_dir = "/", .env = {"THERMOCLINE_HOST=0.0.0.0"}}, {}, {}, dir);
  CHECK(server.log().find("loading " + installed_model.string()) != std::string::npos);
  check_chats_in_english(server);
  CHECK(server.stop() == 0);
}
