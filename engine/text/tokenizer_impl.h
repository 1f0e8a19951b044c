// Internals shared by the SPM, BPE, WPM and UGM tokenizers: the token-text index,
// special-token partitioning (llama.cpp's tokenizer_st_partition), piece
// rendering and BOS/EOS handling. Not part of the public API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/text/string_index.h"
#include "engine/text/tokenizer.h"

namespace tc::text::detail {

// SentencePiece's word boundary, U+2581, in UTF-8.
inline constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";

// std::string keys looked up by std::string_view without a copy (for maps
// that grow, as the trainer's; a built vocab uses StringIndex).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

// Throws std::invalid_argument when the vocab is inconsistent: no tokens,
// empty token texts, scores/types of the wrong length, special ids out of
// range. (Duplicate texts are found by TokenizerBase's index.)
void validate_vocab(const Vocab& vocab);

// A piece of the input after special-token partitioning: either raw text
// (a view into the sanitized input) or a special token.
struct Fragment {
  TokenId token = -1;  // >= 0: a special token
  std::string_view text;
};

class TokenizerBase : public Tokenizer {
 public:
  // The indexes point into vocab_: never copied.
  TokenizerBase(const TokenizerBase&) = delete;
  TokenizerBase& operator=(const TokenizerBase&) = delete;

  std::string token_to_piece(TokenId id, bool render_special) const override;

 protected:
  explicit TokenizerBase(Vocab vocab);

  TokenId find_token(std::string_view text) const { return token_index_.find(text); }
  // Splits `text` on special tokens, longest first: user-defined tokens
  // always, control and unknown tokens only with parse_special.
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  // Appends the rendered text of a Normal token (kind specific: U+2581 ->
  // space for SPM, Gemma 4 and WPM, byte chars -> bytes for byte-level BPE).
  // Called once per token at build time.
  virtual void append_normal_piece(const std::string& token_text, std::string& out) const = 0;
  // token_text with every kSpaceMarker a space (SPM's, UGM's and WPM's
  // append_normal_piece).
  static void append_unmarked(std::string_view token_text, std::string& out);
  // Call at the end of the derived constructor (uses append_normal_piece).
  void build_pieces();

  StringIndex token_index_;           // over vocab_.tokens
  std::vector<TokenId> special_ids_;  // control, user-defined, unknown; longest text first
  // Rendered piece per token (render_special = true): bytes
  // [piece_offsets_[id], piece_offsets_[id + 1]) of piece_bytes_.
  std::string piece_bytes_;
  std::vector<uint32_t> piece_offsets_;
};

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab);
std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab);
std::unique_ptr<Tokenizer> make_wpm_tokenizer(Vocab vocab);
std::unique_ptr<Tokenizer> make_ugm_tokenizer(Vocab vocab);

}  // namespace tc::text::detail
