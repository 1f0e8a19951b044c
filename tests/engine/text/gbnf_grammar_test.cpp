// GBNF grammars: parse errors say what and where; the matcher accepts
// exactly the texts a regular expression written independently for the
// same language accepts (random texts, compared in full and prefix by
// prefix), a non-regular language (balanced brackets) against a counter,
// and UTF-8 byte by byte; may_end / complete and token elements.
#include <catch2/catch.hpp>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/text/gbnf_grammar.h"
#include "engine/text/gbnf_prefix.h"

using tc::text::GbnfError;
using tc::text::GbnfGrammar;
using tc::text::GbnfPrefix;

namespace {

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

std::string utf8(const std::wstring& text) {
  std::string s;
  for (wchar_t c : text) s += utf8(static_cast<char32_t>(c));
  return s;
}

// Whether the grammar generates exactly `text`.
bool generates(const GbnfGrammar& g, const std::string& text) {
  GbnfPrefix p(&g);
  return p.push(text) && p.may_end();
}

// The length of the longest prefix of `text` the matcher takes.
size_t accepted_length(const GbnfGrammar& g, const std::string& text) {
  GbnfPrefix p(&g);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!p.push(static_cast<uint8_t>(text[i]))) return i;
  }
  return text.size();
}

struct RegularCase {
  const char* grammar;
  const wchar_t* regex;     // the same language, ECMAScript
  const wchar_t* alphabet;  // what random texts are made of
  const wchar_t* sample;    // a text of the language, mutated into near misses
};

}  // namespace

TEST_CASE("GBNF: errors name what is wrong, with line and column", "[gbnf]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"rot ::= \"a\"", "no 'root' rule"},
      {"root ::= item\n", "rule 'item' is used but never defined"},
      {"root ::= x\nx ::= x \"b\" | \"a\"", "rule 'x' is left-recursive"},
      {"root ::= e\ne ::= f \"+\" | \"1\"\nf ::= e", "rule 'e' is left-recursive"},
      {"root ::= \"a\" | n? root\nn ::= \"n\"", "rule 'root' is left-recursive"},
      {"root ::= \"abc", "unterminated string literal at line 1, column 14"},
      {"root ::= [a-", "unterminated character class"},
      {"root ::= \"\\q\"", "unknown escape at line 1, column 11"},
      {"root ::= \"\\x4\"", "expected 2 hex digits"},
      {"root ::= \"a\"{3,1}", "maximum is below its minimum"},
      {"root ::= \"a\"{5000}", "more than 2000 repetitions"},
      {"root ::= (\"a\" | \"b\"", "expected ')' to close the group at line 1, column 20"},
      {"root ::= \"a\"\n  | \"b\"", "expected a rule name at line 2, column 3"},
      {"root : \"a\"", "expected '::=' at line 1, column 6"},
      {"root ::= *", "a repetition needs something before it"},
      {"root ::= <|end|>", "cannot be resolved without a vocabulary"},
      {"root ::= <[12x]>", "expected ']>'"},
      {"root ::= \"a\" }", "expected a newline or the end of the grammar at line 1, column 14"},
  };
  for (const auto& [text, expected] : cases) {
    CAPTURE(text);
    REQUIRE_THROWS_WITH(GbnfGrammar::parse(text), Catch::Contains(expected));
  }
  // Nested repetitions are bounded like llama.cpp's, and so is the size.
  REQUIRE_THROWS_WITH(GbnfGrammar::parse("root ::= (\"a\"{0,100}){0,100}"), Catch::Contains("too many rules"));
  REQUIRE_THROWS_WITH(GbnfGrammar::parse("root ::= \"" + std::string(GbnfGrammar::kMaxElements, 'a') + "\""),
                      Catch::Contains("too large"));
  // Comments, blank lines, CRLF and newlines inside groups are fine.
  const auto g = GbnfGrammar::parse("# numbers\r\n\r\nroot ::= (\r\n  \"1\" |  # one\n  \"22\"\n) # end\r\n");
  CHECK(generates(*g, "1"));
  CHECK(generates(*g, "22"));
  CHECK_FALSE(generates(*g, "2"));
}

