// Hand-written matchers for the pre-tokenizer regexes, with the semantics of
// a backtracking regex engine (leftmost alternative wins, greedy runs,
// `\s+(?!\S)` leaving the last space of a run to the next word), as in
// llama.cpp's unicode.cpp. Words are computed over codepoints, then mapped
// back to byte ranges.
#include "engine/text/pre_tokenizer.h"

#include <cstdint>

#include "engine/text/unicode.h"

namespace tc::text {

std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name) {
  if (name.empty() || name == "default") return PreTokenizer::Default;
  if (name == "gpt2" || name == "gpt-2") return PreTokenizer::Gpt2;
  if (name == "llama3" || name == "llama-v3" || name == "llama-bpe") return PreTokenizer::Llama3;
  if (name == "qwen2" || name == "deepseek-r1-qwen") return PreTokenizer::Qwen2;
  return std::nullopt;
}

std::string_view supported_pre_tokenizer_names() {
  return "\"default\", \"gpt2\", \"gpt-2\", \"llama3\", \"llama-v3\", \"llama-bpe\", \"qwen2\", "
         "\"deepseek-r1-qwen\"";
}

bool pre_tokenizer_ignores_merges(PreTokenizer pre) { return pre == PreTokenizer::Llama3; }
bool pre_tokenizer_default_add_bos(PreTokenizer pre) { return pre == PreTokenizer::Llama3; }

namespace {

enum : uint8_t {
  kLetter = 1,
  kNumber = 2,
  kSpace = 4,       // White_Space, regex \s
  kDefaultPunct = 8 // [\p{P}$+<=>^~|], llama.cpp's "default" first split
};

struct Codepoints {
  std::vector<char32_t> cpts;
  std::vector<uint8_t> flags;
  std::vector<size_t> byte_offset;  // n + 1 entries
};

Codepoints decode(std::string_view text) {
  Codepoints c;
  c.cpts.reserve(text.size());
  c.flags.reserve(text.size());
  c.byte_offset.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    c.byte_offset.push_back(pos);
    const char32_t cpt = utf8_decode(text, pos);
    uint8_t f = 0;
    switch (category(cpt)) {
      case Category::Letter: f |= kLetter; break;
      case Category::Number: f |= kNumber; break;
      case Category::Punctuation: f |= kDefaultPunct; break;
      default: break;
    }
    if (cpt == '$' || cpt == '+' || cpt == '<' || cpt == '=' || cpt == '>' || cpt == '^' ||
        cpt == '~' || cpt == '|') {
      f |= kDefaultPunct;
    }
    if (is_whitespace(cpt)) f |= kSpace;
    c.cpts.push_back(cpt);
    c.flags.push_back(f);
  }
  c.byte_offset.push_back(text.size());
  return c;
}

// One piece [ini, end) of the text being split further; positions at or past
// `end` behave like the end of the string (lookaheads and runs stop there).
class Span {
 public:
  Span(const Codepoints& c, size_t ini, size_t end, std::vector<size_t>& out)
      : c_(c), end_(end), prev_(ini), out_(out) {}

  size_t end() const { return end_; }
  char32_t cpt(size_t p) const { return p < end_ ? c_.cpts[p] : 0xFFFFFFFF; }
  bool letter(size_t p) const { return p < end_ && (c_.flags[p] & kLetter); }
  bool number(size_t p) const { return p < end_ && (c_.flags[p] & kNumber); }
  bool space(size_t p) const { return p < end_ && (c_.flags[p] & kSpace); }
  // [^\s\p{L}\p{N}]
  bool other(size_t p) const {
    return p < end_ && !(c_.flags[p] & (kLetter | kNumber | kSpace));
  }
  bool has(size_t p, uint8_t flag) const { return p < end_ && (c_.flags[p] & flag); }

  // Closes the current word at `e` and returns e (the new position).
  size_t emit(size_t e) {
    if (e > prev_) out_.push_back(e - prev_);
    prev_ = e;
    return e;
  }

 private:
  const Codepoints& c_;
  size_t end_;
  size_t prev_;
  std::vector<size_t>& out_;
};

char32_t ascii_lower(char32_t c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }

// 's|'t|'re|'ve|'m|'ll|'d at pos: the match length, 0 when none.
size_t contraction(const Span& s, size_t pos, bool ignore_case) {
  if (s.cpt(pos) != '\'' || pos + 1 >= s.end()) return 0;
  const auto lower = [&](char32_t c) { return ignore_case ? ascii_lower(c) : c; };
  const char32_t c1 = lower(s.cpt(pos + 1));
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= s.end()) return 0;
  const char32_t c2 = lower(s.cpt(pos + 2));
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// Length of the whitespace run at pos.
size_t space_run(const Span& s, size_t pos) {
  size_t n = 0;
  while (s.space(pos + n)) ++n;
  return n;
}

