// Internals shared by the pre-tokenizer files: the text as codepoints with
// their category flags, the Span one regex pass splits, and the regex pieces
// several pre-tokenizers share. Not part of the public interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tc::text::detail {

enum : uint8_t {
  kLetter = 1,   // \p{L}
  kNumber = 2,   // \p{N}
  kSpace = 4,    // White_Space, what \s matches (llama.cpp maps non-ASCII ones to \v)
  kPunct = 8,    // \p{P}
  kSymbol = 16,  // \p{S}
  kMark = 32,    // \p{M}
};

struct Codepoints {
  std::vector<char32_t> cpts;
  std::vector<uint8_t> flags;
  std::vector<size_t> byte_offset;  // n + 1 entries
};

Codepoints decode_codepoints(std::string_view text);

inline bool is_ascii_upper(char32_t c) { return c >= 'A' && c <= 'Z'; }
inline bool is_ascii_lower(char32_t c) { return c >= 'a' && c <= 'z'; }
inline bool is_ascii_letter(char32_t c) { return is_ascii_upper(c) || is_ascii_lower(c); }
inline bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }
inline bool is_newline(char32_t c) { return c == '\r' || c == '\n'; }

// One piece [begin, end) of the text that a regex pass splits further. As
// with llama.cpp's regex iterator over the piece, positions at or past `end`
// behave like the end of the string: lookaheads and runs stop there.
class Span {
 public:
  static constexpr char32_t kEnd = 0xFFFFFFFF;

  Span(const Codepoints& c, size_t begin, size_t end, std::vector<size_t>& out)
      : c_(c), begin_(begin), end_(end), prev_(begin), out_(out) {}

  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  char32_t cpt(size_t p) const { return p < end_ ? c_.cpts[p] : kEnd; }
  // The codepoint as llama.cpp's std::wregex passes see it: non-ASCII
  // whitespace replaced by \v, so it never falls in a literal range.
  char32_t regex_cpt(size_t p) const {
    if (p >= end_) return kEnd;
    const char32_t c = c_.cpts[p];
    return (c > 0x7F && (c_.flags[p] & kSpace)) ? U'\v' : c;
  }
  uint8_t flags(size_t p) const { return p < end_ ? c_.flags[p] : 0; }
  bool has(size_t p, uint8_t mask) const { return (flags(p) & mask) != 0; }
  bool letter(size_t p) const { return has(p, kLetter); }
  bool number(size_t p) const { return has(p, kNumber); }
  bool space(size_t p) const { return has(p, kSpace); }
  // [^\s\p{L}\p{N}] (inside the piece)
  bool other(size_t p) const { return p < end_ && !has(p, kLetter | kNumber | kSpace); }
  // First position at or after p where `pred` fails (or end).
  template <typename Pred>
  size_t run_end(size_t p, Pred pred) const {
    while (p < end_ && pred(p)) ++p;
    return p;
  }

  // Closes the current word at `e` (an empty word is dropped) and returns e.
  size_t emit(size_t e) {
    if (e > prev_) out_.push_back(e - prev_);
    prev_ = e;
    return e;
  }

 private:
  const Codepoints& c_;
  size_t begin_;
  size_t end_;
  size_t prev_;
  std::vector<size_t>& out_;
};

// One regex pass: splits the span's piece into words via s.emit.
using Pass = void (*)(Span& s);

// A regex applied as llama.cpp's std::regex_iterator loop does: at each
// position `match(p)` gives the end of the leftmost-first match there, or p
// for none; the text between matches stays one word.
template <typename Match>
void split_matches(Span& s, Match match) {
  for (size_t p = s.begin(); p < s.end();) {
    const size_t e = match(p);
    if (e > p) {
      s.emit(p);
      p = s.emit(e);
    } else {
      ++p;
    }
  }
  s.emit(s.end());
}

