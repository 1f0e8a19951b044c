// GrammarMask: which tokens may come next under a GBNF grammar
// (text/gbnf_prefix.h). The vocabulary's text tokens are walked as a trie
// in byte order (ConstraintTokenTable::trie_order), so a byte prefix that
// many tokens share is pushed into the matcher once, and a prefix that does
// not fit rules out every token under it at once; the walk's distinct
// states are interned with their steps by byte, so a step taken before is
// a lookup. The answer for a state is kept (64 states, least recently used
// out): inside a repetition such as a string's characters the state comes
// back token after token.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runtime/constraint_token_table.h"
#include "engine/text/gbnf_prefix.h"

namespace tc::runtime {

class GrammarMask {
 public:
  // Sets logits[t] = -inf for every token t that cannot come next after
  // `state`. logits: f32 [n_vocab].
  void apply(const text::GbnfPrefix& state, const ConstraintTokenTable& table, std::span<float> logits);

  // The allowed tokens as a bitset (bit t of word t / 64), computed anew.
  static void allowed(const text::GbnfPrefix& state, const ConstraintTokenTable& table,
                      std::vector<text::GbnfPrefix>& levels, std::vector<uint64_t>& bits);

  static constexpr size_t kCachedStates = 64;

 private:
  struct Entry {
    std::vector<uint32_t> key;    // the state's words (GbnfPrefix::stacks, then partial_key)
    std::vector<uint64_t> bits;   // [ceil(n_vocab / 64)]
    uint64_t last_used = 0;
  };
  std::vector<Entry> cache_;
  uint64_t clock_ = 0;
  std::vector<text::GbnfPrefix> levels_;  // the trie walk's states, one per depth
  std::vector<uint32_t> key_;
};

}  // namespace tc::runtime
