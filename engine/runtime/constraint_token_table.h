// ConstraintTokenTable: each token's bytes and kind as constrained
// sampling (output_constraint.h) sees them, computed once per model and
// shared by its sequences, with the text tokens in byte order for walking
// the vocabulary as a trie (grammar_mask.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"

namespace tc::runtime {

// Each token's bytes, computed once per model and shared by its sequences.
struct ConstraintTokenTable {
  enum class Kind : uint8_t {
    Text,             // ordinary bytes: allowed where they fit
    EndOfGeneration,  // allowed only when the text is whole
    Never,            // control tokens and empty pieces: never allowed as text (a grammar's
                      // token element may still name one)
  };
  std::vector<std::string> bytes;  // [n_vocab]: the token's text as it decodes mid-sequence
  std::vector<Kind> kind;          // [n_vocab]
  // [n_vocab]: 1 when the token is whole characters that a JSON string
  // takes as they are (valid UTF-8, no quote, backslash or control byte):
  // text any string without a length limit accepts (the mask's fast path).
  std::vector<uint8_t> plain;

  // Text tokens sorted by their bytes: the trie's leaves in order.
  std::vector<int32_t> trie_order;
  // [trie_order.size()]: how many leading bytes trie_order[i] shares with
  // trie_order[i - 1] (0 for the first).
  std::vector<uint32_t> trie_shared;
  size_t max_text_bytes = 0;  // the longest text token
  std::vector<int32_t> end_of_generation;  // the EndOfGeneration ids, ascending

  // n_vocab: the logits' length (the model's output rows; ids the tokenizer
  // does not know are never allowed).
  static std::shared_ptr<const ConstraintTokenTable> from(const text::Tokenizer& tokenizer, int32_t n_vocab);
};

}  // namespace tc::runtime
