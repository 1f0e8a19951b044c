// Tokenizer factory, the parts shared by the tokenizer kinds (vocab checks,
// special-token partitioning, piece rendering, decode) and the streaming
// detokenizer.
#include "engine/text/tokenizer.h"

#include <algorithm>
#include <stdexcept>

#include "engine/text/tokenizer_impl.h"
#include "engine/text/unicode.h"
#include "engine/text/vocab_harmony.h"

namespace tc::text {

namespace detail {

void TokenizerBase::append_unmarked(std::string_view token_text, std::string& out) {
  for (size_t i = 0; i < token_text.size();) {
    if (token_text.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
      out.push_back(' ');
      i += kSpaceMarker.size();
    } else {
      out.push_back(token_text[i++]);
    }
  }
}

void validate_vocab(const Vocab& vocab) {
  const size_t n = vocab.tokens.size();
  if (n == 0) throw std::invalid_argument("vocab has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) throw std::invalid_argument("vocab has too many tokens");
  if (!vocab.types.empty() && vocab.types.size() != n) {
    throw std::invalid_argument("vocab has " + std::to_string(vocab.types.size()) +
                                " token types for " + std::to_string(n) + " tokens");
  }
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    throw std::invalid_argument("vocab has " + std::to_string(vocab.scores.size()) +
                                " scores for " + std::to_string(n) + " tokens");
  }
  const auto check_id = [&](TokenId id, const char* what) {
    if (id < -1 || id >= static_cast<TokenId>(n)) {
      throw std::invalid_argument(std::string("vocab ") + what + " " + std::to_string(id) +
                                  " is out of range [0, " + std::to_string(n) + ")");
    }
  };
  check_id(vocab.bos_id, "bos_id");
  check_id(vocab.eos_id, "eos_id");
  check_id(vocab.unk_id, "unk_id");
  check_id(vocab.pad_id, "pad_id");
  check_id(vocab.fim.pre, "fim.pre");
  check_id(vocab.fim.suf, "fim.suf");
  check_id(vocab.fim.mid, "fim.mid");
  check_id(vocab.fim.pad, "fim.pad");
  check_id(vocab.fim.rep, "fim.rep");
  check_id(vocab.fim.sep, "fim.sep");
  for (size_t i = 0; i < n; ++i) {
    if (vocab.tokens[i].empty()) {
      throw std::invalid_argument("vocab token " + std::to_string(i) + " is empty");
    }
  }
}

TokenizerBase::TokenizerBase(Vocab vocab) : Tokenizer(std::move(vocab)), token_index_(vocab_.tokens) {
  const size_t n = vocab_.tokens.size();
  if (const auto [first, second] = token_index_.first_duplicate(); first >= 0) {
    throw std::invalid_argument("vocab token '" + vocab_.tokens[static_cast<size_t>(first)] + "' appears at ids " +
                                std::to_string(first) + " and " + std::to_string(second));
  }
  if (vocab_.types.empty()) vocab_.types.assign(n, TokenType::Normal);
  resolve_fim_tokens(vocab_);  // FIM markers found by text become control tokens
  // As llama.cpp's loader: an end-of-generation marker is a control token
  // whatever the file says (it is then split off only with parse_special,
  // and renders only with render_special).
  for (size_t i = 0; i < n; ++i) {
    if (vocab_.types[i] != TokenType::Control && is_end_of_generation_text(vocab_.tokens[i])) {
      vocab_.types[i] = TokenType::Control;
    }
  }
  // llama.cpp's Gemma 4 rule: beside <|tool_response> (an end), </s> is no
  // end and no special token but plain text.
  if (const TokenId s = token_index_.find("</s>"); s >= 0 && token_index_.find("<|tool_response>") >= 0) {
    vocab_.types[static_cast<size_t>(s)] = TokenType::Normal;
  }
  apply_harmony_token_rules(vocab_);  // gpt-oss: <|end|> and the markers rendered, not ends
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = vocab_.types[i];
    if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) {
      special_ids_.push_back(static_cast<TokenId>(i));
    }
  }
  std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](TokenId a, TokenId b) {
    return vocab_.tokens[a].size() > vocab_.tokens[b].size();
  });
}

