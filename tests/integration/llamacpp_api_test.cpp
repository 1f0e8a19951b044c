// llama.cpp's /completion over HTTP, as SillyTavern's llama.cpp mode and
// scripts written for llama-server call it: greedy text equal to
// /v1/completions' for the same prompt (text or token ids), streamed as
// llama.cpp streams (pieces, a last object with stop true, no [DONE]),
// completion_probabilities whose bytes spell the text, XTC taking the
// second choice where both top choices pass its threshold, DRY holding back
// a token that would repeat the prompt, json_schema
// enforced and SillyTavern's whole sampler body accepted. /infill is in
// fim_api_test.cpp; GBNF grammars in grammar_api_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

TEST_CASE("llama.cpp's /completion: its fields and its answers", "[integration][llamacpp]") {
  const auto dir = tc::test::scratch_dir("llamacpp_api");
  const auto model = tc::test::make_test_model(
      dir, "m", "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 6");
  tc::test::ServerProcess server(model, {"--ctx-size", "256", "--threads", "2"}, dir);
  auto client = server.client();
  const std::string prompt = "Once upon a time";

  const auto v1 = tc::test::post_json(client, "/v1/completions",
                                      {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}});
  REQUIRE(v1.status == 200);
  const std::string want = v1.body["choices"][0]["text"];
  REQUIRE_FALSE(want.empty());

  const auto r =
      tc::test::post_json(client, "/completion", {{"prompt", prompt}, {"n_predict", 12}, {"temperature", 0}});
  REQUIRE(r.status == 200);
  INFO(r.raw);
  CHECK(r.body["content"] == want);
  CHECK(r.body["stop"] == true);
  CHECK(r.body["tokens_evaluated"] == v1.body["usage"]["prompt_tokens"]);
  CHECK(r.body["tokens_predicted"] == v1.body["usage"]["completion_tokens"]);
  CHECK(r.body["stop_type"] == (v1.body["choices"][0]["finish_reason"] == "length" ? "limit" : "eos"));
  CHECK(r.body["model"] == "m");
  CHECK(r.body["timings"]["predicted_n"] == r.body["tokens_predicted"]);
  CHECK_FALSE(r.body.contains("completion_probabilities"));

  SECTION("a stop string: stop_type word, and which string") {
    // The reply's first two characters as the stop string: the reply is cut
    // before them, whatever the random model wrote.
    const std::string stop = want.substr(0, 2);
    REQUIRE(static_cast<unsigned char>(stop[0]) < 0x80);
    REQUIRE(static_cast<unsigned char>(stop[1]) < 0x80);
    const auto s = tc::test::post_json(client, "/completion", {{"prompt", prompt}, {"n_predict", 12}, {"temperature", 0},
                                                               {"stop", json::array({"never here", stop})}});
    REQUIRE(s.status == 200);
    INFO(s.raw);
    CHECK(s.body["stop_type"] == "word");
    CHECK(s.body["stopping_word"] == stop);
    CHECK(s.body["content"] == "");
    CHECK(r.body["stop_type"] != "word");  // without the stop string
  }

  SECTION("token ids as the prompt") {
    const auto ids = tc::test::post_json(client, "/tokenize", {{"content", prompt}, {"add_special", true}});
    REQUIRE(ids.status == 200);
    const auto by_ids = tc::test::post_json(client, "/completion",
                                            {{"prompt", ids.body["tokens"]}, {"n_predict", 12}, {"temperature", 0}});
    REQUIRE(by_ids.status == 200);
    CHECK(by_ids.body["content"] == want);
  }

  SECTION("streamed: pieces, then the last object, and no [DONE]") {
    const auto s = tc::test::post_stream(client, "/completion",
                                         {{"prompt", prompt}, {"n_predict", 12}, {"temperature", 0}, {"stream", true}});
    REQUIRE(s.status == 200);
    CHECK(s.content_type.find("text/event-stream") != std::string::npos);
    REQUIRE(s.events.size() >= 2);
    std::string text;
    for (size_t i = 0; i < s.events.size(); ++i) {
      CHECK(s.events[i]["stop"] == (i + 1 == s.events.size()));
      text += s.events[i]["content"].get<std::string>();
    }
    CHECK(text == want);
    CHECK(std::find(s.data.begin(), s.data.end(), "[DONE]") == s.data.end());
  }

  SECTION("n_probs: completion_probabilities whose bytes spell the text") {
    const auto p = tc::test::post_json(client, "/completion",
                                       {{"prompt", prompt}, {"n_predict", 12}, {"temperature", 0}, {"n_probs", 3}});
    REQUIRE(p.status == 200);
    const json& probs = p.body["completion_probabilities"];
    REQUIRE(probs.size() == p.body["tokens_predicted"].get<size_t>());
    std::string spelled;
    for (const auto& t : probs) {
      for (const auto& b : t["bytes"]) spelled += static_cast<char>(b.get<int>());
      CHECK(t["id"].is_number_integer());
      CHECK(t["logprob"].get<double>() <= 0);
      REQUIRE(t["top_logprobs"].size() == 3);
      // Greedy: the chosen token is the most likely one.
      CHECK(t["top_logprobs"][0]["logprob"].get<double>() == Approx(t["logprob"].get<double>()));
    }
    // The bytes raw; the text as JSON carries it (invalid UTF-8 replaced).
    const std::string carried =
        json::parse(json(spelled).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
    CHECK(carried == want);
  }

  SECTION("XTC: of the two most likely tokens, both above the threshold, the second is taken") {
    const auto x = tc::test::post_json(client, "/completion",
                                       {{"prompt", prompt}, {"n_predict", 12}, {"temperature", 1}, {"top_k", 2},
                                        {"xtc_probability", 1}, {"xtc_threshold", 0.05}, {"n_probs", 2}, {"seed", 3}});
    REQUIRE(x.status == 200);
    int checked = 0;
    for (const auto& t : x.body["completion_probabilities"]) {
      const auto& top = t["top_logprobs"];
      REQUIRE(top.size() == 2);
      const double p1 = std::exp(top[0]["logprob"].get<double>()), p2 = std::exp(top[1]["logprob"].get<double>());
      if (p2 / (p1 + p2) < 0.05) continue;
      CHECK(t["bytes"] == top[1]["bytes"]);
      ++checked;
    }
    CHECK(checked > 0);
  }

  SECTION("DRY: a token that would repeat a sequence of the prompt is held back") {
    // Token ids as the prompt: "... 100 101" after "100 101 102": 102 would
    // repeat it. A bias makes 102 the greedy choice; DRY's penalty outweighs it.
    const auto bos = tc::test::post_json(client, "/tokenize", {{"content", ""}, {"add_special", true}});
    REQUIRE(bos.status == 200);
    json ids = bos.body["tokens"];
    for (int id : {100, 101, 102, 103, 104, 100, 101}) ids.push_back(id);
    json body = {{"prompt", ids}, {"n_predict", 1}, {"temperature", 0}, {"logit_bias", {{"102", 20}}},
                 {"dry_sequence_breakers", json::array()}, {"n_probs", 1}};
    const auto plain = tc::test::post_json(client, "/completion", body);
    REQUIRE(plain.status == 200);
    CHECK(plain.body["completion_probabilities"][0]["id"] == 102);
    body["dry_multiplier"] = 100;
    const auto dry = tc::test::post_json(client, "/completion", body);
    REQUIRE(dry.status == 200);
    CHECK(dry.body["completion_probabilities"][0]["id"] != 102);
  }

  SECTION("json_schema is enforced") {
    const json schema = {{"type", "object"},
                         {"properties", {{"name", {{"type", "string"}, {"maxLength", 5}}}}},
                         {"required", json::array({"name"})}};
    const auto j = tc::test::post_json(
        client, "/completion", {{"prompt", prompt}, {"n_predict", 40}, {"temperature", 0}, {"json_schema", schema}});
    REQUIRE(j.status == 200);
    const std::string content = j.body["content"];
    INFO(content);
    CHECK(content.rfind("{", 0) == 0);
    if (j.body["stop_type"] == "eos") CHECK(json::parse(content).contains("name"));
  }

  SECTION("SillyTavern's body: the samplers it sends are accepted") {
    const json st = {{"prompt", prompt},  {"n_predict", 8},         {"temperature", 0},
                     {"top_k", 40},       {"top_p", 0.95},          {"min_p", 0.05},
                     {"typical_p", 1},    {"repeat_penalty", 1.1},  {"repeat_last_n", 64},
                     {"presence_penalty", 0}, {"frequency_penalty", 0}, {"mirostat", 0},
                     {"mirostat_tau", 5}, {"mirostat_eta", 0.1},    {"dry_multiplier", 0},
                     {"dry_base", 1.75},  {"dry_allowed_length", 2}, {"xtc_probability", 0},
                     {"xtc_threshold", 0.1}, {"grammar", ""},       {"n_probs", 0},
                     {"cache_prompt", true}, {"stop", json::array({"\nUser:"})}, {"seed", 1},
                     {"samplers", json::array({"top_k", "top_p", "min_p", "temperature"})}};
    const auto s = tc::test::post_json(client, "/completion", st);
    CHECK(s.status == 200);
    CHECK(s.body["stop"] == true);
  }
  CHECK(server.stop() == 0);
}
