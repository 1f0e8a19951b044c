// Ollama's /api/generate body translated (ollama_schema.h): `suffix` makes
// a fill-in-the-middle completion (no chat template; the prompt may be
// empty), and the sampler options Ollama documents, typical_p and mirostat
// included, reach the completion's fields.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/ollama_schema.h"

using namespace tc::server;
using nlohmann::json;

TEST_CASE("Ollama generate: suffix fills in the middle, options reach the sampler", "[server][ollama]") {
  auto r = translate_ollama_generate({{"model", "coder"}, {"prompt", "def f("}, {"suffix", ")\n"}, {"raw", true}});
  REQUIRE_FALSE(r.error);
  CHECK(r.completion);
  CHECK_FALSE(r.load_only);
  CHECK(r.openai["prompt"] == "def f(");
  CHECK(r.openai["suffix"] == ")\n");
  // The cursor at the start of the file: no prompt, still a completion.
  r = translate_ollama_generate({{"model", "coder"}, {"suffix", "return 1\n"}});
  REQUIRE_FALSE(r.error);
  CHECK(r.completion);
  CHECK(r.openai["prompt"] == "");
  // An empty suffix is none: a prompt through the chat template.
  r = translate_ollama_generate({{"model", "m"}, {"prompt", "Hi"}, {"suffix", ""}});
  REQUIRE_FALSE(r.error);
  CHECK_FALSE(r.completion);
  r = translate_ollama_generate({{"model", "m"}, {"prompt", "Hi"}, {"suffix", 3}});
  REQUIRE(r.error);
  CHECK(r.error->param == "suffix");

  r = translate_ollama_generate({{"model", "m"},
                                 {"prompt", "Hi"},
                                 {"options", {{"typical_p", 0.9}, {"mirostat", 2}, {"mirostat_tau", 4.0},
                                              {"mirostat_eta", 0.2}, {"min_p", 0.05}}}});
  REQUIRE_FALSE(r.error);
  CHECK(r.openai["typical_p"] == 0.9);
  CHECK(r.openai["mirostat"] == 2);
  CHECK(r.openai["mirostat_tau"] == 4.0);
  CHECK(r.openai["mirostat_eta"] == 0.2);
  CHECK(r.openai["min_p"] == 0.05);
}
