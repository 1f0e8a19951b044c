// UTF-8 decoding with replacement, streaming prefixes, categories and the
// GPT-2 byte-char mapping.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "engine/text/unicode.h"

using namespace tc::text;

namespace {
const std::string kFffd = "\xEF\xBF\xBD";
}

TEST_CASE("utf8 decode of valid text", "[text][unicode]") {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  const auto cpts = utf8_to_codepoints(s);
  REQUIRE(cpts == std::vector<char32_t>{U'a', 0xE9, 0x20AC, 0x1F600});
  CHECK(utf8_is_valid(s));
  CHECK(utf8_sanitize(s) == s);
  std::string re;
  for (char32_t c : cpts) utf8_append(re, c);
  CHECK(re == s);
}

TEST_CASE("utf8 invalid sequences become U+FFFD, one per bad byte", "[text][unicode]") {
  // stray continuation, overlong '/', surrogate D800, > U+10FFFF, truncated
  CHECK(utf8_sanitize("\x80") == kFffd);
  CHECK(utf8_sanitize("\xC0\xAF") == kFffd + kFffd);
  CHECK(utf8_sanitize("\xE0\x80\xAF") == kFffd + kFffd + kFffd);
  CHECK(utf8_sanitize("\xED\xA0\x80") == kFffd + kFffd + kFffd);
  CHECK(utf8_sanitize("\xF4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);
  CHECK(utf8_sanitize("\xF5\x80") == kFffd + kFffd);
  CHECK(utf8_sanitize("x\xE2\x82") == "x" + kFffd + kFffd);
  CHECK(utf8_sanitize("\xE2\x82y") == kFffd + kFffd + "y");
  CHECK_FALSE(utf8_is_valid("\xC0\xAF"));
  // Largest valid scalar and the last BMP char survive.
  CHECK(utf8_sanitize("\xF4\x8F\xBF\xBF\xEF\xBF\xBF") == "\xF4\x8F\xBF\xBF\xEF\xBF\xBF");
  CHECK(utf8_encode(0xD800) == kFffd);
  CHECK(utf8_encode(0x110000) == kFffd);
}

TEST_CASE("utf8 sanitize of random bytes is always valid", "[text][unicode]") {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s(rng() % 24, '\0');
    for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
    const std::string clean = utf8_sanitize(s);
    REQUIRE(utf8_is_valid(clean));
    REQUIRE(utf8_to_codepoints(s).size() == utf8_to_codepoints(clean).size());
  }
}

TEST_CASE("utf8 complete prefix holds back only an unfinished character", "[text][unicode]") {
  const std::string smile = "\xF0\x9F\x98\x80";
  CHECK(utf8_complete_prefix("ab") == 2);
  CHECK(utf8_complete_prefix("ab" + smile.substr(0, 1)) == 2);
  CHECK(utf8_complete_prefix("ab" + smile.substr(0, 2)) == 2);
  CHECK(utf8_complete_prefix("ab" + smile.substr(0, 3)) == 2);
  CHECK(utf8_complete_prefix("ab" + smile) == 6);
  CHECK(utf8_complete_prefix("a\x80") == 2);          // stray byte: nothing to wait for
  CHECK(utf8_complete_prefix("a\xE0\x80") == 3);      // overlong start can never complete
  CHECK(utf8_complete_prefix("a\xC3") == 1);
  CHECK(utf8_complete_prefix("") == 0);
}

TEST_CASE("unicode categories and whitespace", "[text][unicode]") {
  CHECK(is_letter(U'a'));
  CHECK(is_letter(0x00E9));   // é
  CHECK(is_letter(0x65E5));   // 日
  CHECK(is_letter(0x3042));   // あ
  CHECK_FALSE(is_letter(U'1'));
  CHECK(is_number(U'7'));
  CHECK(is_number(0x00B2));   // ² (No)
  CHECK(is_number(0x0663));   // Arabic-Indic three (Nd)
  CHECK(is_number(0x2167));   // Roman numeral eight (Nl)
  CHECK(is_punctuation(U','));
  CHECK(is_punctuation(0x3002));  // 。
  CHECK(is_symbol(U'$'));
  CHECK(is_symbol(0x1F600));  // 😀
  CHECK(is_mark(0x0301));     // combining acute
  CHECK(category(0x0378) == Category::Unassigned);
  CHECK(category(0x10FFFF) == Category::Unassigned);
  CHECK(category(0x110000) == Category::Unassigned);
  CHECK(category(U'\n') == Category::Other);
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', char32_t(0x0B), char32_t(0x0C), char32_t(0x85),
                     char32_t(0xA0), char32_t(0x2003), char32_t(0x3000)}) {
    CHECK(is_whitespace(c));
  }
  CHECK_FALSE(is_whitespace(U'a'));
  CHECK_FALSE(is_whitespace(0x200B));  // zero width space is not White_Space
  CHECK(std::string(unicode_version()) == "15.0.0");
}

