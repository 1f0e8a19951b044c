// The GPT-2 regex and the pass chains that end in it (default, falcon,
// starcoder, chameleon): 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
// ?[^\s\p{L}\p{N}]+|\s+(?!\S), and the punctuation/digit passes before it.
#include "engine/text/pre_tokenizer_detail.h"

namespace tc::text::detail {

namespace {

// The GPT-2 regex at pos: the match end, or pos (a lone whitespace char
// before a non-space matches no alternative and stays a word of its own).
size_t gpt2_word(const Span& s, size_t pos) {
  if (const size_t n = contraction(s, pos, false)) return pos + n;
  const size_t q = pos + (s.cpt(pos) == ' ' ? 1 : 0);  // the optional leading space
  if (s.letter(q)) return s.run_end(q, [&](size_t p) { return s.letter(p); });
  if (s.number(q)) return s.run_end(q, [&](size_t p) { return s.number(p); });
  if (s.other(q)) return s.run_end(q, [&](size_t p) { return s.other(p); });
  const size_t end = s.run_end(pos, [&](size_t p) { return s.space(p); });
  if (end == s.end()) return end;           // \s+ up to the end of the piece
  if (end - pos > 1) return end - 1;        // \s+(?!\S) leaves the last one
  return pos;
}

// [$+<=>^~|] and, for falcon, the backtick: the ASCII symbols the default
// punctuation class adds to \p{P}.
bool default_symbol(char32_t c, bool backtick) {
  return c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|' ||
         (backtick && c == '`');
}

bool has_prefix(const Span& s, size_t pos, std::string_view lit) {
  for (size_t i = 0; i < lit.size(); ++i) {
    if (s.cpt(pos + i) != static_cast<unsigned char>(lit[i])) return false;
  }
  return true;
}

}  // namespace

void split_gpt2(Span& s) {
  split_matches(s, [&](size_t p) { return gpt2_word(s, p); });
}

void split_default_punct(Span& s) {
  split_runs(s, [&](size_t p) { return s.has(p, kPunct) || default_symbol(s.cpt(p), false); }, SIZE_MAX);
}

void split_falcon_punct(Span& s) {
  split_runs(s, [&](size_t p) { return s.has(p, kPunct) || default_symbol(s.cpt(p), true); }, SIZE_MAX);
}

void split_digit_triples(Span& s) {
  split_matches(s, [&](size_t p) {
    const bool triple = is_ascii_digit(s.cpt(p)) && is_ascii_digit(s.cpt(p + 1)) && is_ascii_digit(s.cpt(p + 2));
    return triple ? p + 3 : p;
  });
}

void split_chameleon_sentinels(Span& s) {
  constexpr std::string_view kOpen = "<sentinel:";
  split_matches(s, [&](size_t p) {
    if (!has_prefix(s, p, kOpen)) return p;
    const size_t digits = p + kOpen.size();
    const size_t e = s.run_end(digits, [&](size_t i) { return is_ascii_digit(s.cpt(i)); });
    return (e > digits && s.cpt(e) == '>') ? e + 1 : p;
  });
}

void split_chameleon_images(Span& s) {
  constexpr std::string_view kOpen = "IMGIMG";
  split_matches(s, [&](size_t p) {
    if (!has_prefix(s, p, kOpen)) return p;
    const size_t codes = p + kOpen.size();
    // (A|...|I){1,4} then Z: backtracking to fewer codes only ever finds
    // another code letter where the Z should be.
    size_t e = codes;
    while (e < codes + 4 && s.cpt(e) >= 'A' && s.cpt(e) <= 'I') ++e;
    return (e > codes && s.cpt(e) == 'Z') ? e + 1 : p;
  });
}

void split_chameleon_whitespace(Span& s) {
  split_matches(s, [&](size_t p) {
    if (s.cpt(p) == '\t' || s.cpt(p) == '\n') return p + 1;
    if (has_prefix(s, p, "    ")) return p + 4;
    if (has_prefix(s, p, "  ")) return p + 2;
    return p;
  });
}

void split_chameleon_punct(Span& s) {
  // \p{P} plus the ASCII ranges !-/ :-@ [-` {-~ (all ASCII punctuation and symbols).
  split_runs(s, [&](size_t p) {
    const char32_t c = s.cpt(p);
    return s.has(p, kPunct) || (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
  }, 1);
}

}  // namespace tc::text::detail
