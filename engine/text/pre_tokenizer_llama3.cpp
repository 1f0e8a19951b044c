// The Llama-3-shaped regexes (llama3, qwen2, qwen35, jais-2, seed-coder,
// minicpm5, exaone-moe, laguna): contractions, [^\r\n\p{L}\p{N}]?-led letter
// words, capped digit runs, ` ?[^\s\p{L}\p{N}]+` with a newline tail, then
// the whitespace alternatives.
#include <cstdint>

#include "engine/text/pre_tokenizer_detail.h"

namespace tc::text::detail {

namespace {

enum class Words {
  kLetters,       // \p{L}+
  kLettersMarks,  // [\p{L}\p{M}]+ (and the other-run excludes \p{M})
  kSpaced,        // (?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+
};

struct Shape {
  size_t max_digits;  // \p{N}{1,max_digits}
  Words words;
  OtherTail tail;
  bool tail_repeats;
  bool cascade_spaces;  // jais-2's \s{512}(?!\S)|...|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}
};

// jais-2's whitespace after \s*[\r\n]+: the longest of 512, 256, ..., 4,
// then 2 or 1 chars that is followed by whitespace or the end; else 1.
size_t cascade_space_word(const Span& s, size_t pos) {
  const size_t end = s.run_end(pos, [&](size_t p) { return s.space(p); });
  if (end == pos) return pos;
  for (size_t p = pos; p < end; ++p) {
    if (is_newline(s.cpt(p))) return space_word(s, pos);  // \s*[\r\n]+ comes first
  }
  const size_t n = end - pos;
  const bool at_end = end == s.end();
  const auto fits = [&](size_t k) { return k < n || (k == n && at_end); };  // \s{k}(?!\S)
  for (size_t k = 512; k >= 4; k /= 2) {
    if (fits(k)) return pos + k;
  }
  if (fits(2)) return pos + 2;
  return pos + 1;  // \s{1}(?!\S) or \s{1}
}

size_t letter_word(const Span& s, size_t pos, Words words) {
  const char32_t c = s.cpt(pos);
  // The optional [^\r\n\p{L}\p{N}] lead; \p{M} chars are leads too.
  const bool lead = !is_newline(c) && !s.letter(pos) && !s.number(pos);
  if (words == Words::kSpaced) {
    const size_t q = lead ? pos + 1 : pos;
    if (!s.letter(q)) return pos;
    size_t p = q;
    while (true) {
      if (s.letter(p)) {
        ++p;
      } else if (s.cpt(p) == ' ' && s.letter(p + 1)) {
        p += 2;
      } else {
        break;
      }
      p = s.run_end(p, [&](size_t i) { return s.has(i, kMark); });
    }
    return p;
  }
  const uint8_t word_class = words == Words::kLettersMarks ? (kLetter | kMark) : kLetter;
  const auto in_word = [&](size_t p) { return s.has(p, word_class); };
  // Either pos is a word char, or it leads one: the word runs on from pos+1.
  if (in_word(pos) || (lead && in_word(pos + 1))) return s.run_end(pos + 1, in_word);
  return pos;
}

size_t llama3_word(const Span& s, size_t pos, const Shape& shape) {
  if (const size_t n = contraction(s, pos, true)) return pos + n;
  if (const size_t e = letter_word(s, pos, shape.words); e > pos) return e;
  if (s.number(pos)) {
    size_t e = pos;
    while (e < s.end() && e - pos < shape.max_digits && s.number(e)) ++e;
    return e;
  }
  if (const size_t e = other_word(s, pos, shape.tail, shape.tail_repeats, shape.words == Words::kLettersMarks);
      e > pos) {
    return e;
  }
  return shape.cascade_spaces ? cascade_space_word(s, pos) : space_word(s, pos);
}

void split_shape(Span& s, const Shape& shape) {
  split_matches(s, [&](size_t p) { return llama3_word(s, p, shape); });
}

}  // namespace

void split_llama3(Span& s) { split_shape(s, {3, Words::kLetters, OtherTail::kNewlines, true, false}); }

void split_qwen2(Span& s) { split_shape(s, {1, Words::kLetters, OtherTail::kNewlines, true, false}); }

void split_qwen35(Span& s) { split_shape(s, {1, Words::kLettersMarks, OtherTail::kNewlines, true, false}); }

void split_jais2(Span& s) { split_shape(s, {3, Words::kLetters, OtherTail::kNewlines, true, true}); }

// ` ?[^\s\p{L}\p{N}\r\n]+` without a tail.
void split_seed_coder(Span& s) { split_shape(s, {1, Words::kLetters, OtherTail::kNone, false, false}); }

// The second minicpm5 regex: \p{N}+ where Llama-3 has \p{N}{1,3}.
void split_minicpm5_words(Span& s) {
  split_shape(s, {SIZE_MAX, Words::kLetters, OtherTail::kNewlines, true, false});
}

// ` ?[^\s\p{L}\p{N}]+[\r\n/]?` and \s*[\r\n] (which ends where \s*[\r\n]+ does).
void split_exaone_moe(Span& s) { split_shape(s, {1, Words::kSpaced, OtherTail::kNewlinesSlash, false, false}); }

void split_newline_runs(Span& s) {
  for (size_t p = s.begin(); p < s.end();) {
    const bool newline = s.cpt(p) == '\n';
    p = s.emit(s.run_end(p, [&](size_t i) { return (s.cpt(i) == '\n') == newline; }));
  }
}

}  // namespace tc::text::detail
