// llama.cpp's native objects for /completion and /infill
// (native_responses.h): the streamed piece, the last object's text, stop
// type (and the stop string), counts and timings, and
// completion_probabilities.
#include <catch2/catch.hpp>

#include "server/native_responses.h"

using namespace tc::server;
using tc::runtime::FinishReason;

namespace {

ChoiceResult reply(const std::string& text, FinishReason finish, const std::string& stop_word = "") {
  ChoiceResult r;
  r.text = text;
  r.finish = finish;
  r.stop_word = stop_word;
  return r;
}

}  // namespace

TEST_CASE("native objects: a piece, and the last one with counts and timings", "[server][llamacpp]") {
  const auto piece = native_chunk("x = 1");
  CHECK(piece["content"] == "x = 1");
  CHECK(piece["stop"] == false);

  NativeMeta meta{"coder", true, 4096, 64};
  tc::runtime::Usage usage;
  usage.prompt_tokens = 100;
  usage.cached_tokens = 60;
  usage.completion_tokens = 20;
  RequestRecord record;
  record.queue_seconds = 0.5;
  record.first_token_seconds = 0.2;  // 40 prompt tokens evaluated
  record.total_seconds = 1.7;        // 1.0 s for the 20 tokens
  const auto last = native_final(meta, reply("a\nb", FinishReason::Length), false, usage, record);
  CHECK(last["content"] == "a\nb");
  CHECK(last["stop"] == true);
  CHECK(last["model"] == "coder");
  CHECK(last["stop_type"] == "limit");
  CHECK(last["has_new_line"] == true);
  CHECK(last["truncated"] == true);
  CHECK(last["tokens_predicted"] == 20);
  CHECK(last["tokens_evaluated"] == 100);
  CHECK(last["tokens_cached"] == 120);
  CHECK(last["generation_settings"]["n_ctx"] == 4096);
  CHECK(last["generation_settings"]["n_predict"] == 64);
  const auto& t = last["timings"];
  CHECK(t["prompt_n"] == 40);
  CHECK(t["prompt_ms"].get<double>() == Approx(200));
  CHECK(t["prompt_per_token_ms"].get<double>() == Approx(5));
  CHECK(t["prompt_per_second"].get<double>() == Approx(200));
  CHECK(t["predicted_n"] == 20);
  CHECK(t["predicted_ms"].get<double>() == Approx(1000));
  CHECK(t["predicted_per_second"].get<double>() == Approx(20));

  // Streamed: the pieces carried the text; a stop is "eos"; no tokens, no rates.
  usage.completion_tokens = 0;
  const auto streamed = native_final(meta, reply("x", FinishReason::Stop), true, usage, RequestRecord{});
  CHECK(streamed["content"] == "");
  CHECK(streamed["stop_type"] == "eos");
  CHECK(streamed["stopping_word"] == "");
  // A stop string: "word", and which one.
  const auto word = native_final(meta, reply("x", FinishReason::Stop, "\nUser:"), false, usage, RequestRecord{});
  CHECK(word["stop_type"] == "word");
  CHECK(word["stopping_word"] == "\nUser:");
  CHECK(streamed["timings"]["predicted_per_token_ms"] == 0.0);
  CHECK(streamed["timings"]["predicted_per_second"] == 0.0);
}

TEST_CASE("native objects: completion_probabilities as llama.cpp writes them", "[server][llamacpp]") {
  tc::runtime::TokenInfo hello{42, " hello", -0.25f, {{" hello", -0.25f}, {" hi", -1.5f}}};
  tc::runtime::TokenInfo cut{7, "\xE6\x97", -2.0f, {}};  // the first two bytes of a three-byte character
  const auto probs = native_probabilities({hello, cut});
  REQUIRE(probs.size() == 2);
  CHECK(probs[0]["id"] == 42);
  CHECK(probs[0]["token"] == " hello");
  CHECK(probs[0]["bytes"] == nlohmann::json({32, 104, 101, 108, 108, 111}));
  CHECK(probs[0]["logprob"].get<double>() == Approx(-0.25));
  REQUIRE(probs[0]["top_logprobs"].size() == 2);
  CHECK(probs[0]["top_logprobs"][1]["token"] == " hi");
  CHECK(probs[0]["top_logprobs"][1]["logprob"].get<double>() == Approx(-1.5));
  CHECK(probs[1]["token"] == "");  // cut to whole characters, as llama.cpp's validate_utf8
  CHECK(probs[1]["bytes"] == nlohmann::json({0xE6, 0x97}));

  CHECK(native_chunk("x", {hello})["completion_probabilities"].size() == 1);
  CHECK_FALSE(native_chunk("x").contains("completion_probabilities"));
  NativeMeta meta;
  ChoiceResult with_tokens = reply(" hello", FinishReason::Stop);
  with_tokens.tokens = {hello};
  const auto whole = native_final(meta, with_tokens, false, {}, {}, true);
  CHECK(whole["completion_probabilities"].size() == 1);
  CHECK_FALSE(
      native_final(meta, with_tokens, true, {}, {}, true).contains("completion_probabilities"));
  CHECK_FALSE(native_final(meta, with_tokens, false, {}, {}, false).contains("completion_probabilities"));
}
