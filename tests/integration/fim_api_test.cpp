// Fill in the middle over HTTP, on a generated model whose learned
// vocabulary ends with Qwen's FIM tokens (make-model --fim; Qwen2's whole
// vocabulary would be mostly unused tokens, which greedy decoding of random
// weights picks and which render as no text): /v1/completions
// with `suffix` generates exactly what the same FIM prompt written out as
// text does (greedy, same prompt tokens), streamed or not; a prefix and
// suffix longer than the context are cut to fit; a model without FIM tokens,
// `echo` and token-id prompts with a suffix are 400s naming the field.
// llama.cpp's /infill (its editor plugins' route) builds llama.cpp's
// repo-level prompt from input_prefix, input_suffix, input_extra and prompt,
// and answers in llama.cpp's native format, streamed (no [DONE]) or not.
// Ollama's `suffix` (the ollama npm client) is in ollama_sdk_test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

const char* kShape = "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2";
const std::string kPrefix = "def add(a, b):\n    return";
const std::string kSuffix = "\n\nprint(add(1, 2))\n";

json greedy(json body, int max_tokens = 12) {
  body["max_tokens"] = max_tokens;
  body["temperature"] = 0;
  return body;
}

// /tokenize's ids for `text`.
json tokenize(httplib::Client& client, const std::string& text, bool add_special, bool parse_special) {
  const auto t = tc::test::post_json(
      client, "/tokenize", {{"content", text}, {"add_special", add_special}, {"parse_special", parse_special}});
  REQUIRE(t.status == 200);
  return t.body["tokens"];
}

std::string sse_text(const tc::test::SseResponse& r) {
  std::string text;
  for (const auto& e : r.events) {
    if (e.contains("choices") && !e["choices"].empty()) text += e["choices"][0].value("text", "");
  }
  return text;
}

}  // namespace

