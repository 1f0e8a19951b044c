// UTF-8 decoding/encoding with U+FFFD replacement, the Unicode general
// categories and White_Space set the pre-tokenizers need (\p{L}, \p{N},
// \p{P}, \p{S}, \p{M}, \s), simple lowercasing and first-of-NFD (WPM), and
// GPT-2's byte <-> unicode-char mapping.
// Pure functions over immutable tables: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tc::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces: 1..4, or 0 for a byte
// that cannot start a valid sequence (continuation bytes, C0, C1, F5..FF).
size_t utf8_sequence_length(uint8_t lead);

// Decodes the codepoint at `pos` and advances `pos`. Anything that is not a
// shortest-form encoding of a Unicode scalar value (stray continuation bytes,
// truncated sequences, overlongs, surrogates, > U+10FFFF) yields U+FFFD and
// advances by one byte, as llama.cpp does. Requires pos < s.size().
char32_t utf8_decode(std::string_view s, size_t& pos);

// Appends the UTF-8 encoding of `cpt`; surrogates and values above U+10FFFF
// are written as U+FFFD.
void utf8_append(std::string& out, char32_t cpt);
std::string utf8_encode(char32_t cpt);

// The codepoints of `s`, invalid bytes replaced as utf8_decode does.
std::vector<char32_t> utf8_to_codepoints(std::string_view s);
// `s` with every invalid byte replaced by U+FFFD (returns `s` unchanged when
// it is valid UTF-8).
std::string utf8_sanitize(std::string_view s);
bool utf8_is_valid(std::string_view s);

// The length of the longest prefix of `s` that does not end inside a
// sequence that is still valid so far but incomplete (at most the last 3
// bytes are held back). Used to stream text without splitting characters.
size_t utf8_complete_prefix(std::string_view s);

// General category, grouped by its first letter (Cn unassigned apart).
enum class Category : uint8_t {
  Unassigned = 0,  // Cn, and anything above U+10FFFF
  Letter = 1,      // L*
  Number = 2,      // N*
  Punctuation = 3, // P*
  Symbol = 4,      // S*
  Mark = 5,        // M*
  Separator = 6,   // Z*
  Other = 7,       // Cc, Cf, Cs, Co
};

Category category(char32_t cpt);
inline bool is_letter(char32_t cpt) { return category(cpt) == Category::Letter; }
inline bool is_number(char32_t cpt) { return category(cpt) == Category::Number; }
inline bool is_punctuation(char32_t cpt) { return category(cpt) == Category::Punctuation; }
inline bool is_symbol(char32_t cpt) { return category(cpt) == Category::Symbol; }
inline bool is_mark(char32_t cpt) { return category(cpt) == Category::Mark; }
// The White_Space property: what `\s` means in the pre-tokenizer regexes
// (llama.cpp's unicode_set_whitespace is the same list).
bool is_whitespace(char32_t cpt);

// The simple lowercase mapping (UnicodeData.txt field 13), as llama.cpp's
// unicode_tolower: `cpt` itself where there is none.
char32_t to_lower(char32_t cpt);
// The first codepoint of the full canonical decomposition (NFD) of `cpt`,
// `cpt` itself where it has none: what llama.cpp's unicode_cpts_normalize_nfd
// maps each codepoint to (A-grave -> A, a Hangul syllable -> its leading jamo).
char32_t nfd_first(char32_t cpt);

// The CJK ideograph blocks BERT's pre-splitter makes one-character words of
// (llama.cpp's WPM is_chinese_char, with the Extension B..E bound 0x2B920 as
// Hugging Face's code has it).
bool is_bert_cjk(char32_t cpt);

// The Unicode version the tables were generated from, e.g. "15.0.0".
const char* unicode_version();

// GPT-2 byte-level encoding: every byte maps to one printable codepoint
// (printable Latin-1 bytes map to themselves, the rest to U+0100 + n).
char32_t byte_to_unicode(uint8_t byte);
// UTF-8 of byte_to_unicode(byte), from a static table.
std::string_view byte_to_unicode_utf8(uint8_t byte);
// The inverse; -1 when `cpt` is not one of the 256 byte chars.
int unicode_to_byte(char32_t cpt);

}  // namespace tc::text
