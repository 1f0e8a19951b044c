// FIM token ids from a file's keys or from token texts (see fim_tokens.h).
#include "engine/text/fim_tokens.h"

#include <array>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/vocab.h"

namespace tc::text {
namespace {

// One FIM role: its member, its key, the older key that names it (if any),
// and the token texts llama.cpp's loader recognises for it.
struct FimRole {
  TokenId FimTokens::*member;
  const char* key;
  const char* legacy_key;
  std::array<std::string_view, 8> texts;  // unused entries are empty
};

#define TC_U2581 "\xE2\x96\x81"  // ▁, SentencePiece's space
#define TC_FULLWIDTH_BAR "\xEF\xBD\x9C"  // ｜, in DeepSeek's markers

const std::array<FimRole, 6>& roles() {
  static const std::array<FimRole, 6> kRoles = {{
      {&FimTokens::pre,
       "tokenizer.ggml.fim_pre_token_id",
       "tokenizer.ggml.prefix_token_id",
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
        "<" TC_FULLWIDTH_BAR "fim" TC_U2581 "begin" TC_FULLWIDTH_BAR ">", "<PRE>", TC_U2581 "<PRE>", "<|code_prefix|>",
        "<|prefix|>"}},
      {&FimTokens::suf,
       "tokenizer.ggml.fim_suf_token_id",
       "tokenizer.ggml.suffix_token_id",
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
        "<" TC_FULLWIDTH_BAR "fim" TC_U2581 "hole" TC_FULLWIDTH_BAR ">", "<SUF>", TC_U2581 "<SUF>", "<|code_suffix|>",
        "<|suffix|>"}},
      {&FimTokens::mid,
       "tokenizer.ggml.fim_mid_token_id",
       "tokenizer.ggml.middle_token_id",
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
        "<" TC_FULLWIDTH_BAR "fim" TC_U2581 "end" TC_FULLWIDTH_BAR ">", "<MID>", TC_U2581 "<MID>", "<|code_middle|>",
        "<|middle|>"}},
      {&FimTokens::pad,
       "tokenizer.ggml.fim_pad_token_id",
       nullptr,
       {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {&FimTokens::rep,
       "tokenizer.ggml.fim_rep_token_id",
       nullptr,
       {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {&FimTokens::sep, "tokenizer.ggml.fim_sep_token_id", nullptr, {"<|file_sep|>"}},
  }};
  return kRoles;
}

#undef TC_U2581
#undef TC_FULLWIDTH_BAR

bool role_has_text(const FimRole& role, std::string_view text) {
  for (const std::string_view t : role.texts) {
    if (!t.empty() && t == text) return true;
  }
  return false;
}

}  // namespace

std::string FimTokens::missing() const {
  std::string out;
  const auto add = [&](TokenId id, const char* name) {
    if (id >= 0) return;
    if (!out.empty()) out += " and ";
    out += name;
  };
  add(pre, "prefix");
  add(suf, "suffix");
  add(mid, "middle");
  return out;
}

FimTokens read_fim_keys(const gguf::GgufFile& file, size_t n_tokens) {
  FimTokens fim;
  const auto read = [&](const char* key, TokenId& id) {
    if (key == nullptr || !file.has(key)) return;
    const uint64_t value = file.get_u64(key);
    if (value >= n_tokens) {
      throw file.error(key, "token id " + std::to_string(value) + " is out of range [0, " +
                                std::to_string(n_tokens) + ")");
    }
    id = static_cast<TokenId>(value);
  };
  for (const FimRole& role : roles()) {
    read(role.key, fim.*role.member);
    read(role.legacy_key, fim.*role.member);
  }
  return fim;
}

void write_fim_keys(const FimTokens& fim, gguf::GgufWriter& writer) {
  for (const FimRole& role : roles()) {
    if (const TokenId id = fim.*role.member; id >= 0) writer.set(role.key, gguf::Value(static_cast<uint32_t>(id)));
  }
}

void resolve_fim_tokens(Vocab& vocab) {
  FimTokens& fim = vocab.fim;
  const FimTokens from_keys = fim;  // roles named by keys keep the type the file gives
  // One pass in id order (the lowest match wins); every text begins with
  // '<', '[' or U+2581's first byte, which passes over almost every token.
  for (TokenId i = 0; i < vocab.n_vocab(); ++i) {
    const std::string& text = vocab.tokens[static_cast<size_t>(i)];
    if (text.empty() || (text[0] != '<' && text[0] != '[' && text[0] != '\xE2')) continue;
    for (const FimRole& role : roles()) {
      TokenId& id = fim.*role.member;
      if (id < 0 && role_has_text(role, text)) id = i;
    }
  }
  for (const FimRole& role : roles()) {
    const TokenId id = fim.*role.member;
    if (id >= 0 && from_keys.*role.member < 0 && static_cast<size_t>(id) < vocab.types.size()) {
      vocab.types[static_cast<size_t>(id)] = TokenType::Control;
    }
  }
}

}  // namespace tc::text
