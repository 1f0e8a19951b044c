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

#include "engine/model/loaded_model.h"
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

}  // namespace tc::profiler
