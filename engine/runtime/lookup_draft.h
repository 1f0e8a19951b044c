// Lookup drafts (prompt lookup decoding, llama.cpp's `ngram-simple`, vLLM's
// `ngram`): speculative decoding without a draft model. The tokens that
// followed the last earlier occurrence of a sequence's latest n-gram are
// guessed to follow again; the engine runs them through the model in the
// sequence's decode step (one forward over the sampled token and the
// draft) and keeps the drafted tokens for as long as sampling each
// position's logits draws them. Every kept token is drawn from the model's
// own distribution at its position, so the output is what plain decoding
// gives (up to the float rounding of a chunk against single tokens); only
// the number of forward passes changes. It pays where replies repeat their
// context: code edits, quoting, extraction, summaries, lists.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/text/vocab.h"

namespace tc::runtime {

// What EngineOptions and a request may set. n_max 0: off.
struct LookupDraftOptions {
  int32_t n_max = 0;       // draft tokens per step at most (the adaptive length's ceiling)
  int32_t ngram_min = 3;   // the shortest n-gram matched (>= 1)
  int32_t ngram_max = 5;   // the longest, tried first (>= ngram_min)

  // Draft tokens of one engine step at most, all sequences together (a
  // request's draft_max is capped there too): bounds the logit rows a step
  // adds, which the model reserves up front where drafts are on by default.
  int32_t step_tokens() const { return n_max > kMinStepTokens ? n_max : kMinStepTokens; }
  static constexpr int32_t kMinStepTokens = 16;
};

// "" when valid, else what is wrong (naming the field).
std::string check_lookup_draft(const LookupDraftOptions& options);

// `history` is the sequence so far (prompt, generated tokens and the token
// sampled last). For n from ngram_max down to ngram_min, finds the latest
// earlier position where history's last n tokens occur and returns up to
// `n_draft` of the tokens that followed there (never past history's end);
// empty when no n-gram recurs or n_draft < 1. O(history * ngram_max).
std::vector<text::TokenId> lookup_draft(std::span<const text::TokenId> history, int32_t ngram_min,
                                        int32_t ngram_max, int32_t n_draft);

// The draft length of one sequence, adapted to how its drafts fare (the
// "heuristic" schedule of Hugging Face's assisted generation): up by 2 after
// a draft kept whole, down by 1 after one cut short, within [1, n_max].
class DraftLength {
 public:
  explicit DraftLength(int32_t n_max) : n_max_(n_max), current_(n_max < 4 ? n_max : 4) {}
  int32_t current() const { return current_; }
  void update(int32_t drafted, int32_t kept);

 private:
  int32_t n_max_;
  int32_t current_;
};

}  // namespace tc::runtime
