// compat_normalization_rules: the NFKC-like map of charsmap_builder.h, made
// from ranges and short tables. Every NFKC entry was checked against Python
// 3's unicodedata.normalize("NFKC", key) when written.
#include <iterator>
#include <map>
#include <string>
#include <string_view>

#include "engine/text/unicode.h"
#include "profiler/charsmap_builder.h"

namespace tc::profiler {

namespace {

std::string utf8(std::u32string_view cpts) {
  std::string out;
  for (const char32_t c : cpts) text::utf8_append(out, c);
  return out;
}
std::string utf8(char32_t a, char32_t b) { return text::utf8_encode(a) + text::utf8_encode(b); }

// Half-width katakana U+FF66..U+FF9D and what NFKC makes of them.
constexpr char32_t kHalfwidthKana[] = {
    0x30F2, 0x30A1, 0x30A3, 0x30A5, 0x30A7, 0x30A9, 0x30E3, 0x30E5, 0x30E7, 0x30C3, 0x30FC, 0x30A2,
    0x30A4, 0x30A6, 0x30A8, 0x30AA, 0x30AB, 0x30AD, 0x30AF, 0x30B1, 0x30B3, 0x30B5, 0x30B7, 0x30B9,
    0x30BB, 0x30BD, 0x30BF, 0x30C1, 0x30C4, 0x30C6, 0x30C8, 0x30CA, 0x30CB, 0x30CC, 0x30CD, 0x30CE,
    0x30CF, 0x30D2, 0x30D5, 0x30D8, 0x30DB, 0x30DE, 0x30DF, 0x30E0, 0x30E1, 0x30E2, 0x30E4, 0x30E6,
    0x30E8, 0x30E9, 0x30EA, 0x30EB, 0x30EC, 0x30ED, 0x30EF, 0x30F3,
};
// Katakana with a voiced form at +1 (the last five, the ha row, also a
// semi-voiced one at +2).
constexpr char32_t kVoicedKana[] = {0x30AB, 0x30AD, 0x30AF, 0x30B1, 0x30B3, 0x30B5, 0x30B7, 0x30B9, 0x30BB, 0x30BD,
                                    0x30BF, 0x30C1, 0x30C4, 0x30C6, 0x30C8, 0x30CF, 0x30D2, 0x30D5, 0x30D8, 0x30DB};

// Latin-1's precomposed letters: base letter, combining mark, result.
struct Composition {
  char32_t base, mark, result;
};
constexpr Composition kCompositions[] = {
    {'A', 0x300, 0xC0}, {'A', 0x301, 0xC1}, {'A', 0x302, 0xC2}, {'A', 0x303, 0xC3}, {'A', 0x308, 0xC4},
    {'A', 0x30A, 0xC5}, {'C', 0x327, 0xC7}, {'E', 0x300, 0xC8}, {'E', 0x301, 0xC9}, {'E', 0x302, 0xCA},
    {'E', 0x308, 0xCB}, {'I', 0x300, 0xCC}, {'I', 0x301, 0xCD}, {'I', 0x302, 0xCE}, {'I', 0x308, 0xCF},
    {'N', 0x303, 0xD1}, {'O', 0x300, 0xD2}, {'O', 0x301, 0xD3}, {'O', 0x302, 0xD4}, {'O', 0x303, 0xD5},
    {'O', 0x308, 0xD6}, {'U', 0x300, 0xD9}, {'U', 0x301, 0xDA}, {'U', 0x302, 0xDB}, {'U', 0x308, 0xDC},
    {'Y', 0x301, 0xDD},
};
// Caron letters (upper case; lower case is +1): base, result.
constexpr char32_t kCaron[][2] = {{'C', 0x10C}, {'D', 0x10E}, {'E', 0x11A}, {'N', 0x147},
                                  {'R', 0x158}, {'S', 0x160}, {'T', 0x164}, {'Z', 0x17D}};

// Single characters and what NFKC makes of them.
struct Single {
  char32_t key;
  std::u32string_view value;
};
constexpr Single kSingles[] = {
    // Latin-1 and Latin Extended compatibility characters, digraphs, ligatures
    {0xA8, U" \u0308"}, {0xAA, U"a"}, {0xAF, U" \u0304"}, {0xB2, U"2"}, {0xB3, U"3"}, {0xB4, U" \u0301"},
    {0xB5, U"\u03BC"}, {0xB8, U" \u0327"}, {0xB9, U"1"}, {0xBA, U"o"}, {0xBC, U"1\u20444"}, {0xBD, U"1\u20442"},
    {0xBE, U"3\u20444"}, {0x132, U"IJ"}, {0x133, U"ij"}, {0x13F, U"L\u00B7"}, {0x140, U"l\u00B7"},
    {0x149, U"\u02BCn"}, {0x17F, U"s"}, {0x1C4, U"D\u017D"}, {0x1C5, U"D\u017E"}, {0x1C6, U"d\u017E"},
    {0x1C7, U"LJ"}, {0x1C8, U"Lj"}, {0x1C9, U"lj"}, {0x1CA, U"NJ"}, {0x1CB, U"Nj"}, {0x1CC, U"nj"},
    {0x1F1, U"DZ"}, {0x1F2, U"Dz"}, {0x1F3, U"dz"}, {0xFB00, U"ff"}, {0xFB01, U"fi"}, {0xFB02, U"fl"},
    {0xFB03, U"ffi"}, {0xFB04, U"ffl"}, {0xFB05, U"st"}, {0xFB06, U"st"},
    // Greek symbol variants
    {0x3D0, U"\u03B2"}, {0x3D1, U"\u03B8"}, {0x3D5, U"\u03C6"}, {0x3D6, U"\u03C0"},
    // punctuation
    {0x2011, U"\u2010"}, {0x2017, U" \u0333"}, {0x2024, U"."}, {0x2025, U".."}, {0x2026, U"..."},
    {0x2033, U"\u2032\u2032"}, {0x2034, U"\u2032\u2032\u2032"}, {0x203C, U"!!"}, {0x2047, U"??"},
    {0x2048, U"?!"}, {0x2049, U"!?"},
    // super- and subscripts
    {0x2070, U"0"}, {0x2071, U"i"}, {0x207A, U"+"}, {0x207B, U"\u2212"}, {0x207C, U"="}, {0x207D, U"("},
    {0x207E, U")"}, {0x207F, U"n"}, {0x208A, U"+"}, {0x208B, U"\u2212"}, {0x208C, U"="}, {0x208D, U"("},
    {0x208E, U")"},
    // letter-like symbols
    {0x2102, U"C"}, {0x2103, U"\u00B0C"}, {0x2109, U"\u00B0F"}, {0x210D, U"H"}, {0x2113, U"l"}, {0x2115, U"N"},
    {0x2116, U"No"}, {0x2119, U"P"}, {0x211A, U"Q"}, {0x211D, U"R"}, {0x2120, U"SM"}, {0x2121, U"TEL"},
    {0x2122, U"TM"}, {0x2124, U"Z"}, {0x2126, U"\u03A9"}, {0x212A, U"K"}, {0x212B, U"\u00C5"},
    // vulgar fractions
    {0x2153, U"1\u20443"}, {0x2154, U"2\u20443"}, {0x2155, U"1\u20445"}, {0x2156, U"2\u20445"},
    {0x2157, U"3\u20445"}, {0x2158, U"4\u20445"}, {0x2159, U"1\u20446"}, {0x215A, U"5\u20446"},
    {0x215B, U"1\u20448"}, {0x215C, U"3\u20448"}, {0x215D, U"5\u20448"}, {0x215E, U"7\u20448"},
    {0x24EA, U"0"},
    // squared and circled CJK
    {0x3231, U"(\u682A)"}, {0x32A4, U"\u4E0A"}, {0x32A5, U"\u4E2D"}, {0x32A6, U"\u4E0B"},
    {0x337F, U"\u682A\u5F0F\u4F1A\u793E"}, {0x338F, U"kg"}, {0x339C, U"mm"}, {0x339D, U"cm"}, {0x339E, U"km"},
    {0x33A1, U"m2"}, {0x33C4, U"cc"},
    // CJK compatibility ideographs
    {0xF900, U"\u8C48"}, {0xF901, U"\u66F4"}, {0xF902, U"\u8ECA"}, {0xF903, U"\u8CC8"}, {0xF904, U"\u6ED1"},
    {0xF905, U"\u4E32"}, {0xF906, U"\u53E5"}, {0xF907, U"\u9F9C"}, {0xF908, U"\u9F9C"}, {0xF909, U"\u5951"},
    // Arabic presentation forms
    {0xFE8D, U"\u0627"}, {0xFE8E, U"\u0627"}, {0xFE91, U"\u0628"}, {0xFEFB, U"\u0644\u0627"},
    // half-width voicing marks (alone; after a kana they compose, below)
    {0xFF9E, U"\u3099"}, {0xFF9F, U"\u309A"},
};

constexpr const char* kRoman[] = {"I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"};

}  // namespace

CharsmapRules compat_normalization_rules() {
  std::map<std::string, std::string> m;  // sorted: a deterministic order
  const auto one = [&](char32_t key, std::string value) { m[text::utf8_encode(key)] = std::move(value); };
  const auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return s;
  };