TEST_CASE("completions with a suffix fill in the middle between prompt and suffix", "[integration][fim]") {
  const auto dir = tc::test::scratch_dir("fim_api");
  const auto coder = tc::test::make_test_model(dir, "coder", std::string(kShape) + " --n-vocab 1024 --fim --seed 3");
  tc::test::ServerProcess server(coder, {"--ctx-size", "256", "--threads", "2"}, dir);
  auto client = server.client();

  const auto fim = tc::test::post_json(client, "/v1/completions", greedy({{"prompt", kPrefix}, {"suffix", kSuffix}}));
  REQUIRE(fim.status == 200);
  const auto written = tc::test::post_json(
      client, "/v1/completions",
      greedy({{"prompt", "<|fim_prefix|>" + kPrefix + "<|fim_suffix|>" + kSuffix + "<|fim_middle|>"}}));
  REQUIRE(written.status == 200);
  INFO("fim: " << fim.raw << "\nwritten out: " << written.raw);
  CHECK(fim.body["usage"]["prompt_tokens"] == written.body["usage"]["prompt_tokens"]);
  CHECK(fim.body["choices"][0]["text"] == written.body["choices"][0]["text"]);
  CHECK_FALSE(fim.body["choices"][0]["text"].get<std::string>().empty());  // a comparison of real text
  CHECK(fim.body["choices"][0]["finish_reason"] == written.body["choices"][0]["finish_reason"]);
  // Without the suffix the prompt is another one.
  const auto plain = tc::test::post_json(client, "/v1/completions", greedy({{"prompt", kPrefix}}));
  REQUIRE(plain.status == 200);
  CHECK(plain.body["usage"]["prompt_tokens"].get<int>() < fim.body["usage"]["prompt_tokens"].get<int>());

  SECTION("streamed: the same text") {
    json body = greedy({{"prompt", kPrefix}, {"suffix", kSuffix}});
    body["stream"] = true;
    const auto s = tc::test::post_stream(client, "/v1/completions", body);
    REQUIRE(s.status == 200);
    CHECK(sse_text(s) == fim.body["choices"][0]["text"].get<std::string>());
  }

  SECTION("code longer than the context is cut to fit; typing at the cursor reuses the cache") {
    std::string long_prefix;
    std::string long_suffix;
    for (int i = 0; i < 200; ++i) {
      const std::string n = std::to_string(i);
      long_prefix.append("x").append(n).append(" = ").append(n).append("\n");
    }
    for (int i = 0; i < 100; ++i) long_suffix.append("print(x").append(std::to_string(i)).append(")\n");
    const json prefix_ids = tokenize(client, long_prefix + kPrefix, false, false);
    const json suffix_ids = tokenize(client, long_suffix, false, false);
    REQUIRE(prefix_ids.size() + suffix_ids.size() > 256);
    const auto r = tc::test::post_json(client, "/v1/completions",
                                       greedy({{"prompt", long_prefix + kPrefix}, {"suffix", long_suffix}}, 16));
    REQUIRE(r.status == 200);
    CHECK(r.body["usage"]["prompt_tokens"].get<int>() == 256 - 16);  // the room, filled
    // One more word typed at the cursor: the cut stays put, and the engine
    // takes the prompt up to the cursor from its cache (at least the prefix's
    // three quarters of the room, less a step).
    const auto typed = tc::test::post_json(
        client, "/v1/completions", greedy({{"prompt", long_prefix + kPrefix + " a"}, {"suffix", long_suffix}}, 16));
    REQUIRE(typed.status == 200);
    INFO("first: " << r.raw << "\ntyped: " << typed.raw);
    CHECK(typed.body["usage"]["prompt_tokens"].get<int>() == 256 - 16);
    CHECK(typed.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() >= 120);
  }

  SECTION("llama.cpp's /infill: its repo-level prompt, its answer, streamed or not") {
    // This vocabulary has no repo and file-separator tokens: the file comes
    // after a snippet line, before BOS (as llama.cpp lays it out).
    const std::string file = "def sub(a, b):\n    return a - b\n";
    json ids = json::array();
    const auto append = [&](const json& more) {
      for (const auto& id : more) ids.push_back(id);
    };
    append(tokenize(client, "\n\n--- snippet ---\n\n", false, false));
    append(tokenize(client, file, false, false));
    append(tokenize(client, "<|fim_prefix|>" + kPrefix, true, true));  // BOS, <PRE>, the prefix
    append(tokenize(client, " a +", false, true));
    append(tokenize(client, "<|fim_suffix|>" + kSuffix + "<|fim_middle|>", false, true));
    const auto want = tc::test::post_json(client, "/v1/completions", greedy({{"prompt", ids}}));
    REQUIRE(want.status == 200);

    const json body = {{"input_prefix", kPrefix}, {"input_suffix", kSuffix}, {"prompt", " a +"},
                       {"input_extra", json::array({{{"filename", "util.py"}, {"text", file}}})},
                       {"n_predict", 12}, {"temperature", 0}, {"cache_prompt", true}};
    const auto r = tc::test::post_json(client, "/infill", body);
    REQUIRE(r.status == 200);
    INFO("infill: " << r.raw << "\ncompletion: " << want.raw);
    CHECK(r.body["content"] == want.body["choices"][0]["text"]);
    CHECK_FALSE(r.body["content"].get<std::string>().empty());
    CHECK(r.body["stop"] == true);
    CHECK(r.body["tokens_evaluated"] == want.body["usage"]["prompt_tokens"]);
    CHECK(r.body["tokens_predicted"] == want.body["usage"]["completion_tokens"]);
    CHECK(r.body["stop_type"] == (want.body["choices"][0]["finish_reason"] == "length" ? "limit" : "eos"));
    CHECK(r.body["truncated"] == false);
    CHECK(r.body["generation_settings"]["n_ctx"] == 256);
    CHECK(r.body["timings"]["predicted_n"] == r.body["tokens_predicted"]);
    CHECK(r.body["timings"]["predicted_ms"].get<double>() >= 0);

    json streamed = body;
    streamed["stream"] = true;
    const auto s = tc::test::post_stream(client, "/infill", streamed);
    REQUIRE(s.status == 200);
    REQUIRE(s.events.size() >= 2);
    std::string text;
    for (size_t i = 0; i < s.events.size(); ++i) {
      CHECK(s.events[i]["stop"] == (i + 1 == s.events.size()));
      text += s.events[i]["content"].get<std::string>();
    }
    CHECK(text == r.body["content"].get<std::string>());
    CHECK(s.events.back()["tokens_predicted"] == r.body["tokens_predicted"]);
    CHECK(std::find(s.data.begin(), s.data.end(), "[DONE]") == s.data.end());  // llama.cpp's streams have none

    const auto missing = tc::test::post_json(client, "/infill", {{"input_prefix", kPrefix}});
    CHECK(missing.status == 400);
    CHECK(missing.body["error"]["param"] == "input_suffix");
    const auto bad_extra =
        tc::test::post_json(client, "/infill", {{"input_prefix", kPrefix}, {"input_suffix", ""}, {"input_extra", "x"}});
    CHECK(bad_extra.status == 400);
    CHECK(bad_extra.body["error"]["param"] == "input_extra");
  }

  SECTION("a suffix with echo or with token ids is a 400 naming the field") {
    const auto echo = tc::test::post_json(client, "/v1/completions",
                                          greedy({{"prompt", kPrefix}, {"suffix", kSuffix}, {"echo", true}}));
    CHECK(echo.status == 400);
    CHECK(echo.body["error"]["param"] == "echo");
    const auto ids = tc::test::post_json(client, "/v1/completions",
                                         greedy({{"prompt", json::array({1, 2, 3})}, {"suffix", kSuffix}}));
    CHECK(ids.status == 400);
    CHECK(ids.body["error"]["param"] == "prompt");
  }
  CHECK(server.stop() == 0);
}

TEST_CASE("a suffix for a model without FIM tokens is a 400 that says so", "[integration][fim]") {
  const auto dir = tc::test::scratch_dir("fim_api_none");
  const auto model = tc::test::make_test_model(dir, "plain", std::string(kShape) + " --n-vocab 1024 --seed 3");
  tc::test::ServerProcess server(model, {"--ctx-size", "128"}, dir);
  auto client = server.client();
  const auto r = tc::test::post_json(client, "/v1/completions", greedy({{"prompt", kPrefix}, {"suffix", kSuffix}}));
  CHECK(r.status == 400);
  CHECK(r.body["error"]["type"] == "invalid_request_error");
  CHECK(r.body["error"]["param"] == "suffix");
  CHECK_THAT(r.body["error"]["message"].get<std::string>(),
             Catch::Contains("cannot fill in the middle") && Catch::Contains("prefix and suffix and middle"));
  // llama.cpp answers /infill on such a model with a 501.
  const auto infill = tc::test::post_json(client, "/infill", {{"input_prefix", kPrefix}, {"input_suffix", kSuffix}});
  CHECK(infill.status == 501);
  CHECK(infill.body["error"]["type"] == "not_supported_error");
  CHECK_THAT(infill.body["error"]["message"].get<std::string>(), Catch::Contains("cannot fill in the middle"));
  // An empty suffix is no suffix.
  CHECK(tc::test::post_json(client, "/v1/completions", greedy({{"prompt", kPrefix}, {"suffix", ""}})).status == 200);
  CHECK(server.stop() == 0);
}
