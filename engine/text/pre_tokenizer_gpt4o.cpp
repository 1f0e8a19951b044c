// The case-splitting regexes (tekken, gpt-4o, granite-embed-multi, tiny_aya,
// youtu) and llama.cpp's Kimi-K2 matcher. llama.cpp runs the former on its
// collapsed text, where \p{Lu}-style classes and the (?=[\p{L}])[^a-z]
// lookaheads only tell ASCII case apart: a non-ASCII letter counts as both
// upper and lower case, and that is what these matchers do.
#include "engine/text/pre_tokenizer_detail.h"

namespace tc::text::detail {

namespace {

struct CaseShape {
  bool marks;          // \p{M} counts as a letter of either case
  bool case_blind;     // every letter is both upper and lower (tiny_aya, youtu)
  bool contractions;   // an optional (?:'[sS]|...) after each letter word
  size_t max_digits;   // \p{N}{1,max_digits}
};

// [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C? at pos, U and W the
// upper and lower classes: the match end, or pos.
size_t case_word(const Span& s, size_t pos, const CaseShape& shape) {
  const uint8_t word_class = shape.marks ? (kLetter | kMark) : kLetter;
  const auto upper = [&](size_t p) {
    return s.has(p, word_class) && (shape.case_blind || !is_ascii_lower(s.cpt(p)));
  };
  const auto lower = [&](size_t p) {
    return s.has(p, word_class) && (shape.case_blind || !is_ascii_upper(s.cpt(p)));
  };
  // U*W+ from q: backtracking gives the longest U* whose next char is W.
  const auto upper_then_lower = [&](size_t q) -> size_t {
    const size_t k = s.run_end(q, upper);
    for (size_t j = k + 1; j-- > q;) {
      if (lower(j)) return s.run_end(j, lower);
    }
    return 0;
  };
  // U+W*
  const auto upper_run = [&](size_t q) -> size_t {
    const size_t k = s.run_end(q, upper);
    return k > q ? s.run_end(k, lower) : 0;
  };
  const char32_t c = s.cpt(pos);
  const bool lead = !is_newline(c) && !s.letter(pos) && !s.number(pos);
  // Each alternative tries the lead first, then backtracks to none.
  size_t e = lead ? upper_then_lower(pos + 1) : 0;
  if (e == 0) e = upper_then_lower(pos);
  if (e == 0 && lead) e = upper_run(pos + 1);
  if (e == 0) e = upper_run(pos);
  if (e == 0) return pos;
  return shape.contractions ? e + contraction(s, e, true) : e;
}

size_t case_split_word(const Span& s, size_t pos, const CaseShape& shape) {
  if (const size_t e = case_word(s, pos, shape); e > pos) return e;
  if (s.number(pos)) {
    size_t e = pos;
    while (e < s.end() && e - pos < shape.max_digits && s.number(e)) ++e;
    return e;
  }
  if (const size_t e = other_word(s, pos, OtherTail::kNewlinesSlash, true, false); e > pos) return e;
  return space_word(s, pos);
}

void split_case_shape(Span& s, const CaseShape& shape) {
  split_matches(s, [&](size_t p) { return case_split_word(s, p, shape); });
}

// llama.cpp's unicode_cpt_is_han: the CJK ideograph blocks.
bool is_han(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0x2CEB0 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Kimi-K2's [\p{Han}]+ | [^\r\n\p{L}\p{N}]?<letters, no Han>+ contraction? |
// \p{N}{1,3} | ` ?[^\s\p{L}\p{N}]+[\r\n]*` | the whitespace alternatives,
// as llama.cpp's hand-written matcher has them (letters only, no \p{M},
// and no case distinction).
size_t kimi_word(const Span& s, size_t pos) {
  const char32_t c = s.cpt(pos);
  if (is_han(c)) return s.run_end(pos, [&](size_t p) { return is_han(s.cpt(p)); });
  const auto word_letter = [&](size_t p) { return s.letter(p) && !is_han(s.cpt(p)); };
  const bool lead = !is_newline(c) && !s.letter(pos) && !s.number(pos);
  if (word_letter(pos) || (lead && word_letter(pos + 1))) {
    const size_t e = s.run_end(pos + 1, word_letter);
    return e + contraction(s, e, true);
  }
  if (s.number(pos)) {
    size_t e = pos;
    while (e < s.end() && e - pos < 3 && s.number(e)) ++e;
    return e;
  }
  if (const size_t e = other_word(s, pos, OtherTail::kNewlines, true, false); e > pos) return e;
  return space_word(s, pos);
}

}  // namespace

void split_tekken(Span& s) { split_case_shape(s, {false, false, false, 1}); }

void split_gpt4o(Span& s) { split_case_shape(s, {false, false, true, 3}); }

void split_granite_emb_multi(Span& s) { split_case_shape(s, {true, false, true, 3}); }

// \p{Lu}..\p{M} classes collapse to "letter or mark" in llama.cpp.
void split_tiny_aya_words(Span& s) { split_case_shape(s, {true, true, true, 3}); }

void split_youtu_words(Span& s) { split_case_shape(s, {true, true, true, 1}); }

void split_kimi_k2(Span& s) {
  split_matches(s, [&](size_t p) { return kimi_word(s, p); });
}

}  // namespace tc::text::detail
