// profile: runs a model over a corpus and counts, per layer and per FFN
// neuron, the tokens the neuron fired on (engine/sparse/activation_stats.h
// holds the result and its file format). What `thermocline profile` runs.
// The corpus is cut into chunks of n_ctx tokens as for perplexity, each
// evaluated from an empty KV cache with BOS first; every token counts.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/activation_stats.h"
#include "engine/text/vocab.h"
#include "kernels/backend.h"

namespace tc::profiler {

struct ProfileOptions {
  int64_t n_ctx = 512;         // tokens per chunk (the last one may be shorter)
  int64_t n_batch = 512;       // tokens per forward step inside a chunk
  int64_t max_tokens = 0;      // tokens to profile at most; 0: the whole corpus
  // SwiGLU only: the fraction of |silu(gate) * up| values of the first chunk
  // that lie above each layer's threshold (the threshold is that layer's
  // (1 - fraction) quantile there), in (0, 1). The first chunk is run once
  // more to calibrate before counting.
  float silu_fire_fraction = 0.5f;
  std::string corpus_name;     // recorded in the stats (informative)
  // When set, filled with each layer's temporal locality: of the neurons
  // that fire for a token, the share that fired for the token before it in
  // its chunk ([n_layer]; not part of the stats file).
  std::vector<double>* consecutive_overlap = nullptr;
};

// Tokens evaluated so far, tokens to evaluate in all (calibration included).
using ProfileProgress = std::function<void(int64_t done, int64_t total)>;

// Profiles `tokens` (the corpus tokenized, BOS first as the vocab asks);
// `bos` is put at the start of every chunk (-1: none). Throws
// std::invalid_argument for an empty corpus, more than 2^31 - 1 tokens, or
// options out of range.
sparse::ActivationStats profile_activations(const model::LoadedModel& model, kernels::Backend& backend,
                                            std::span<const text::TokenId> tokens, text::TokenId bos,
                                            const ProfileOptions& options, const ProfileProgress& progress = {});

// The pass over a corpus that profile and the predictor recorder drive
// their observers with: runs `llama` over the chunks of `tokens` beginning
// at `starts`, in order, each min(n_ctx, tokens.size() - start) tokens
// evaluated from an empty slot 0 of `kv` (which holds n_ctx positions at
// least) with `bos` in its first position (-1: none), in forward steps of at
// most n_batch tokens. progress(done, total) after each step: tokens
// evaluated so far, tokens in all the chunks. Leaves slot 0 empty. Throws
// std::invalid_argument "<what>: the corpus holds a token id outside
// [0, n_vocab) near token N".
void run_corpus_chunks(model::LlamaModel& llama, runtime::KvCache& kv, std::span<const text::TokenId> tokens,
                       text::TokenId bos, std::span<const int64_t> starts, int64_t n_ctx, int64_t n_batch,
                       std::string_view what, const ProfileProgress& progress = {});

}  // namespace tc::profiler
