// The response side of llama.cpp's own routes, /completion and /infill (its
// server's native completion format, which SillyTavern's llama.cpp mode,
// llama.vim, llama.vscode and scripts written for llama-server read): one
// JSON body, or SSE events `{"content": piece, "stop": false}` and a last
// `{"content": "", "stop": true, ...}` with the counts and timings (no
// [DONE]). Plain JSON builders, unit-tested directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/engine.h"
#include "server/metrics.h"
#include "server/openai_responses.h"

namespace tc::server {

// What the final object reports beside the text and counts.
struct NativeMeta {
  std::string model;
  bool truncated = false;  // the prompt was cut to fit the context (fill_in_middle.h)
  int64_t n_ctx = 0;       // the model's context, as generation_settings.n_ctx
  int64_t n_predict = -1;  // the request's n_predict (-1: up to the context)
};

// llama.cpp's completion_probabilities for `tokens`: per token {"id",
// "token", "bytes", "logprob", "top_logprobs": [{"token", "bytes",
// "logprob"}, ...]} (the alternatives without their ids).
nlohmann::json native_probabilities(const std::vector<runtime::TokenInfo>& tokens);

// A streamed piece: {"index": 0, "content", "stop": false, "tokens": []},
// with completion_probabilities when `tokens` has any.
nlohmann::json native_chunk(const std::string& content, const std::vector<runtime::TokenInfo>& tokens = {});

// The last object: the reply's text as content when not streamed, "" when
// streamed (the pieces carried it); "stop": true, has_new_line, stop_type
// ("eos" for an end of generation, "word" for a stop string, named in
// stopping_word, "limit" for n_predict or the context), tokens_predicted,
// tokens_evaluated (prompt
// tokens), tokens_cached (prompt and reply tokens now in the cache),
// truncated, generation_settings and timings (prompt_n, prompt_ms,
// prompt_per_token_ms, prompt_per_second, predicted_n, predicted_ms,
// predicted_per_token_ms, predicted_per_second; prompt_n counts the prompt
// tokens not taken from the cache); completion_probabilities of the reply's
// tokens when `probabilities`, not streamed and there are any.
nlohmann::json native_final(const NativeMeta& meta, const ChoiceResult& reply, bool streamed,
                            const runtime::Usage& usage, const RequestRecord& record, bool probabilities = false);

}  // namespace tc::server