// Runs of `pred` cut into pieces of at most `max_len`: [X]{1,max_len}.
template <typename Pred>
void split_runs(Span& s, Pred pred, size_t max_len) {
  split_matches(s, [&](size_t p) {
    size_t e = p;
    while (e < s.end() && e - p < max_len && pred(e)) ++e;
    return e;
  });
}

// (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]) at pos, or the
// case-sensitive 's|'t|... of GPT-2: the match length, 0 when none.
size_t contraction(const Span& s, size_t pos, bool ignore_case);
// \s*[\r\n]+|\s+(?!\S)|\s+ at pos (\s*[\r\n] ends at the same place): the
// match end, pos when pos is not whitespace.
size_t space_word(const Span& s, size_t pos);
// What may follow ` ?[^\s\p{L}\p{N}]+`: nothing, [\r\n], or [\r\n/].
enum class OtherTail { kNone, kNewlines, kNewlinesSlash };
// ` ?[^\s\p{L}\p{N}]+` at pos followed by the `tail` class repeated (at most
// once when !tail_repeats); `exclude_marks` drops \p{M} from the run class.
// The match end, or pos.
size_t other_word(const Span& s, size_t pos, OtherTail tail, bool tail_repeats, bool exclude_marks);

// Passes shared across families (pre_tokenizer.cpp).
void split_number_runs(Span& s);     // \p{N}+
void split_each_number(Span& s);     // \p{N}
void split_number_triples(Span& s);  // \p{N}{1,3}
// AFMoE/Tiny Aya's custom digit split: each \p{N} run cut into a leading
// 1-2 digits then threes; the text before a run is glued to its first group.
void split_digits_from_right(Span& s);

// pre_tokenizer_gpt2.cpp
void split_gpt2(Span& s);
void split_default_punct(Span& s);  // [\p{P}$+<=>^~|]+
void split_falcon_punct(Span& s);   // [\p{P}$+<=>^~|`]+
void split_digit_triples(Span& s);  // [0-9]{3}
void split_chameleon_sentinels(Span& s);   // <sentinel:[0-9]+>
void split_chameleon_images(Span& s);      // (IMGIMG)((A|B|...|I){1,4})Z
void split_chameleon_whitespace(Span& s);  // ([\t\n]|    |  )
void split_chameleon_punct(Span& s);       // [\p{P}!-/:-@\[-`{-~]

// pre_tokenizer_llama3.cpp
void split_llama3(Span& s);
void split_qwen2(Span& s);
void split_qwen35(Span& s);
void split_jais2(Span& s);
void split_seed_coder(Span& s);
void split_minicpm5_words(Span& s);
void split_exaone_moe(Span& s);
void split_newline_runs(Span& s);  // [^\n]+|[\n]+

// pre_tokenizer_gpt4o.cpp
void split_tekken(Span& s);
void split_gpt4o(Span& s);
void split_granite_emb_multi(Span& s);
void split_tiny_aya_words(Span& s);
void split_youtu_words(Span& s);
void split_kimi_k2(Span& s);

// pre_tokenizer_scripts.cpp
void split_each_newline(Span& s);           // [\r\n]
void split_deepseek_llm_letters(Span& s);   // \s?[A-Za-zµÀ-ÖØ-ö...]+
void split_deepseek_llm_punct(Span& s);     // \s?[!-/:-~！-／：-～‘-‟　-。]+
void split_trailing_space(Span& s);         // \s+$
void split_deepseek_cjk_hangul(Span& s);    // [一-龥ࠀ-一가-퟿]+
void split_space_letters(Span& s);          // \s?\p{L}+
void split_space_punct(Span& s);            // \s?\p{P}+
void split_cjk_kana(Span& s);               // [一-龥぀-ゟ゠-ヿ]+
void split_deepseek3_words(Span& s);
void split_afmoe_scripts(Span& s);
void split_youtu_scripts(Span& s);
void split_bloom(Span& s);                  //  ?[^(\s|.,!?…。，、।۔،)]+
void split_superbpe_digits(Span& s);        // (?=(\d{3})+(?!\d))

}  // namespace tc::text::detail