TEST_CASE("GBNF: the matcher accepts what an independent regular expression accepts", "[gbnf]") {
  const std::vector<RegularCase> cases = {
      {"root ::= \"ab\" | \"a\" [c-e]* \"x\"", L"ab|a[c-e]*x", L"abcdex", L"acdex"},
      {"root ::= (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)?", L"(0|[1-9][0-9]*)(\\.[0-9]+)?", L"0159.", L"190.05"},
      {"root ::= [ab]{2,4} \"c\"{3} d{1,}\nd ::= \"d\"", L"[ab]{2,4}c{3}d+", L"abcd", L"abacccdd"},
      {"root ::= [ab]{0,2} \"c\"{0} [xy]{2,}", L"[ab]{0,2}[xy]{2,}", L"abcxy", L"bxyx"},
      {"root ::= \"\\\"\" [^\"\\\\]* \"\\\"\" .", L"\"[^\"\\\\]*\"[\\s\\S]", L"\"\\ab\n", L"\"ab\"\n"},
      {"root ::= item (\",\" item)*\nitem ::= [a-c]+ | \"(\" [0-9]? \")\"",
       L"([a-c]+|\\([0-9]?\\))(,([a-c]+|\\([0-9]?\\)))*", L"ac,()1", L"ab,(1),c"},
      {"root ::= [α-ω]+ \"é\"? [^a-z]", L"[α-ω]+é?[^a-z]", L"αβωéaz1中", L"αωé1"},
      {"root ::= ([\\u4e00-\\u9fff] | [\\U0001F600-\\U0001F64F])* \"\\n\"",
       L"([\u4e00-\u9fff]|[\U0001F600-\U0001F64F])*\n",
       L"中文😀\na", L"中😀文\n"},
      {"root ::= x | y\nx ::= \"ab\" x?\ny ::= (\"a\" | \"b\")? \"c\"", L"(ab)+|[ab]?c", L"abc", L"ababab"},
  };
  std::mt19937 rng(41);
  for (const auto& c : cases) {
    CAPTURE(c.grammar);
    const auto g = GbnfGrammar::parse(c.grammar);
    const std::wregex re(c.regex);
    const std::wstring alphabet = c.alphabet;
    int matched = 0, tried = 0;
    for (int i = 0; i < 4000; ++i) {
      // Half random texts, half the sample with up to two edits.
      std::wstring w;
      if (i % 2 == 0) {
        const size_t len = rng() % 9;
        for (size_t k = 0; k < len; ++k) w += alphabet[rng() % alphabet.size()];
      } else {
        w = c.sample;
        for (unsigned edits = rng() % 3; edits > 0 && !w.empty(); --edits) {
          const size_t at = rng() % w.size();
          const wchar_t ch = alphabet[rng() % alphabet.size()];
          switch (rng() % 3) {
            case 0: w[at] = ch; break;
            case 1: w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), ch); break;
            default: w.erase(at, 1); break;
          }
        }
      }
      const std::string text = utf8(w);
      CAPTURE(text);
      const bool expected = std::regex_match(w, re);
      REQUIRE(generates(*g, text) == expected);
      if (expected) {
        ++matched;
        // Every prefix of a text in the language is taken byte by byte.
        REQUIRE(accepted_length(*g, text) == text.size());
      }
      ++tried;
    }
    CHECK(matched >= 20);
    CHECK(matched < tried);
  }
}

TEST_CASE("GBNF: a recursive grammar (balanced brackets) against a counter", "[gbnf]") {
  const auto g = GbnfGrammar::parse("root ::= (\"(\" root \")\" | \"[\" root \"]\")*");
  std::mt19937 rng(43);
  int balanced = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const size_t len = rng() % 11;
    for (size_t k = 0; k < len; ++k) text += "()[]"[rng() % 4];
    // The reference: a stack of open brackets; the longest viable prefix
    // ends at the first closing bracket that does not match.
    std::string open;
    size_t viable = text.size();
    for (size_t k = 0; k < text.size(); ++k) {
      const char ch = text[k];
      if (ch == '(' || ch == '[') {
        open += ch;
      } else if (!open.empty() && open.back() == (ch == ')' ? '(' : '[')) {
        open.pop_back();
      } else {
        viable = k;
        break;
      }
    }
    CAPTURE(text);
    REQUIRE(accepted_length(*g, text) == viable);
    const bool whole = viable == text.size() && open.empty();
    REQUIRE(generates(*g, text) == whole);
    balanced += whole ? 1 : 0;
  }
  CHECK(balanced > 100);
}

