// Fill-in-the-middle (FIM) tokens of code models (Qwen2.5-Coder, StarCoder2,
// CodeLlama, DeepSeek-Coder, Granite Code, ...): the markers a prompt puts
// around the code before and after the cursor so that the model writes what
// goes between. Found as llama.cpp finds them: the `tokenizer.ggml.fim_*`
// keys (or the older prefix/suffix/middle keys), else by the token's text.
#pragma once

#include <string>
#include <string_view>

namespace tc::gguf {
class GgufFile;
class GgufWriter;
}  // namespace tc::gguf

namespace tc::text {

using TokenId = int32_t;
struct Vocab;

struct FimTokens {
  TokenId pre = -1;  // before the code ahead of the cursor (<|fim_prefix|>, <PRE>, ...)
  TokenId suf = -1;  // before the code after it (<|fim_suffix|>, <SUF>, ...)
  TokenId mid = -1;  // where the model starts writing (<|fim_middle|>, <MID>, ...)
  TokenId pad = -1;  // padding; ends the generation (<|fim_pad|>)
  TokenId rep = -1;  // repository name of a repo-level prompt; ends the generation (<|repo_name|>)
  TokenId sep = -1;  // file separator of a repo-level prompt; ends the generation (<|file_sep|>)

  bool can_infill() const { return pre >= 0 && suf >= 0 && mid >= 0; }
  // The roles of pre/suf/mid that have no token, e.g. "prefix and middle";
  // empty when can_infill().
  std::string missing() const;
  // Whether `id` is pad, rep or sep: tokens llama.cpp ends a generation at.
  bool ends_generation(TokenId id) const { return id >= 0 && (id == pad || id == rep || id == sep); }
};

// Reads the ids the file's keys give (tokenizer.ggml.fim_pre_token_id ...;
// the older tokenizer.ggml.prefix/suffix/middle_token_id win where both are
// present, as in llama.cpp). An id >= n_tokens is a ModelLoadError naming
// the key.
FimTokens read_fim_keys(const gguf::GgufFile& file, size_t n_tokens);
// Writes the tokenizer.ggml.fim_*_token_id keys of the ids that are set.
void write_fim_keys(const FimTokens& fim, gguf::GgufWriter& writer);

// Fills the roles the keys left unset from the token texts llama.cpp
// recognises ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", DeepSeek's
// "<｜fim▁begin｜>", "<PRE>", CodeLlama's "▁<PRE>", ...), the lowest id
// where several match, and makes each token found so a control token (as
// llama.cpp does), so that it is split off only with parse_special and never
// rendered as text. Ids from keys keep the type the file gives.
void resolve_fim_tokens(Vocab& vocab);

}  // namespace tc::text
