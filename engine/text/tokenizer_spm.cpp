// SentencePiece-style BPE (`tokenizer.ggml.model` = "llama"), the algorithm
// of llama.cpp's llm_tokenizer_spm: spaces become U+2581, the text is split
// into characters, and the adjacent pair whose concatenation is the
// highest-scoring vocab piece is merged (leftmost on ties) until none is
// left; symbols that are not pieces fall back to <0xXX> byte tokens.
#include <queue>
#include <string>
#include <vector>

#include "engine/text/tokenizer_impl.h"
#include "engine/text/unicode.h"

namespace tc::text::detail {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581

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
  struct Symbol {
    int prev;
    int next;
    uint32_t offset;
    uint32_t n;  // bytes; 0 once merged into the symbol on its left
  };
  struct Bigram {
    int left;
    int right;
    float score;
    uint32_t size;
  };
  struct BigramOrder {
    bool operator()(const Bigram& l, const Bigram& r) const {
      return l.score < r.score || (l.score == r.score && l.left > r.left);
    }
  };

  std::string normal_piece(const std::string& token_text) const override {
    std::string out;
    out.reserve(token_text.size());
    for (size_t i = 0; i < token_text.size();) {
      if (token_text.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
        out.push_back(' ');
        i += kSpaceMarker.size();
      } else {
        out.push_back(token_text[i++]);
      }
    }
    return out;
  }

  float score(TokenId id) const {
    return vocab_.scores.empty() ? 0.0f : vocab_.scores[static_cast<size_t>(id)];
  }

  // `text` is valid UTF-8 with spaces already escaped.
  void tokenize(std::string_view text, std::vector<TokenId>& out) const {
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) {
      size_t len = utf8_sequence_length(static_cast<uint8_t>(text[offset]));
      if (len == 0 || offset + len > text.size()) len = 1;  // cannot happen after sanitizing
      const int index = static_cast<int>(symbols.size());
      symbols.push_back({index - 1, offset + len == text.size() ? -1 : index + 1,
                         static_cast<uint32_t>(offset), static_cast<uint32_t>(len)});
      offset += len;
    }
    if (symbols.empty()) return;

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    const auto try_add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      const Symbol& l = symbols[static_cast<size_t>(left)];
      const Symbol& r = symbols[static_cast<size_t>(right)];
      const TokenId id = find_token(text.substr(l.offset, l.n + r.n));
      if (id < 0) return;
      queue.push({left, right, score(id), l.n + r.n});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Symbol& l = symbols[static_cast<size_t>(b.left)];
      Symbol& r = symbols[static_cast<size_t>(b.right)];
      // Stale when either side has changed since the pair was queued.
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }

    for (int i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
      const Symbol& s = symbols[static_cast<size_t>(i)];
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
