// UgmNormalizer: the text normalization of the UGM tokenizer ("t5" vocabs:
// SentencePiece Unigram), as llama.cpp's llm_tokenizer_ugm_session::normalize
// does it, byte for byte. At each position of the input, in this order:
//   1. a user-defined token's text, as far as a walk of the user-defined
//      tokens' trie follows the input (a prefix of one counts too, as
//      llama.cpp's naive_trie::get_longest_prefix has it), is kept as is;
//   2. the longest key of the precompiled charsmap is replaced;
//   3. one character is kept, or one byte that does not start a sequence
//      llama.cpp's UTF-8 decoder accepts becomes U+FFFD.
// Spaces (only ' ') in what that gives become U+2581: with
// remove_extra_whitespaces, runs of them collapse to one U+2581 before each
// run of other bytes (and none at the end); with add_space_prefix, one
// U+2581 goes before the first run of other bytes. (llama.cpp reads no keys
// for SentencePiece's escape_whitespaces and treat_whitespace_as_suffix:
// spaces are always escaped, never moved to the end.)
// Immutable after construction: normalize is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "engine/text/byte_trie.h"
#include "engine/text/charsmap.h"
#include "engine/text/vocab.h"

namespace tc::text {

class UgmNormalizer {
 public:
  // From the vocab's precompiled_charsmap (std::invalid_argument when it is
  // malformed: PrecompiledCharsmap), add_space_prefix,
  // remove_extra_whitespaces and its user-defined tokens (types as given).
  explicit UgmNormalizer(const Vocab& vocab);

  std::string normalize(std::string_view text) const;

 private:
  struct Step {
    std::string_view out;
    size_t consumed;
  };
  Step normalize_prefix(std::string_view text, size_t at) const;

  PrecompiledCharsmap charsmap_;
  detail::ByteTrie user_defined_;
  bool add_space_prefix_;
  bool remove_extra_whitespaces_;
};

// The byte length of the UTF-8 sequence at `at` as llama.cpp's
// unicode_cpt_from_utf8 accepts it (a lead byte and enough continuation
// bytes; overlongs and surrogates pass), 0 where it throws. at < s.size().
size_t ugm_sequence_length(std::string_view s, size_t at);

}  // namespace tc::text
