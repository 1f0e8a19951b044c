// llama.cpp's native objects for /infill (infill_responses.h): the streamed
// piece, and the last object's text, stop type, counts and timings.
#include <catch2/catch.hpp>

#include "server/infill_responses.h"

using namespace tc::server;
using tc::runtime::FinishReason;

TEST_CASE("infill objects: a piece, and the last one with counts and timings", "[server][fim]") {
  const auto piece = infill_chunk("x = 1");
  CHECK(piece["content"] == "x = 1");
  CHECK(piece["stop"] == false);

  InfillMeta meta{"coder", true, 4096, 64};
  tc::runtime::Usage usage;
  usage.prompt_tokens = 100;
  usage.cached_tokens = 60;
  usage.completion_tokens = 20;
  RequestRecord record;
  record.queue_seconds = 0.5;
  record.first_token_seconds = 0.2;  // 40 prompt tokens evaluated
  record.total_seconds = 1.7;        // 1.0 s for the 20 tokens
  const auto last = infill_final(meta, "a\nb", false, FinishReason::Length, usage, record);
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
  const auto streamed = infill_final(meta, "x", true, FinishReason::Stop, usage, RequestRecord{});
  CHECK(streamed["content"] == "");
  CHECK(streamed["stop_type"] == "eos");
  CHECK(streamed["timings"]["predicted_per_token_ms"] == 0.0);
  CHECK(streamed["timings"]["predicted_per_second"] == 0.0);
}
