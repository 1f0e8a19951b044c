// Byte-level BPE pre-tokenizers (`tokenizer.ggml.pre`): split text into the
// words that BPE merges run inside, as llama.cpp's hand-written matchers for
// the GPT-2, Llama-3 and Qwen2 regexes do (std::regex cannot do \p{..}).
// Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tc::text {

enum class PreTokenizer {
  // llama.cpp's "default": split off runs of [\p{P}$+<=>^~|], then the GPT-2
  // regex, then \p{N}+ runs, then [0-9]{3} groups.
  Default,
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Gpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
  // As Llama3 with \p{N} (single digits).
  Qwen2,
};

// Maps a `tokenizer.ggml.pre` value to its pre-tokenizer: "default" (and an
// empty value, as llama.cpp), "gpt2"/"gpt-2", "llama3"/"llama-v3"/"llama-bpe",
// "qwen2"/"deepseek-r1-qwen". nullopt for anything else.
std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name);
// The names accepted above, for error messages.
std::string_view supported_pre_tokenizer_names();
// llama.cpp's `ignore_merges`: a word that is itself a token is emitted as
// that token without running the merges (true for the Llama-3 family).
bool pre_tokenizer_ignores_merges(PreTokenizer pre);
// llama.cpp's default for add_bos when the file does not say (Llama-3: true).
bool pre_tokenizer_default_add_bos(PreTokenizer pre);

// Splits valid UTF-8 `text` into words (views into `text`, in order, covering
// it exactly). Call utf8_sanitize first on untrusted input.
std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text);

}  // namespace tc::text
