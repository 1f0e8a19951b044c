// llama.cpp's /completion and /infill bodies translated (llamacpp_schema.h):
// names mapped onto /v1/completions', llama.cpp's defaults where the body
// says nothing, SillyTavern's body of samplers this server lacks accepted,
// and what cannot be honoured a 400 naming the field.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/llamacpp_schema.h"

using namespace tc::server;
using nlohmann::json;

namespace {

std::string error_param(const LlamaCppRequest& r) { return r.error ? r.error->param : "ok"; }

}  // namespace

TEST_CASE("/completion bodies map onto /v1/completions'", "[server][llamacpp]") {
  auto r = translate_llamacpp_completion({{"prompt", "Hello"}});
  REQUIRE_FALSE(r.error);
  CHECK(r.openai["prompt"] == "Hello");
  CHECK(r.openai["temperature"] == 0.8);  // llama.cpp's defaults
  CHECK(r.openai["top_k"] == 40);
  CHECK(r.openai["min_p"] == 0.05);
  CHECK_FALSE(r.openai.contains("max_tokens"));  // n_predict -1: up to the context
  CHECK(r.n_predict == -1);
  CHECK_FALSE(r.stream);

  r = translate_llamacpp_completion({{"prompt", json::array({1, 2, 3})},
                                     {"n_predict", 16},
                                     {"temperature", 0},
                                     {"stream", true},
                                     {"model", "m"},
                                     {"n_probs", 3},
                                     {"repeat_last_n", 128},
                                     {"logit_bias", json::array({json::array({15, 1.5}), json::array({16, false})})},
                                     {"json_schema", {{"type", "object"}}},
                                     {"grammar", ""},
                                     // SillyTavern's samplers and their order, taken; its cache field ignored.
                                     {"typical_p", 1},
                                     {"mirostat", 0},
                                     {"dry_multiplier", 0.8},
                                     {"dry_sequence_breakers", json::array({"\n"})},
                                     {"xtc_probability", 0.5},
                                     {"xtc_threshold", 0.2},
                                     {"cache_prompt", true},
                                     {"samplers", json::array({"top_k", "min_p"})}});
  REQUIRE_FALSE(r.error);
  CHECK(r.openai["prompt"] == json::array({1, 2, 3}));
  CHECK(r.openai["max_tokens"] == 16);
  CHECK(r.n_predict == 16);
  CHECK(r.openai["temperature"] == 0);
  CHECK(r.stream);
  CHECK(r.model == "m");
  CHECK(r.openai["logprobs"] == 3);
  CHECK(r.repeat_last_n == 128);
  CHECK(r.openai["logit_bias"] == json({{"15", 1.5}, {"16", -100}}));
  CHECK(r.openai["response_format"]["type"] == "json_schema");
  CHECK(r.openai["response_format"]["json_schema"]["schema"] == json({{"type", "object"}}));
  CHECK(r.openai["typical_p"] == 1);
  CHECK(r.openai["mirostat"] == 0);
  CHECK(r.openai["samplers"] == json::array({"top_k", "min_p"}));
  CHECK(r.openai["xtc_probability"] == 0.5);
  CHECK(r.openai["xtc_threshold"] == 0.2);
  CHECK(r.openai["dry_multiplier"] == 0.8);
  CHECK(r.openai["dry_sequence_breakers"] == json::array({"\n"}));

  // A one-string array is one prompt.
  CHECK(translate_llamacpp_completion({{"prompt", json::array({"Hi"})}}).openai["prompt"] == "Hi");

  // A GBNF grammar passes through, and wins over json_schema as in llama-server.
  r = translate_llamacpp_completion(
      {{"prompt", "x"}, {"grammar", "root ::= \"a\""}, {"json_schema", {{"type", "object"}}}});
  REQUIRE_FALSE(r.error);
  CHECK(r.openai["grammar"] == "root ::= \"a\"");
  CHECK_FALSE(r.openai.contains("response_format"));
}

TEST_CASE("/completion bodies that cannot be honoured are 400s naming the field", "[server][llamacpp]") {
  CHECK(error_param(translate_llamacpp_completion(json::object())) == "prompt");
  CHECK(error_param(translate_llamacpp_completion({{"prompt", json::array({"a", "b"})}})) == "prompt");
  CHECK(error_param(translate_llamacpp_completion({{"prompt", 3}})) == "prompt");
  CHECK(error_param(translate_llamacpp_completion({{"prompt", "x"}, {"grammar", 3}})) == "grammar");
  CHECK(error_param(translate_llamacpp_completion({{"prompt", "x"}, {"n_predict", -2}})) == "n_predict");
  CHECK(error_param(translate_llamacpp_completion({{"prompt", "x"}, {"n_probs", "3"}})) == "n_probs");
  CHECK(error_param(translate_llamacpp_completion({{"prompt", "x"}, {"logit_bias", json::array({1})}})) ==
        "logit_bias");
  CHECK(error_param(translate_llamacpp_completion(
            {{"prompt", "x"}, {"logit_bias", json::array({json::array({"hello", 1})})}})) == "logit_bias");
  CHECK(error_param(translate_llamacpp_completion({{"prompt", "x"}, {"json_schema", "object"}})) == "json_schema");
  CHECK(error_param(translate_llamacpp_completion(json::array())) == "");
}

TEST_CASE("/infill bodies: the code around the cursor and the completion's fields", "[server][llamacpp][fim]") {
  auto r = translate_llamacpp_infill({{"input_prefix", "def f("},
                                      {"input_suffix", ")\n"},
                                      {"prompt", "a"},
                                      {"input_extra", json::array({{{"filename", "u.py"}, {"text", "x = 1"}},
                                                                   {{"text", "y = 2"}}})},
                                      {"n_predict", 8}});
  REQUIRE_FALSE(r.error);
  CHECK(r.fim.prefix == "def f(");
  CHECK(r.fim.suffix == ")\n");
  CHECK(r.fim.middle_start == "a");
  CHECK(r.fim.repo_level);
  REQUIRE(r.fim.extra.size() == 2);
  CHECK(r.fim.extra[0].filename == "u.py");
  CHECK(r.fim.extra[1].filename == "tmp");
  CHECK(r.openai["prompt"] == "");
  CHECK(r.openai["max_tokens"] == 8);

  CHECK(error_param(translate_llamacpp_infill({{"input_prefix", "x"}})) == "input_suffix");
  CHECK(error_param(translate_llamacpp_infill({{"input_prefix", 1}, {"input_suffix", ""}})) == "input_prefix");
  CHECK(error_param(translate_llamacpp_infill({{"input_prefix", ""}, {"input_suffix", ""}, {"input_extra", "x"}})) ==
        "input_extra");
  CHECK(error_param(translate_llamacpp_infill(
            {{"input_prefix", ""}, {"input_suffix", ""}, {"input_extra", json::array({{{"text", 1}}})}})) ==
        "input_extra");
}
