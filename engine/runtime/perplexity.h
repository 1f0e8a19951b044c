// Perplexity of a model over a token stream by llama.cpp's method: the text
// is cut into chunks of n_ctx tokens, each evaluated from an empty KV cache
// with BOS in its first position, and the second half of each chunk is
// scored. What `thermocline perplexity` runs; `profile` reuses the chunking.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/vocab.h"

namespace tc::runtime {

struct PerplexityOptions {
  int64_t n_ctx = 512;    // tokens per chunk (>= 4); the KV cache must hold them
  int64_t n_batch = 512;  // tokens per forward step inside a chunk (>= 1)
  int64_t n_chunks = 0;   // chunks to evaluate at most; 0: every whole chunk
};

// One finished chunk, reported as the run goes.
struct PerplexityChunk {
  int64_t index = 0;         // 0-based
  int64_t n_chunks = 0;      // chunks in the whole run
  double nll_sum = 0;        // sum of -ln p(token) over this chunk's scored tokens
  int64_t n_scored = 0;      // tokens scored in this chunk: n_ctx - 1 - n_ctx / 2
  double running_ppl = 0;    // exp(mean nll over chunks 0..index)
};

struct PerplexityResult {
  int64_t n_tokens = 0;    // tokens in the input (BOS included)
  int64_t n_chunks = 0;    // chunks evaluated
  int64_t n_scored = 0;    // tokens scored in all
  double mean_nll = 0;     // nats per scored token
  double ppl = 0;          // exp(mean_nll)
  double ppl_error = 0;    // standard error of ppl: sd(nll) / sqrt(n_scored - 1) * ppl, as llama.cpp
  std::vector<double> chunk_nll_sums;  // [n_chunks], sum of -ln p per chunk
};

struct PerplexityCallbacks {
  std::function<void(const PerplexityChunk&)> on_chunk;          // after each chunk
  std::function<void(int64_t done, int64_t total)> on_progress;  // tokens evaluated so far, after each step
};

// Tokens [begin, begin + n) of `tokens`, the first replaced by `bos` when
// bos >= 0 (llama.cpp's perplexity does this for every chunk).
std::vector<text::TokenId> chunk_tokens(std::span<const text::TokenId> tokens, int64_t begin, int64_t n,
                                        text::TokenId bos);

// Evaluates `tokens` (already tokenized, BOS first as the vocab asks) on
// slot 0 of `kv`, which is cleared before each chunk and left empty.
// `bos`: the id put at the start of every chunk, or -1 for none.
// Throws std::invalid_argument when there are fewer than 2 * n_ctx tokens
// (at least two chunks, as llama.cpp), n_ctx < 4, n_batch < 1, or the cache
// holds fewer than n_ctx positions.
PerplexityResult perplexity(model::LlamaModel& model, KvCache& kv, std::span<const text::TokenId> tokens,
                            text::TokenId bos, const PerplexityOptions& options,
                            const PerplexityCallbacks& callbacks = {});

// -ln softmax(logits)[target], computed in double. logits: f32 [n_vocab].
double negative_log_likelihood(std::span<const float> logits, text::TokenId target);

}  // namespace tc::runtime