void split_gpt2(Span s, size_t pos) {
  while (pos < s.end()) {
    if (const size_t n = contraction(s, pos, false)) {
      pos = s.emit(pos + n);
      continue;
    }
    const size_t q = pos + (s.cpt(pos) == ' ' ? 1 : 0);  // the optional leading space
    if (s.letter(q)) {
      size_t p = q;
      while (s.letter(p)) ++p;
      pos = s.emit(p);
      continue;
    }
    if (s.number(q)) {
      size_t p = q;
      while (s.number(p)) ++p;
      pos = s.emit(p);
      continue;
    }
    if (s.other(q)) {
      size_t p = q;
      while (s.other(p)) ++p;
      pos = s.emit(p);
      continue;
    }
    const size_t n = space_run(s, pos);
    if (n > 1 && pos + n < s.end()) {  // \s+(?!\S): leave the last space
      pos = s.emit(pos + n - 1);
    } else if (n > 0) {
      pos = s.emit(pos + n);
    } else {
      pos = s.emit(pos + 1);
    }
  }
}

void split_llama3(Span s, size_t pos, size_t max_digits) {
  while (pos < s.end()) {
    const char32_t c = s.cpt(pos);
    if (const size_t n = contraction(s, pos, true)) {
      pos = s.emit(pos + n);
      continue;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (c != '\r' && c != '\n' && !s.number(pos) && (s.letter(pos) || s.letter(pos + 1))) {
      size_t p = pos + 1;
      while (s.letter(p)) ++p;
      pos = s.emit(p);
      continue;
    }
    // \p{N}{1,max_digits}
    if (s.number(pos)) {
      size_t p = pos;
      while (s.number(p) && p - pos < max_digits) ++p;
      pos = s.emit(p);
      continue;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const size_t q = pos + (c == ' ' ? 1 : 0);
    if (s.other(q)) {
      size_t p = q;
      while (s.other(p)) ++p;
      while (s.cpt(p) == '\r' || s.cpt(p) == '\n') ++p;
      pos = s.emit(p);
      continue;
    }
    size_t n = 0;
    size_t last_newline_end = 0;
    while (s.space(pos + n)) {
      const char32_t w = s.cpt(pos + n);
      ++n;
      if (w == '\r' || w == '\n') last_newline_end = pos + n;
    }
    if (last_newline_end > 0) {  // \s*[\r\n]+
      pos = s.emit(last_newline_end);
    } else if (n > 1 && pos + n < s.end()) {  // \s+(?!\S)
      pos = s.emit(pos + n - 1);
    } else if (n > 0) {  // \s+
      pos = s.emit(pos + n);
    } else {
      pos = s.emit(pos + 1);
    }
  }
}

// Splits into maximal runs of `flag` and the gaps between them ([X]+ with a
// regex iterator keeps the unmatched gaps as words too).
void split_runs(Span s, size_t pos, uint8_t flag) {
  while (pos < s.end()) {
    size_t p = pos;
    const bool in_run = s.has(p, flag);
    while (p < s.end() && s.has(p, flag) == in_run) ++p;
    pos = s.emit(p);
  }
}

// Splits out every group of three ASCII digits, left to right.
void split_digit_triples(Span s, size_t pos) {
  const auto digit = [&](size_t p) { return s.cpt(p) >= '0' && s.cpt(p) <= '9'; };
  while (pos + 3 <= s.end()) {
    if (digit(pos) && digit(pos + 1) && digit(pos + 2)) {
      s.emit(pos);
      pos = s.emit(pos + 3);
    } else {
      ++pos;
    }
  }
  s.emit(s.end());
}

// Applies `split` to every current word, producing the refined word lengths.
template <typename Split>
std::vector<size_t> refine(const Codepoints& c, const std::vector<size_t>& lengths, Split split) {
  std::vector<size_t> out;
  out.reserve(lengths.size() * 2);
  size_t start = 0;
  for (const size_t len : lengths) {
    split(Span(c, start, start + len, out), start);
    start += len;
  }
  return out;
}

}  // namespace

std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text) {
  if (text.empty()) return {};
  const Codepoints c = decode(text);
  std::vector<size_t> lengths{c.cpts.size()};
  switch (pre) {
    case PreTokenizer::Default:
      lengths = refine(c, lengths, [](Span s, size_t p) { split_runs(s, p, kDefaultPunct); });
      lengths = refine(c, lengths, [](Span s, size_t p) { split_gpt2(s, p); });
      lengths = refine(c, lengths, [](Span s, size_t p) { split_runs(s, p, kNumber); });
      lengths = refine(c, lengths, [](Span s, size_t p) { split_digit_triples(s, p); });
      break;
    case PreTokenizer::Gpt2:
      lengths = refine(c, lengths, [](Span s, size_t p) { split_gpt2(s, p); });
      break;
    case PreTokenizer::Llama3:
      lengths = refine(c, lengths, [](Span s, size_t p) { split_llama3(s, p, 3); });
      break;
    case PreTokenizer::Qwen2:
      lengths = refine(c, lengths, [](Span s, size_t p) { split_llama3(s, p, 1); });
      break;
  }
  std::vector<std::string_view> words;
  words.reserve(lengths.size());
  size_t start = 0;
  for (const size_t len : lengths) {
    const size_t b0 = c.byte_offset[start];
    const size_t b1 = c.byte_offset[start + len];
    words.push_back(text.substr(b0, b1 - b0));
    start += len;
  }
  return words;
}

}  // namespace tc::text
