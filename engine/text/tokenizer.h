// Tokenizer: text <-> token ids for the GGUF tokenizer models (SentencePiece-
// style BPE `llama`, byte-level BPE `gpt2`, Gemma 4's BPE over UTF-8
// `gemma4`, WordPiece `bert`, SentencePiece unigram `t5`). Built once from a
// Vocab, immutable after: encode/decode are thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/vocab.h"

namespace tc::text {

struct EncodeOptions {
  bool add_special = true;    // BOS/EOS as the vocab's add_bos/add_eos flags say (WPM: always [CLS] ... [SEP])
  bool parse_special = false; // recognise control/user-defined token texts ("<s>") in the input
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Builds the tokenizer for vocab.kind. Throws ModelLoadError-free
  // std::invalid_argument on an inconsistent vocab (use read_vocab first).
  static std::unique_ptr<Tokenizer> create(Vocab vocab);

  // Invalid UTF-8 in `text` is replaced by U+FFFD, never an error (UGM:
  // where llama.cpp's normalizer replaces it, which passes overlongs and
  // surrogates on).
  virtual std::vector<TokenId> encode(std::string_view text, EncodeOptions options = {}) const = 0;
  // The bytes a token stands for (byte tokens give their byte; SPM U+2581
  // becomes a space). Control tokens give "" unless render_special.
  virtual std::string token_to_piece(TokenId id, bool render_special = false) const = 0;
  // Concatenated pieces; SPM and UGM drop the leading space added by add_space_prefix
  // (the first non-empty piece loses one leading space) unless `continuation`
  // says the tokens continue earlier text, e.g. a completion after its prompt,
  // where that space separates the words. May end in an incomplete UTF-8
  // sequence only if the tokens do.
  std::string decode(std::span<const TokenId> ids, bool render_special = false,
                     bool continuation = false) const;

  // The vocab as tokenized with: the one given, except that end-of-generation
  // markers of another type are control tokens (is_end_of_generation_text),
  // </s> is a normal token in a vocabulary with <|tool_response> (Gemma 4)
  // and a harmony vocabulary's markers follow apply_harmony_token_rules.
  const Vocab& vocab() const { return vocab_; }
  int32_t n_vocab() const { return vocab_.n_vocab(); }

 protected:
  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  Vocab vocab_;
};

// BERT's normalizer and pre-splitter, as llama.cpp's WPM tokenizer runs them
// before matching: words end at whitespace; NUL, U+FFFD and other/control
// characters (Cc, Cf, Cs, Co) are dropped; punctuation, ASCII symbols and
// CJK ideographs (is_bert_cjk) are words of their own. With strip_accents
// each character becomes the first of its canonical decomposition
// (nfd_first) and marks (M*) are dropped; with lowercase, to_lower. `text`
// must be valid UTF-8 (utf8_sanitize first). No empty words.
std::vector<std::string> wpm_words(std::string_view text, bool lowercase, bool strip_accents);

// Turns a stream of token ids into text pieces that are always whole UTF-8:
// bytes of a character split across tokens are held until it completes.
// One per sequence; not thread-safe.
class StreamingDetokenizer {
 public:
  // `continuation`: as for Tokenizer::decode (true keeps the first piece's
  // leading space; use it when streaming a completion after its prompt).
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = false,
                                bool continuation = false);
  // Returns the text that became complete with this token (may be empty).
  std::string push(TokenId id) { return push(id, render_special_); }
  // The same, rendering this token's text if it is a special one when
  // `render_special` (whatever the constructor said).
  std::string push(TokenId id, bool render_special);
  // Returns what is held back, with incomplete sequences replaced by U+FFFD.
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  bool at_start_ = true;
  std::string pending_;
};

}  // namespace tc::text
