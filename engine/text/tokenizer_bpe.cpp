// BPE by merge rank, the algorithm of llama.cpp's llm_tokenizer_bpe: the
// pre-tokenizer splits the text into words, and the adjacent pair with the
// lowest merge rank is merged (leftmost on ties) until no ranked pair is
// left. Byte-level (`gpt2`): a word's bytes become GPT-2 byte chars first.
// Gemma 4 (`gemma4`, or pre-tokenizer "gemma4"): spaces become U+2581 and
// the merges run over the raw UTF-8, with <0xXX> byte tokens as fallback.
#include <array>
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
    const auto pre = vocab_.kind == TokenizerKind::Gemma4 ? PreTokenizer::Gemma4 : pre_tokenizer_from_name(vocab_.pre);
    if (!pre) {
      throw std::invalid_argument("unsupported tokenizer.ggml.pre '" + vocab_.pre +
                                  "'; supported: " + std::string(supported_pre_tokenizer_names()));
    }
    pre_ = *pre;
    ignore_merges_ = pre_tokenizer_ignores_merges(pre_);
    raw_utf8_ = pre_ == PreTokenizer::Gemma4;
    if (raw_utf8_) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      for (int b = 0; b < 256; ++b) {
        byte_ids_[static_cast<size_t>(b)] = find_token(std::string{'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'});
      }
    }
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
      if (raw_utf8_) {
        encode_raw_utf8(f.text, encoded, out);
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
  // its UTF-8 (llama.cpp would print "[UNK_BYTE_..]"). Raw UTF-8: U+2581
  // back to a space.
  void append_normal_piece(const std::string& token_text, std::string& out) const override {
    if (raw_utf8_) {
      for (size_t pos = 0; pos < token_text.size();) {
        const size_t marker = token_text.find(kSpaceMarker, pos);
        out.append(token_text, pos, marker == std::string::npos ? std::string::npos : marker - pos);
        if (marker == std::string::npos) break;
        out.push_back(' ');
        pos = marker + kSpaceMarker.size();
      }
      return;
    }
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

  // The word's characters merged by rank.
  std::vector<MergedSymbol> merge(std::string_view word) const {
    return merge_bigrams(word, [&](std::string_view left, std::string_view right) -> std::optional<double> {
      const int32_t rank = ranks_.find_pair(left, right);
      if (rank < 0) return std::nullopt;
      return -static_cast<double>(rank);  // lower rank merges first
    });
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
    for (const MergedSymbol& s : merge(word)) {
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

  // Gemma 4: every space of the fragment becomes U+2581 (llama.cpp's
  // escape_whitespaces), then each word of the newline split is merged over
  // its UTF-8 characters. A newline run that is a token is taken whole.
  void encode_raw_utf8(std::string_view text, std::string& escaped, std::vector<TokenId>& out) const {
    escaped.clear();
    for (const char c : text) {
      if (c == ' ') {
        escaped += kSpaceMarker;
      } else {
        escaped.push_back(c);
      }
    }
    for (const std::string_view word : pre_tokenize(pre_, escaped)) {
      if (word.find_first_not_of('\n') == std::string_view::npos) {
        if (const TokenId id = find_token(word); id >= 0) {
          out.push_back(id);
          continue;
        }
      }
      for (const MergedSymbol& s : merge(word)) {
        const std::string_view piece = word.substr(s.offset, s.n);
        if (const TokenId id = find_token(piece); id >= 0) {
          out.push_back(id);
          continue;
        }
        // Each byte as its <0xXX> token; a byte without one is dropped, as
        // llama.cpp drops it.
        for (const char c : piece) {
          const TokenId byte_id = byte_ids_[static_cast<uint8_t>(c)];
          if (byte_id >= 0) out.push_back(byte_id);
        }
      }
    }
  }

  PreTokenizer pre_ = PreTokenizer::Default;
  bool ignore_merges_ = false;
  bool raw_utf8_ = false;              // Gemma 4: no byte-level chars, spaces as U+2581
  std::array<TokenId, 256> byte_ids_{};  // raw_utf8_: the <0xXX> token of each byte, -1 if none
  StringIndex ranks_;  // over vocab_.merges: "left right" -> rank
};

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab) {
  return std::make_unique<BpeTokenizer>(std::move(vocab));
}

}  // namespace tc::text::detail
