// Vocab: the tokenizer's data as GGUF stores it under `tokenizer.ggml.*`
// (tokens, scores, token types, merges, special ids and flags), read from a
// GgufFile or built by the tokenizer trainer and written back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/fim_tokens.h"

namespace tc::gguf {
class GgufFile;
class GgufWriter;
}  // namespace tc::gguf

namespace tc::text {

using TokenId = int32_t;

// llama.cpp's token attribute types (`tokenizer.ggml.token_type`).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// `tokenizer.ggml.model`: "llama" = SentencePiece BPE by piece scores,
// "gpt2" = byte-level BPE by merge ranks, "gemma4" = BPE by merge ranks over
// raw UTF-8 with spaces as U+2581 and <0xXX> byte fallback (Gemma 4; always
// the "gemma4" pre-tokenizer, whatever `tokenizer.ggml.pre` says), "bert" =
// WordPiece (BERT embedding models: greedy longest match per word, word
// starts as U+2581 + text, continuations plain; tokenizer_wpm.cpp), "t5" =
// SentencePiece unigram (T5, XLM-RoBERTa embedding and reranking models:
// the normalizer of ugm_normalizer.h, then the segmentation with the highest
// summed score; tokenizer_ugm.cpp).
enum class TokenizerKind { Spm, Bpe, Gemma4, Wpm, Ugm };

// The `tokenizer.ggml.model` value of a kind: "llama", "gpt2", "gemma4", "bert", "t5".
std::string_view tokenizer_model_name(TokenizerKind kind);

struct Vocab {
  TokenizerKind kind = TokenizerKind::Spm;
  std::string pre;                      // `tokenizer.ggml.pre` (BPE pre-tokenizer), e.g. "llama3"
  std::vector<std::string> tokens;      // piece text; SPM, gemma4, WPM use U+2581 for spaces, BPE byte-level chars
  std::vector<float> scores;            // SPM merge priority (higher first), UGM log-probability; may be empty
  std::vector<TokenType> types;         // one per token
  std::vector<std::string> merges;      // BPE and gemma4: "a b" in rank order
  TokenId bos_id = -1;
  TokenId eos_id = -1;
  TokenId unk_id = -1;
  TokenId pad_id = -1;
  TokenId eot_id = -1;                  // end of turn (`tokenizer.ggml.eot_token_id`), -1 if none
  TokenId sep_id = -1;                  // `tokenizer.ggml.seperator_token_id` (sic): WPM's [SEP]
  TokenId mask_id = -1;                 // `tokenizer.ggml.mask_token_id`: WPM's [MASK]
  // WPM encodes [CLS] (bos_id) ... [SEP] (sep_id) whenever specials are
  // asked for, as llama.cpp does whatever these three flags say.
  bool add_bos = true;
  bool add_eos = false;
  bool add_sep = false;                 // `tokenizer.ggml.add_sep_token`
  bool add_space_prefix = true;         // SPM, UGM: prepend U+2581 to the text (UGM's default: false)
  // UGM: `tokenizer.ggml.remove_extra_whitespaces`: runs of spaces become one
  // U+2581 before each word, none at the end (read for every kind, as
  // llama.cpp does; only UGM uses it).
  bool remove_extra_whitespaces = false;
  // UGM: `tokenizer.ggml.precompiled_charsmap`, the raw bytes (empty: none);
  // layout in charsmap.h.
  std::string precompiled_charsmap;
  // WPM's BertNormalizer (`tokenizer.ggml.normalizer.lowercase`, `.strip_accents`;
  // strip_accents defaults to lowercase): lowercase the text; map each
  // character to the first of its canonical decomposition and drop marks.
  bool normalizer_lowercase = false;
  bool normalizer_strip_accents = false;
  std::optional<std::string> chat_template;  // `tokenizer.chat_template`
  // Fill-in-the-middle markers: from the file's keys; a Tokenizer's vocab
  // also has those found by text (resolve_fim_tokens).
  FimTokens fim;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }

  // Whether generating `id` ends the text: eos, eot, the FIM pad, repo and
  // file-separator tokens, or a control token whose text is one of the
  // end-of-turn markers llama.cpp recognises (<|im_end|>, <|eot_id|>,
  // <|end|>, <end_of_turn>, <|endoftext|>, </s>, harmony's <|return|> and
  // <|call|>, Gemma 4's <eos>, <turn|> and <|tool_response>, ...). False for
  // ids outside the vocab. A Tokenizer's vocab has its types fixed as
  // llama.cpp fixes them (a harmony vocabulary's <|end|> is no end there:
  // vocab_harmony.h; nor is </s> in one with <|tool_response>).
  bool is_end_of_generation(TokenId id) const;
};

// Whether `text` is one of the end-of-generation markers llama.cpp's loader
// recognises by text (<|im_end|>, <|eot_id|>, <|end|>, <end_of_turn>,
// <|endoftext|>, </s>, <turn|>, ...). llama.cpp makes such a token a control
// token whatever type the file gives it; Tokenizer does the same.
bool is_end_of_generation_text(std::string_view text);

// Reads `tokenizer.*` from a file; ModelLoadError names the key at fault
// (missing tokens, ids out of range, array lengths that disagree, ...).
Vocab read_vocab(const gguf::GgufFile& file);
// Writes the vocab's keys into a writer (the inverse of read_vocab).
void write_vocab(const Vocab& vocab, gguf::GgufWriter& writer);

}  // namespace tc::text