TEST_CASE("GPT-2 byte to unicode mapping is a bijection", "[text][unicode]") {
  CHECK(byte_to_unicode(U'A') == U'A');
  CHECK(byte_to_unicode(' ') == 0x0120);   // Ġ
  CHECK(byte_to_unicode('\n') == 0x010A);  // Ċ
  CHECK(byte_to_unicode(0) == 0x0100);
  CHECK(byte_to_unicode(0xAD) == 0x0143);
  std::vector<bool> seen(512, false);
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_to_unicode(static_cast<uint8_t>(b));
    REQUIRE(c < 512);
    REQUIRE_FALSE(seen[c]);
    seen[c] = true;
    REQUIRE(unicode_to_byte(c) == b);
    REQUIRE(byte_to_unicode_utf8(static_cast<uint8_t>(b)) == utf8_encode(c));
  }
  CHECK(unicode_to_byte(U' ') == -1);
  CHECK(unicode_to_byte(0x2581) == -1);
}

TEST_CASE("to_lower is the simple lowercase mapping", "[text][unicode]") {
  CHECK(to_lower(U'A') == U'a');
  CHECK(to_lower(U'Z') == U'z');
  CHECK(to_lower(U'a') == U'a');
  CHECK(to_lower(U'@') == U'@');
  CHECK(to_lower(0xC0) == 0xE0);      // À
  CHECK(to_lower(0xD7) == 0xD7);      // × has no case
  CHECK(to_lower(0x100) == 0x101);    // Ā: a stride-2 run
  CHECK(to_lower(0x101) == 0x101);    // ā is inside that run but not mapped
  CHECK(to_lower(0x130) == U'i');     // İ: simple mapping, no combining dot
  CHECK(to_lower(0x3A3) == 0x3C3);    // Σ
  CHECK(to_lower(0x410) == 0x430);    // А (Cyrillic)
  CHECK(to_lower(0x1E9E) == 0xDF);    // ẞ
  CHECK(to_lower(0x2C67) == 0x2C68);
  CHECK(to_lower(0x2C68) == 0x2C68);
  CHECK(to_lower(0x10400) == 0x10428);  // Deseret
  CHECK(to_lower(0x1E921) == 0x1E943);  // Adlam, the last run
  CHECK(to_lower(0x4E00) == 0x4E00);
  CHECK(to_lower(0x110000) == 0x110000);
  // A lowercase result is never changed again.
  for (char32_t c = 0; c < 0x20000; ++c) REQUIRE(to_lower(to_lower(c)) == to_lower(c));
}

TEST_CASE("nfd_first is the first codepoint of the canonical decomposition", "[text][unicode]") {
  CHECK(nfd_first(U'A') == U'A');
  CHECK(nfd_first(0xA8) == 0xA8);      // ¨: a compatibility decomposition only
  CHECK(nfd_first(0xC0) == U'A');      // À
  CHECK(nfd_first(0xE9) == U'e');      // é
  CHECK(nfd_first(0xFF) == U'y');      // ÿ
  CHECK(nfd_first(0x1E69) == U's');    // ṩ: decomposes twice
  CHECK(nfd_first(0x1F80) == 0x3B1);   // ᾀ: alpha with three marks
  CHECK(nfd_first(0x212B) == U'A');    // Angstrom sign -> Å -> A
  CHECK(nfd_first(0x2126) == 0x3A9);   // Ohm sign -> Omega
  CHECK(nfd_first(0x344) == 0x308);    // a combining mark decomposing to marks
  CHECK(nfd_first(0x958) == 0x915);    // Devanagari qa
  CHECK(nfd_first(0xFB01) == 0xFB01);  // the fi ligature: compatibility only
  CHECK(nfd_first(0xAC00) == 0x1100);  // Hangul syllables: their leading jamo
  CHECK(nfd_first(0xAC01) == 0x1100);
  CHECK(nfd_first(0xB098) == 0x1102);
  CHECK(nfd_first(0xD7A3) == 0x1112);
  CHECK(nfd_first(0xD7A4) == 0xD7A4);
  CHECK(nfd_first(0xF900) == 0x8C48);  // CJK compatibility ideographs
  CHECK(nfd_first(0x2F800) == 0x4E3D);
  CHECK(nfd_first(0x4E00) == 0x4E00);
  CHECK(nfd_first(0x110000) == 0x110000);
  // The result is never decomposed further.
  for (char32_t c = 0; c < 0x30000; ++c) REQUIRE(nfd_first(nfd_first(c)) == nfd_first(c));
}

TEST_CASE("is_bert_cjk is BERT's set of CJK ideograph blocks", "[text][unicode]") {
  CHECK(is_bert_cjk(0x4E00));
  CHECK(is_bert_cjk(0x65E5));   // 日
  CHECK(is_bert_cjk(0x3400));
  CHECK(is_bert_cjk(0xF900));
  CHECK(is_bert_cjk(0x20000));
  CHECK(is_bert_cjk(0x2B81F));
  CHECK_FALSE(is_bert_cjk(0x2B820));  // Hugging Face's bound: 0x2B820..0x2B91F are left out
  CHECK(is_bert_cjk(0x2B920));
  CHECK_FALSE(is_bert_cjk(0x3042));   // hiragana
  CHECK_FALSE(is_bert_cjk(0xAC00));   // Hangul
  CHECK_FALSE(is_bert_cjk(0x3000));   // ideographic space
  CHECK_FALSE(is_bert_cjk(U'a'));
}
