// DRY ("don't repeat yourself", koboldcpp's sampler as llama.cpp has it): a
// token that would extend a sequence already seen earlier in the context
// has its logit lowered by multiplier * base^(n - allowed_length), n being
// the length of the repeated sequence it would continue (n >= allowed
// length). Sequence breakers (texts such as "\n" or ":") cut repetitions:
// none is counted across one, and a token that is a breaker by itself is
// never penalised. Built once per vocabulary and breaker set; applied per
// step on the recent tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tc::text {
class Tokenizer;
}

namespace tc::runtime {

using TokenId = int32_t;

// The breakers of one vocabulary: for each token that can begin a breaker,
// the tokens that must follow it for the breaker to be whole ("tails";
// empty when the token's text contains a breaker by itself). As llama.cpp:
// a token whose text ends with the beginning of a breaker is a head whose
// tail is the rest of the breaker tokenized (at most 20 tokens), and a
// breaker is cut to 40 bytes.
struct DryBreakers {
  std::unordered_multimap<TokenId, std::vector<TokenId>> tails;
  bool is_single_token_breaker(TokenId id) const;
};

// Scans every token of the tokenizer's vocabulary once per breaker. Empty
// breakers are skipped.
std::shared_ptr<const DryBreakers> make_dry_breakers(const text::Tokenizer& tokenizer,
                                                     const std::vector<std::string>& breakers);

struct DryParams {
  float multiplier = 0.0f;     // 0: off
  float base = 1.75f;          // >= 1
  int32_t allowed_length = 2;  // repetitions up to this length are free
};

// Lowers `logits` (f32 [n_vocab]) of the tokens that would extend a
// repetition of `history` (oldest first: the window of recent tokens, the
// prompt's included). `breakers` may be null (no breakers). `scratch` is
// reused between calls.
void apply_dry_penalty(std::span<const TokenId> history, const DryParams& params, const DryBreakers* breakers,
                       std::span<float> logits, std::vector<int32_t>& scratch);

}  // namespace tc::runtime
