// WordPiece (`tokenizer.ggml.model` = "bert"), the algorithm of llama.cpp's
// llm_tokenizer_wpm_session: BERT's normalizer and pre-splitter, then per
// word a greedy longest match of U+2581 + word against the vocab; a word with
// a position nothing matches becomes [UNK] as a whole.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/text/tokenizer_impl.h"
#include "engine/text/unicode.h"

namespace tc::text::detail {
namespace {


class WpmTokenizer final : public TokenizerBase {
 public:
  explicit WpmTokenizer(Vocab vocab) : TokenizerBase(std::move(vocab)) {
    for (const std::string& t : vocab_.tokens) max_token_len_ = std::max(max_token_len_, t.size());
    build_pieces();
  }

  std::vector<TokenId> encode(std::string_view text, EncodeOptions options) const override {
    const std::string clean = utf8_sanitize(text);
    std::vector<TokenId> out;
    const bool lower = vocab_.normalizer_lowercase;
    const bool strip = vocab_.normalizer_strip_accents;
    // llama.cpp adds [CLS] and [SEP] with the specials, whatever add_bos and
    // add_sep say.
    if (options.add_special && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
    for (const Fragment& f : partition(clean, options.parse_special)) {
      if (f.token >= 0) {
        out.push_back(f.token);
      } else {
        for (const std::string& word : wpm_words(f.text, lower, strip)) tokenize_word(word, out);
      }
    }
    if (options.add_special && vocab_.sep_id >= 0) out.push_back(vocab_.sep_id);
    return out;
  }

 private:
  void append_normal_piece(const std::string& token_text, std::string& out) const override {
    append_unmarked(token_text, out);
  }

  // Greedy longest match over the bytes of U+2581 + word, as llama.cpp does
  // it (a match may in principle end inside a character: the vocab decides).
  void tokenize_word(const std::string& word, std::vector<TokenId>& out) const {
    if (word.empty()) return;
    std::string marked;
    marked.reserve(kSpaceMarker.size() + word.size());
    marked += kSpaceMarker;
    marked += word;
    const std::string_view w = marked;
    const size_t n = w.size();
    const size_t start = out.size();
    for (size_t i = 0; i < n;) {
      TokenId id = -1;
      size_t j = std::min(n, i + max_token_len_);
      for (; j > i; --j) {
        id = find_token(w.substr(i, j - i));
        if (id >= 0) break;
      }
      if (id < 0) {
        out.resize(start);
        break;
      }
      out.push_back(id);
      i = j;
    }
    if (out.size() == start && vocab_.unk_id >= 0) out.push_back(vocab_.unk_id);
  }

  size_t max_token_len_ = 0;  // bytes of the longest token text
};

}  // namespace

std::unique_ptr<Tokenizer> make_wpm_tokenizer(Vocab vocab) {
  return std::make_unique<WpmTokenizer>(std::move(vocab));
}

}  // namespace tc::text::detail

namespace tc::text {

std::vector<std::string> wpm_words(std::string_view text, bool lowercase, bool strip_accents) {
  std::vector<std::string> words(1);
  for (size_t pos = 0; pos < text.size();) {
    char32_t c = utf8_decode(text, pos);
    if (strip_accents) c = nfd_first(c);
    if (is_whitespace(c)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    const Category cat = category(c);
    if (c == 0 || c == kReplacementChar || cat == Category::Other) continue;
    if (strip_accents && cat == Category::Mark) continue;
    const char32_t out = lowercase ? to_lower(c) : c;
    if (cat == Category::Punctuation || (c < 0x7F && cat == Category::Symbol) || is_bert_cjk(c)) {
      if (!words.back().empty()) words.emplace_back();
      utf8_append(words.back(), out);
      words.emplace_back();
    } else {
      utf8_append(words.back(), out);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace tc::text
