// Regexes over literal codepoint ranges rather than categories: DeepSeek
// LLM/Coder/V3, AFMoE's and Youtu's script classes, Bloom's separators and
// SuperBPE's digit grouping. llama.cpp runs them through std::wregex with
// non-ASCII whitespace replaced by \v, so a range never matches whitespace.
#include <span>

#include "engine/text/pre_tokenizer_detail.h"

namespace tc::text::detail {

namespace {

struct Range {
  char32_t first;
  char32_t last;
};

bool in_ranges(char32_t c, std::span<const Range> ranges) {
  for (const Range& r : ranges) {
    if (c >= r.first && c <= r.last) return true;
  }
  return false;
}

// DeepSeek LLM's letter class [A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃] (cased letters of
// Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, ...).
constexpr Range kDeepseekLetters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},   {0x00D8, 0x00F6},
    {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},   {0x0295, 0x02AF},   {0x0370, 0x0373},
    {0x0376, 0x0377},   {0x037B, 0x037D},   {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},
    {0x038C, 0x038C},   {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]: note that :-~ takes in the ASCII letters.
constexpr Range kDeepseekPunct[] = {
    {0x0021, 0x002F}, {0x003A, 0x007E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
};
// [一-龥ࠀ-一가-퟿]: everything from U+0800 to the end of the CJK block, and Hangul.
constexpr Range kDeepseekCjkHangul[] = {{0x0800, 0x9FA5}, {0xAC00, 0xD7FF}};
// [一-龥぀-ゟ゠-ヿ]: CJK ideographs, Hiragana, Katakana.
constexpr Range kCjkKana[] = {{0x3040, 0x30FF}, {0x4E00, 0x9FA5}};
// AFMoE's [一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]
// merged (its 豈 is U+8C48, so one range runs from U+4E00 to U+FAFF).
constexpr Range kAfmoeScripts[] = {
    {0x0E40, 0x0EFF}, {0x1000, 0x109F}, {0x1100, 0x11FF}, {0x1780, 0x17FF}, {0x2F00, 0x2FDF},
    {0x3040, 0x30FF}, {0x3400, 0x4DBF}, {0x4E00, 0xFAFF}, {0xFF65, 0xFF9F},
};
// Youtu's four alternatives: [가-힣ㄱ-ㆎ]+ | [！…“”‘’—：；，、-〿︰-﹏]+ | [ㄅ-ㄯ]+ | [一-龥぀-ゟ゠-ヿ]+
constexpr Range kYoutuHangul[] = {{0x3131, 0x318E}, {0xAC00, 0xD7A3}};
constexpr Range kYoutuPunct[] = {
    {0x2014, 0x2014}, {0x2018, 0x2019}, {0x201C, 0x201D}, {0x2026, 0x2026}, {0x3001, 0x303F},
    {0xFE30, 0xFE4F}, {0xFF01, 0xFF01}, {0xFF0C, 0xFF0C}, {0xFF1A, 0xFF1B},
};
constexpr Range kYoutuBopomofo[] = {{0x3105, 0x312F}};
// Bloom's [^(\s|.,!?…。，、।۔،)]: the listed characters and whitespace end a word.
constexpr Range kBloomSeparators[] = {
    {'!', '!'},       {'(', ')'},       {',', ','},       {'.', '.'},       {'?', '?'},
    {'|', '|'},       {0x060C, 0x060C}, {0x06D4, 0x06D4}, {0x0964, 0x0964}, {0x2026, 0x2026},
    {0x3001, 0x3002}, {0xFF0C, 0xFF0C},
};

// [X]+ over a range class.
void split_range_runs(Span& s, std::span<const Range> ranges) {
  split_runs(s, [&](size_t p) { return in_ranges(s.regex_cpt(p), ranges); }, SIZE_MAX);
}

// \s?[X]+ : the optional whitespace only counts before a run.
template <typename Pred>
void split_space_led_runs(Span& s, Pred in_run) {
  split_matches(s, [&](size_t p) {
    const size_t q = s.space(p) ? p + 1 : p;
    return in_run(q) ? s.run_end(q, in_run) : p;
  });
}

bool ascii_punct_or_symbol(char32_t c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//  ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ at pos: the match end, or
// pos (numbers and other codepoints not before a letter match nothing).
size_t deepseek3_word(const Span& s, size_t pos) {
  const char32_t c = s.cpt(pos);
  const auto ascii_letter = [&](size_t p) { return is_ascii_letter(s.cpt(p)); };
  if (ascii_punct_or_symbol(c) && ascii_letter(pos + 1)) return s.run_end(pos + 1, ascii_letter);
  const auto in_word = [&](size_t p) { return s.has(p, kLetter | kMark); };
  const bool lead = !is_newline(c) && !s.has(pos, kLetter | kPunct | kSymbol);
  if (lead && in_word(pos + 1)) return s.run_end(pos + 1, in_word);
  if (in_word(pos)) return s.run_end(pos, in_word);
  const auto punct = [&](size_t p) { return s.has(p, kPunct | kSymbol); };
  const size_t q = c == ' ' ? pos + 1 : pos;
  if (punct(q)) return s.run_end(s.run_end(q, punct), [&](size_t p) { return is_newline(s.cpt(p)); });
  return space_word(s, pos);
}

}  // namespace

void split_each_newline(Span& s) {
  split_runs(s, [&](size_t p) { return is_newline(s.cpt(p)); }, 1);
}

void split_deepseek_llm_letters(Span& s) {
  split_space_led_runs(s, [&](size_t p) { return in_ranges(s.regex_cpt(p), kDeepseekLetters); });
}

void split_deepseek_llm_punct(Span& s) {
  split_space_led_runs(s, [&](size_t p) { return in_ranges(s.regex_cpt(p), kDeepseekPunct); });
}

void split_trailing_space(Span& s) {
  // The leftmost match starts the whitespace run that ends the piece.
  size_t start = s.end();
  while (start > s.begin() && s.space(start - 1)) --start;
  s.emit(start);
  s.emit(s.end());
}

void split_deepseek_cjk_hangul(Span& s) { split_range_runs(s, kDeepseekCjkHangul); }

void split_space_letters(Span& s) {
  split_space_led_runs(s, [&](size_t p) { return s.letter(p); });
}

void split_space_punct(Span& s) {
  split_space_led_runs(s, [&](size_t p) { return s.has(p, kPunct); });
}

void split_cjk_kana(Span& s) { split_range_runs(s, kCjkKana); }

void split_deepseek3_words(Span& s) {
  split_matches(s, [&](size_t p) { return deepseek3_word(s, p); });
}

void split_afmoe_scripts(Span& s) { split_range_runs(s, kAfmoeScripts); }

void split_youtu_scripts(Span& s) {
  // The sets are disjoint: the one holding pos gives the run.
  const std::span<const Range> sets[] = {kYoutuHangul, kYoutuPunct, kYoutuBopomofo, kCjkKana};
  split_matches(s, [&](size_t p) {
    for (const auto& set : sets) {
      if (in_ranges(s.regex_cpt(p), set)) {
        return s.run_end(p, [&](size_t i) { return in_ranges(s.regex_cpt(i), set); });
      }
    }
    return p;
  });
}

void split_bloom(Span& s) {
  const auto in_word = [&](size_t p) {
    return p < s.end() && !s.space(p) && !in_ranges(s.regex_cpt(p), kBloomSeparators);
  };
  split_matches(s, [&](size_t p) {
    const size_t q = s.cpt(p) == ' ' ? p + 1 : p;
    return in_word(q) ? s.run_end(q, in_word) : p;
  });
}

void split_superbpe_digits(Span& s) {
  // The lookahead matches (empty) where the ASCII digits from there number
  // a positive multiple of three; each match closes the word before it.
  for (size_t p = s.begin(); p < s.end();) {
    if (!is_ascii_digit(s.cpt(p))) {
      ++p;
      continue;
    }
    const size_t run_end = s.run_end(p, [&](size_t i) { return is_ascii_digit(s.cpt(i)); });
    for (size_t cut = p + (run_end - p) % 3; cut + 3 <= run_end; cut += 3) s.emit(cut);
    p = run_end;
  }
  s.emit(s.end());
}

}  // namespace tc::text::detail