  // Full-width ASCII and the ideographic space.
  for (char32_t c = 0xFF01; c <= 0xFF5E; ++c) one(c, std::string(1, static_cast<char>(c - 0xFEE0)));
  one(0x3000, " ");
  // Half-width katakana, and with a voicing mark, composed.
  for (size_t i = 0; i < std::size(kHalfwidthKana); ++i) {
    one(0xFF66 + static_cast<char32_t>(i), text::utf8_encode(kHalfwidthKana[i]));
  }
  for (const Single& s : kSingles) one(s.key, utf8(s.value));
  for (size_t i = 0; i < std::size(kHalfwidthKana); ++i) {
    const char32_t full = kHalfwidthKana[i];
    const std::string half = text::utf8_encode(0xFF66 + static_cast<char32_t>(i));
    for (const char32_t v : kVoicedKana) {
      if (v != full) continue;
      m[half + text::utf8_encode(0xFF9E)] = text::utf8_encode(full + 1);
      m[utf8(full, 0x3099)] = text::utf8_encode(full + 1);
      if (full >= 0x30CF) {
        m[half + text::utf8_encode(0xFF9F)] = text::utf8_encode(full + 2);
        m[utf8(full, 0x309A)] = text::utf8_encode(full + 2);
      }
    }
  }
  m[text::utf8_encode(0xFF73) + text::utf8_encode(0xFF9E)] = text::utf8_encode(0x30F4);  // ｳﾞ -> ヴ
  // Roman numerals, L C D M; circled, parenthesized and full-stop numbers;
  // circled and parenthesized letters.
  for (char32_t i = 0; i < 12; ++i) {
    one(0x2160 + i, kRoman[i]);
    one(0x2170 + i, lower(kRoman[i]));
  }
  const char* kRomanTail = "LCDM";
  for (char32_t i = 0; i < 4; ++i) {
    one(0x216C + i, std::string(1, kRomanTail[i]));
    one(0x217C + i, lower(std::string(1, kRomanTail[i])));
  }
  for (char32_t n = 1; n <= 20; ++n) {
    one(0x245F + n, std::to_string(n));
    one(0x2473 + n, "(" + std::to_string(n) + ")");
    one(0x2487 + n, std::to_string(n) + ".");
  }
  for (char32_t k = 0; k < 26; ++k) {
    const char up = static_cast<char>('A' + k), low = static_cast<char>('a' + k);
    one(0x249C + k, std::string("(") + low + ")");
    one(0x24B6 + k, std::string(1, up));
    one(0x24D0 + k, std::string(1, low));
  }
  // Super- and subscript digits.
  for (char32_t d = 0; d < 10; ++d) {
    if (d >= 4) one(0x2070 + d, std::to_string(d));
    one(0x2080 + d, std::to_string(d));
  }
  // Mathematical letters (bold, italic, bold italic, sans-serif, sans-serif
  // bold, monospace; italic h is U+210E, not in this block) and digits.
  for (const char32_t block : {0x1D400, 0x1D434, 0x1D468, 0x1D5A0, 0x1D5D4, 0x1D670}) {
    for (char32_t k = 0; k < 26; ++k) {
      one(block + k, std::string(1, static_cast<char>('A' + k)));
      if (block + 26 + k != 0x1D455) one(block + 26 + k, std::string(1, static_cast<char>('a' + k)));
    }
  }
  for (char32_t d = 0; d < 50; ++d) one(0x1D7CE + d, std::to_string(d % 10));
  // Precomposed Latin letters from letter + combining mark.
  for (const Composition& c : kCompositions) {
    m[utf8(c.base, c.mark)] = text::utf8_encode(c.result);
    m[utf8(c.base + 32, c.mark)] = text::utf8_encode(c.result + 32);
  }
  m[utf8('y', 0x308)] = text::utf8_encode(0xFF);
  for (const auto& [base, result] : kCaron) {
    m[utf8(base, 0x30C)] = text::utf8_encode(result);
    m[utf8(base + 32, 0x30C)] = text::utf8_encode(result + 1);
  }

  // Not NFKC, as SentencePiece's nmt_nfkc: whitespace to ' ', controls and
  // zero-width characters removed (NUL cannot be a key).
  for (const char32_t c : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F}) {
    one(c, " ");
  }
  for (char32_t c = 0x2000; c <= 0x200A; ++c) one(c, " ");
  for (char32_t c = 0x01; c < 0x20; ++c) {
    if (c < 0x09 || c > 0x0D) one(c, "");
  }
  for (char32_t c = 0x7F; c < 0xA0; ++c) {
    if (c != 0x85) one(c, "");
  }
  one(0x200B, "");
  one(0xFEFF, "");
  return {m.begin(), m.end()};
}

}  // namespace tc::profiler