TEST_CASE("GBNF: UTF-8 is matched byte by byte, half characters by what they can become", "[gbnf]") {
  const auto g = GbnfGrammar::parse("root ::= [à-ÿ] \"x\" | \"\\u4e2d\" | [a-z]");
  GbnfPrefix p(g.get());
  CHECK(p.accepts("\xC3"));        // may become à..ÿ
  CHECK(p.accepts("\xC3\xA9x"));   // éx
  CHECK_FALSE(p.accepts("\xC3\x80"));  // À: below the range
  CHECK(p.accepts("\xE4\xB8"));      // may become 中
  CHECK_FALSE(p.accepts("\xE4\xB9"));  // cannot
  CHECK_FALSE(p.accepts("\xC4"));      // Ā..: above the range
  CHECK_FALSE(p.accepts("\x80"));      // a continuation byte first
  CHECK_FALSE(p.accepts("\xFF"));
  CHECK_FALSE(p.accepts(std::string(1, '\0')));
  CHECK_FALSE(p.accepts("\xC3" "x"));  // a half character cut short
  GbnfPrefix half = p;
  REQUIRE(half.push("\xC3"));
  CHECK_FALSE(half.may_end());
  // A negated class takes any character it does not name, completed inside
  // a token; a token that ends half-way through a character it might name
  // is refused there (llama.cpp's check at a token's end).
  const auto not_e = GbnfGrammar::parse("root ::= [^é]+");
  GbnfPrefix r(not_e.get());
  CHECK(r.accepts("\xC3\x9F"));        // ß
  CHECK_FALSE(r.accepts("\xC3\xA9"));  // é
  CHECK_FALSE(r.accepts("\xC3"));      // may become é
  CHECK(r.accepts("\xE4"));            // 3-byte characters: none is é
  // Any character, negated classes of ASCII and the 2-byte overlong form.
  const auto any = GbnfGrammar::parse("root ::= . [^a]");
  GbnfPrefix q(any.get());
  CHECK(q.accepts("\xF0\x9F\x98\x80\xE4\xB8\xAD"));
  CHECK_FALSE(q.accepts("\xC0"));
  CHECK_FALSE(q.accepts("\xC1"));
}

TEST_CASE("GBNF: a grammar that doubles its readings with each character stops at the cap", "[gbnf]") {
  // After n a's the text may close with any of 2^n strings of b's and c's.
  const auto g = GbnfGrammar::parse("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | ");
  GbnfPrefix p(g.get());
  size_t n = 0;
  while (n < 30 && p.push('a')) ++n;
  CHECK(n >= 6);  // 2^n readings fit under the cap up to here
  CHECK(n < 10);
  CHECK((size_t{1} << n) <= GbnfPrefix::kMaxStacks);
  CHECK(p.accepts(std::string(n, 'b')));  // what was taken still closes
  CHECK(p.accepts(std::string(n, 'c')));
}

TEST_CASE("GBNF: may_end where the text may stop, complete where nothing can follow", "[gbnf]") {
  const auto g = GbnfGrammar::parse("root ::= \"a\" \"b\"? | \"c\"+");
  GbnfPrefix p(g.get());
  CHECK_FALSE(p.may_end());
  CHECK_FALSE(p.complete());
  REQUIRE(p.push("a"));
  CHECK(p.may_end());
  CHECK_FALSE(p.complete());
  REQUIRE(p.push("b"));
  CHECK(p.may_end());
  CHECK(p.complete());
  CHECK_FALSE(p.accepts("b"));
  GbnfPrefix c(g.get());
  REQUIRE(c.push("ccc"));
  CHECK(c.may_end());
  CHECK_FALSE(c.complete());  // more c's may come
  // An empty root: the only text is the empty one.
  const auto empty = GbnfGrammar::parse("root ::= ");
  CHECK(GbnfPrefix(empty.get()).complete());
}

TEST_CASE("GBNF: token elements take one whole token by id, or any token but one", "[gbnf]") {
  const auto g = GbnfGrammar::parse("root ::= \"a\" <[7]> \"b\" | \"z\" !<[3]> \"y\"");
  CHECK(g->token_ids() == std::vector<uint32_t>{3, 7});
  GbnfPrefix p(g.get());
  REQUIRE(p.push("a"));
  CHECK(p.has_token_elements());
  CHECK(p.token_fits(7));
  CHECK_FALSE(p.token_fits(8));
  CHECK_FALSE(p.accepts("b"));  // the token's text does not stand in for it
  REQUIRE(p.push_token(7, "anything", true));
  CHECK(p.accepts("b"));
  GbnfPrefix q(g.get());
  REQUIRE(q.push("z"));
  CHECK(q.token_fits(4));
  CHECK_FALSE(q.token_fits(3));
  CHECK_FALSE(q.push_token(3, "", false));
  REQUIRE(q.push_token(4, "", false));
  REQUIRE(q.push("y"));
  CHECK(q.complete());
  // <TEXT> goes through the vocabulary's lookup.
  const auto named = GbnfGrammar::parse("root ::= <|end|> \"x\"", [](std::string_view text) -> std::optional<int32_t> {
    if (text == "<|end|>") return 42;
    return std::nullopt;
  });
  CHECK(named->token_ids() == std::vector<uint32_t>{42});
  const auto none = [](std::string_view) { return std::optional<int32_t>(); };
  REQUIRE_THROWS_WITH(GbnfGrammar::parse("root ::= <|nope|>", none),
                      Catch::Contains("'<|nope|>' is not one special token of this model"));
}
