// SentencePiece-style BPE (`tokenizer.ggml.model` = "llama"), the algorithm
// of llama.cpp's llm_tokenizer_spm: spaces become U+2581, the text is split
// into characters, and the adjacent pair whose concatenation is the
// highest-scoring vocab piece is merged (leftmost on ties) until none is
// left; symbols that are not pieces fall back to <0xXX> byte tokens.
#include <optional>
#include <string>
#include <vector>

#include "engine/text/bigram_merge.h"
#include "engine/text/tokenizer_impl.h"
#include "engine/text/unicode.h"

namespace tc::text::detail {
namespace {


std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (const char c : text) {
    if (c == ' ') {
      out += kSpaceMarker;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class SpmTokenizer final : public TokenizerBase {
 public:
  explicit SpmTokenizer(Vocab vocab) : TokenizerBase(std::move(vocab)) {
    // llama.cpp's byte_to_token: "<0xXX>", else the one-byte piece.
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      const char name[7] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
      TokenId id = find_token(name);
      if (id < 0) id = find_token(std::string(1, static_cast<char>(b)));
      byte_tokens_[b] = id;
    }
    build_pieces();
  }

  std::vector<TokenId> encode(std::string_view text, EncodeOptions options) const override {
    const std::string clean = utf8_sanitize(text);
    std::vector<TokenId> out;
    if (options.add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
    bool prev_special = true;  // the text after a special token gets the space prefix too
    for (const Fragment& f : partition(clean, options.parse_special)) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      std::string escaped;
      if (vocab_.add_space_prefix && prev_special) escaped = kSpaceMarker;
      escaped += escape_spaces(f.text);
      tokenize(escaped, out);
      prev_special = false;
    }
    if (options.add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
    return out;
  }

 private:
  void append_normal_piece(const std::string& token_text, std::string& out) const override {
    append_unmarked(token_text, out);
  }

  float score(TokenId id) const {
    return vocab_.scores.empty() ? 0.0f : vocab_.scores[static_cast<size_t>(id)];
  }

  // `text` is valid UTF-8 with spaces already escaped.
  void tokenize(std::string_view text, std::vector<TokenId>& out) const {
    const auto piece_score = [&](std::string_view left, std::string_view right) -> std::optional<double> {
      // Adjacent views into `text`: the merged piece is their union.
      const TokenId id = find_token(std::string_view(left.data(), left.size() + right.size()));
      if (id < 0) return std::nullopt;
      return score(id);
    };
    for (const MergedSymbol& s : merge_bigrams(text, piece_score)) {
      const std::string_view piece = text.substr(s.offset, s.n);
      const TokenId id = find_token(piece);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      // Only single characters reach here (a merged symbol is always a
      // piece), so llama.cpp's rev_merge resegmentation never applies.
      for (const char c : piece) {
        const TokenId byte_id = byte_tokens_[static_cast<uint8_t>(c)];
        if (byte_id >= 0) {
          out.push_back(byte_id);
        } else if (vocab_.unk_id >= 0) {
          out.push_back(vocab_.unk_id);
        }
      }
    }
  }

  TokenId byte_tokens_[256];
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab) {
  return std::make_unique<SpmTokenizer>(std::move(vocab));
}

}  // namespace tc::text::detail
