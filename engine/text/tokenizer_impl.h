// Internals shared by the SPM and BPE tokenizers: the token-text index,
// special-token partitioning (llama.cpp's tokenizer_st_partition), piece
// rendering and BOS/EOS handling. Not part of the public API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/text/tokenizer.h"

namespace tc::text::detail {

// std::string keys looked up by std::string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

// Throws std::invalid_argument when the vocab is inconsistent: no tokens,
// empty or duplicate token texts, scores/types of the wrong length, special
// ids out of range, add_bos/add_eos without the id.
void validate_vocab(const Vocab& vocab);

// A piece of the input after special-token partitioning: either raw text
// (a view into the sanitized input) or a special token.
struct Fragment {
  TokenId token = -1;  // >= 0: a special token
  std::string_view text;
};

class TokenizerBase : public Tokenizer {
 public:
  std::string token_to_piece(TokenId id, bool render_special) const override;

 protected:
  explicit TokenizerBase(Vocab vocab);

  TokenId find_token(std::string_view text) const {
    const auto it = token_index_.find(text);
    return it == token_index_.end() ? -1 : it->second;
  }
  // Splits `text` on special tokens, longest first: user-defined tokens
  // always, control and unknown tokens only with parse_special.
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  // Renders the text of a Normal token (kind specific: U+2581 -> space for
  // SPM, byte chars -> bytes for BPE). Called once per token at build time.
  virtual std::string normal_piece(const std::string& token_text) const = 0;
  // Call at the end of the derived constructor (uses normal_piece).
  void build_pieces();

  TokenIndex token_index_;
  std::vector<TokenId> special_ids_;  // control, user-defined, unknown; longest text first
  std::vector<std::string> pieces_;   // rendered piece per token, render_special = true
};

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab);
std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab);

}  // namespace tc::text::detail
