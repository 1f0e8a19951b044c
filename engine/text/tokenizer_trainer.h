// Learns a tokenizer vocabulary from a text, for generated models: the SPM
// kind (`llama`: <unk>, <s>, </s>, byte-fallback pieces <0x00>..<0xFF>, then
// pieces scored by merge order), the byte-level BPE kind (`gpt2`: merges
// by rank) or Gemma 4's (`gemma4`: SPM's tokens, no space prefix, merges by
// rank). Deterministic: the same text and size give the same vocab.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/vocab.h"

namespace tc::text {

struct TrainerOptions {
  TokenizerKind kind = TokenizerKind::Spm;
  int32_t vocab_size = 4096;  // total tokens, specials and byte pieces included
  // BPE: the pre-tokenizer (`tokenizer.ggml.pre`) whose words merges are
  // learned over, and which the vocab names (a byte-level one).
  std::string pre = "llama3";
  // Texts no token may have: the caller's own special tokens, added after
  // training (an SPM or Gemma 4 character that is one is not made a token
  // either).
  // SPM pieces are also kept from being a proper prefix or suffix of one, so
  // two pieces never spell it.
  std::vector<std::string> reserved = {};
};

// Throws std::invalid_argument when vocab_size is too small to hold the
// fixed tokens. When the text supports fewer merges than asked, the vocab
// is padded with Unused tokens "<unused_N>" so n_vocab is exact.
Vocab train_vocab(std::string_view text, const TrainerOptions& options);

}  // namespace tc::text