void TokenizerBase::build_pieces() {
  const size_t n = vocab_.tokens.size();
  piece_offsets_.resize(n + 1);
  piece_bytes_.clear();
  piece_bytes_.reserve(n * 8);
  for (size_t i = 0; i < n; ++i) {
    piece_offsets_[i] = static_cast<uint32_t>(piece_bytes_.size());
    const std::string& text = vocab_.tokens[i];
    switch (vocab_.types[i]) {
      case TokenType::Normal:
        append_normal_piece(text, piece_bytes_);
        break;
      case TokenType::Byte: {
        // "<0xXX>"; anything else is rendered like a normal token.
        unsigned value = 0;
        bool ok = text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>';
        for (size_t k = 3; ok && k < 5; ++k) {
          const char c = text[k];
          const int digit = (c >= '0' && c <= '9')   ? c - '0'
                            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                                     : -1;
          ok = digit >= 0;
          value = value * 16 + static_cast<unsigned>(digit);
        }
        if (ok) {
          piece_bytes_.push_back(static_cast<char>(value));
        } else {
          append_normal_piece(text, piece_bytes_);
        }
        break;
      }
      case TokenType::Control:
      case TokenType::UserDefined:
      case TokenType::Unknown:
        piece_bytes_ += text;
        break;
      case TokenType::Unused:
      case TokenType::Undefined:
      default:
        break;  // llama.cpp renders these as nothing
    }
    if (piece_bytes_.size() > UINT32_MAX) throw std::length_error("vocab pieces exceed 4 GiB");
  }
  piece_offsets_[n] = static_cast<uint32_t>(piece_bytes_.size());
}

std::string TokenizerBase::token_to_piece(TokenId id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) return {};
  const TokenType t = vocab_.types[static_cast<size_t>(id)];
  if (!render_special && (t == TokenType::Control || t == TokenType::Unknown)) return {};
  const auto i = static_cast<size_t>(id);
  return piece_bytes_.substr(piece_offsets_[i], piece_offsets_[i + 1] - piece_offsets_[i]);
}

std::vector<Fragment> TokenizerBase::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, text});
  std::vector<Fragment> next;
  for (const TokenId id : special_ids_) {
    const TokenType t = vocab_.types[static_cast<size_t>(id)];
    if (!parse_special && t != TokenType::UserDefined) continue;
    const std::string& special = vocab_.tokens[static_cast<size_t>(id)];
    next.clear();
    bool found = false;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = 0;
      for (size_t m; (m = f.text.find(special, pos)) != std::string_view::npos;) {
        if (m > pos) next.push_back({-1, f.text.substr(pos, m - pos)});
        next.push_back({id, {}});
        pos = m + special.size();
        found = true;
      }
      if (pos < f.text.size()) next.push_back({-1, f.text.substr(pos)});
    }
    if (found) frags.swap(next);
  }
  return frags;
}

}  // namespace detail

std::unique_ptr<Tokenizer> Tokenizer::create(Vocab vocab) {
  detail::validate_vocab(vocab);
  switch (vocab.kind) {
    case TokenizerKind::Spm:
      return detail::make_spm_tokenizer(std::move(vocab));
    case TokenizerKind::Bpe:
    case TokenizerKind::Gemma4:
      return detail::make_bpe_tokenizer(std::move(vocab));
    case TokenizerKind::Wpm:
      return detail::make_wpm_tokenizer(std::move(vocab));
    case TokenizerKind::Ugm:
      return detail::make_ugm_tokenizer(std::move(vocab));
  }
  throw std::invalid_argument("unknown tokenizer kind");
}

namespace {

// SPM and UGM with add_space_prefix: the first rendered piece of a sequence
// loses the space that encode() put in front of the text (llama.cpp strips
// it only when the very first token is that piece; skipping empty pieces
// such as BOS makes decode(encode(s)) == s with add_special as well).
bool drops_leading_space(const Tokenizer& tok, TokenId id, const std::string& piece) {
  const Vocab& v = tok.vocab();
  return (v.kind == TokenizerKind::Spm || v.kind == TokenizerKind::Ugm) && v.add_space_prefix && !piece.empty() &&
         piece[0] == ' ' && v.types[static_cast<size_t>(id)] == TokenType::Normal;
}

}  // namespace

std::string Tokenizer::decode(std::span<const TokenId> ids, bool render_special,
                              bool continuation) const {
  std::string out;
  bool at_start = !continuation;
  for (const TokenId id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (piece.empty()) continue;
    if (at_start) {
      at_start = false;
      if (drops_leading_space(*this, id, piece)) piece.erase(0, 1);
    }
    out += piece;
  }
  return out;
}

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special,
                                           bool continuation)
    : tokenizer_(tokenizer), render_special_(render_special), at_start_(!continuation) {}

std::string StreamingDetokenizer::push(TokenId id, bool render_special) {
  std::string piece = tokenizer_.token_to_piece(id, render_special);
  if (piece.empty()) return {};
  if (at_start_) {
    at_start_ = false;
    if (drops_leading_space(tokenizer_, id, piece)) piece.erase(0, 1);
  }
  pending_ += piece;
  const size_t complete = utf8_complete_prefix(pending_);
  std::string out = utf8_sanitize(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace tc::text
