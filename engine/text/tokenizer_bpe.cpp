// Byte-level BPE (`tokenizer.ggml.model` = "gpt2"), the algorithm of
// llama.cpp's llm_tokenizer_bpe: the pre-tokenizer splits the text into
// words, each word's bytes become GPT-2 byte chars, and the adjacent pair
// with the lowest merge rank is merged (leftmost on ties) until no ranked
// pair is left.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/text/pre_tokenizer.h"
#include "engine/text/bigram_merge.h"
#include "engine/text/tokenizer_impl.h"
#include "engine/text/unicode.h"

namespace tc::text::detail {
namespace {

class BpeTokenizer final : public TokenizerBase {
 public:
  explicit BpeTokenizer(Vocab vocab) : TokenizerBase(std::move(vocab)) {
    const auto pre = pre_tokenizer_from_name(vocab_.pre);
    if (!pre) {
      throw std::invalid_argument("unsupported tokenizer.ggml.pre '" + vocab_.pre +
                                  "'; supported: " + std::string(supported_pre_tokenizer_names()));
    }
    pre_ = *pre;
    ignore_merges_ = pre_tokenizer_ignores_merges(pre_);
    // "left right" -> rank; the first occurrence of a pair keeps its rank.
    ranks_ = StringIndex(vocab_.merges);
    build_pieces();
  }

  std::vector<TokenId> encode(std::string_view text, EncodeOptions options) const override {
    const std::string clean = utf8_sanitize(text);
    std::vector<TokenId> out;
    if (options.add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
    std::string encoded;
    for (const Fragment& f : partition(clean, options.parse_special)) {
      if (f.token >= 0) {
        out.push_back(f.token);
        continue;
      }
      for (const std::string_view word : pre_tokenize(pre_, f.text)) {
        encoded.clear();
        for (const char c : word) encoded += byte_to_unicode_utf8(static_cast<uint8_t>(c));
        tokenize_word(encoded, out);
      }
    }
    if (options.add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
    return out;
  }

 private:
  // Byte chars back to bytes; a char outside the 256 byte chars is kept as
  // its UTF-8 (llama.cpp would print "[UNK_BYTE_..]").
  void append_normal_piece(const std::string& token_text, std::string& out) const override {
    for (size_t pos = 0; pos < token_text.size();) {
      const size_t start = pos;
      const char32_t cpt = utf8_decode(token_text, pos);
      const int byte = unicode_to_byte(cpt);
      if (byte >= 0) {
        out.push_back(static_cast<char>(byte));
      } else {
        out.append(token_text, start, pos - start);
      }
    }
  }

  // `word` is the byte-char encoding of one pre-tokenized word.
  void tokenize_word(std::string_view word, std::vector<TokenId>& out) const {
    if (word.empty()) return;
    if (ignore_merges_) {
      const TokenId id = find_token(word);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
    }
    const auto merge_rank = [&](std::string_view left, std::string_view right) -> std::optional<double> {
      const int32_t rank = ranks_.find_pair(left, right);
      if (rank < 0) return std::nullopt;
      return -static_cast<double>(rank);  // lower rank merges first
    };
    for (const MergedSymbol& s : merge_bigrams(word, merge_rank)) {
      const std::string_view piece = word.substr(s.offset, s.n);
      const TokenId id = find_token(piece);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      // A merge whose result is not a token: fall back to the byte chars.
      for (size_t pos = 0; pos < piece.size();) {
        const size_t start = pos;
        utf8_decode(piece, pos);
        const TokenId char_id = find_token(piece.substr(start, pos - start));
        if (char_id >= 0) {
          out.push_back(char_id);
        } else if (vocab_.unk_id >= 0) {
          out.push_back(vocab_.unk_id);
        }
      }
    }
  }

  PreTokenizer pre_ = PreTokenizer::Default;
  bool ignore_merges_ = false;
  StringIndex ranks_;  // over vocab_.merges: "left right" -> rank
};

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab) {
  return std::make_unique<BpeTokenizer>(std::move(vocab));
}

}  // namespace tc::text::detail
