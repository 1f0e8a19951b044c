// JSON Schema `pattern`: regular expressions turned into GBNF
// (regex_to_gbnf.h) accept exactly the strings std::regex_search finds a
// match in (random strings over each pattern's alphabet, anchored and not);
// what cannot be enforced is an error naming it; a schema's patterned
// string takes matching values and refuses the first byte that cannot
// lead to one; and a constrained sampler writes only matching strings.
#include <catch2/catch.hpp>

#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/gbnf_grammar.h"
#include "engine/text/gbnf_prefix.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/regex_to_gbnf.h"
#include "tests/engine/text/constrained_walk.h"

using tc::text::GbnfGrammar;
using tc::text::GbnfPrefix;
using tc::text::JsonSchema;
using tc::text::JsonSchemaPrefix;
using json = nlohmann::ordered_json;

TEST_CASE("pattern: the grammar of a regex accepts what std::regex_search matches", "[json][schema][gbnf]") {
  struct Case {
    const char* pattern;
    const char* alphabet;
    const char* sample;  // a matching string, mutated into near misses
  };
  const std::vector<Case> cases = {
      {"^[A-Z]{2}-\\d{3}$", "ABZa-019", "AB-123"},
      {"^\\d+(\\.\\d{1,2})?$", "019.x", "12.5"},
      {"ab", "abc", "cabc"},
      {"^(foo|bar)+$", "fobar", "foobar"},
      {"^a|b$", "abc", "acb"},
      {"x[^0-9]y", "xy0a", "axayb"},
      {"^\\w+@\\w+\\.com$", "a_1@.com", "a1@b.com"},
      {"^(?:\\s*\\d){2,3}$", " 12a", " 1 2"},
      {"colou?r", "colur", "color"},
      {"^[a-c]*$", "abcd", "abca"},
      {"^\\u00e9+\\.?$", "\xc3\xa9.a", "\xc3\xa9\xc3\xa9."},
  };
  std::mt19937 rng(61);
  for (const auto& c : cases) {
    CAPTURE(c.pattern);
    const auto grammar = GbnfGrammar::parse(tc::text::regex_to_gbnf(c.pattern));
    const std::regex re(c.pattern, std::regex::ECMAScript);
    const std::string alphabet = c.alphabet;
    int matched = 0, tried = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      if (i % 2 == 0) {
        for (size_t n = rng() % 8; n > 0; --n) s += alphabet[rng() % alphabet.size()];
      } else {
        s = c.sample;
        for (unsigned edits = rng() % 3; edits > 0 && !s.empty(); --edits) {
          const size_t at = rng() % s.size();
          const char ch = alphabet[rng() % alphabet.size()];
          switch (rng() % 3) {
            case 0: s[at] = ch; break;
            case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), ch); break;
            default: s.erase(at, 1); break;
          }
        }
      }
      // Whole characters only: std::regex reads bytes, the grammar characters.
      if (c.pattern[1] == '\\' && c.pattern[2] == 'u') {
        bool whole = true;
        for (size_t k = 0; k < s.size(); ++k) {
          if (static_cast<unsigned char>(s[k]) == 0xc3) whole = whole && k + 1 < s.size() && s[++k] == '\xa9';
          else if (static_cast<unsigned char>(s[k]) >= 0x80) whole = false;
        }
        if (!whole) continue;
      }
      CAPTURE(s);
      const bool expected = c.pattern[1] == '\\' && c.pattern[2] == 'u'
                                ? std::regex_search(s, std::regex("^(\xc3\xa9)+\\.?$"))
                                : std::regex_search(s, re);
      GbnfPrefix p(grammar.get());
      REQUIRE((p.push(s) && p.may_end()) == expected);
      matched += expected ? 1 : 0;
      ++tried;
    }
    CHECK(matched >= 20);
    CHECK(matched < tried);
  }
}

TEST_CASE("pattern: what cannot be enforced is an error naming it", "[json][schema]") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"(a)\\1", "a back-reference"}, {"a(?=b)", "a lookaround"}, {"\\bword", "a word boundary"},
      {"a^b", "an anchor inside the pattern"}, {"(ab", "an unclosed group"}, {"[ab", "an unclosed class"},
      {"*a", "a quantifier with nothing before it"}, {"[z-a]", "a backwards range"}, {"a)", "')' out of place"},
  };
  for (const auto& [pattern, what] : cases) {
    CAPTURE(pattern);
    REQUIRE_THROWS_WITH(tc::text::regex_to_gbnf(pattern), Catch::Contains(what));
  }
  const auto lookaround = json::parse(
      R"j({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?!x)"}}})j");
  REQUIRE_THROWS_WITH(JsonSchema::compile(lookaround),
                      Catch::Contains("'pattern' \"(?!x)\": the pattern uses a lookaround") &&
                          Catch::Contains("/properties/a"));
  const auto with_format = json::parse(
      R"j({"type": "object", "properties": {"a": {"type": "string", "pattern": "x", "format": "date"}}})j");
  REQUIRE_THROWS_WITH(JsonSchema::compile(with_format), Catch::Contains("'pattern' beside 'format'"));
}

TEST_CASE("pattern: a patterned string takes matching values and refuses the first byte that leads to none",
          "[json][schema]") {
  const auto schema = JsonSchema::compile(json::parse(R"({"type": "object", "properties": {
    "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"},
    "tag": {"type": "string", "pattern": "ok", "maxLength": 6}}, "required": ["code", "tag"]})"));
  auto fits = [&](const std::string& text) {
    JsonSchemaPrefix p(schema.get());
    return p.push(text) && p.complete();
  };
  CHECK(fits(R"({"code": "AB-123", "tag": "ok"})"));
  CHECK(fits(R"({"code": "ZZ-000", "tag": "a ok b"})"));
  CHECK_FALSE(fits(R"({"code": "AB-12", "tag": "ok"})"));
  CHECK_FALSE(fits(R"({"code": "AB-123", "tag": "no"})"));
  CHECK_FALSE(fits(R"({"code": "AB-123", "tag": "xx ok x"})"));  // maxLength 6
  JsonSchemaPrefix p(schema.get());
  REQUIRE(p.push(R"({"code": "A)"));
  CHECK(p.accepts("B"));
  CHECK_FALSE(p.accepts("b"));
  CHECK_FALSE(p.accepts("\""));    // not yet a match
  CHECK_FALSE(p.accepts("\\u0042"));  // no escapes in a patterned string
  CHECK_FALSE(p.in_free_string());
}

TEST_CASE("pattern: a constrained sampler writes only matching strings", "[json][schema][sampler]") {
  const json s = json::parse(R"({"type": "object", "properties": {
    "id": {"type": "string", "pattern": "^[a-c]{2,4}-\\d{1,3}$"}}, "required": ["id"], "additionalProperties": false})");
  const auto schema = JsonSchema::compile(s);
  const std::regex re("^[a-c]{2,4}-\\d{1,3}$");
  for (const auto& text : tc::text::test::closed_schema_walks(schema, tc::text::TokenizerKind::Bpe, 30, 37)) {
    CAPTURE(text);
    CHECK(std::regex_match(json::parse(text)["id"].get<std::string>(), re));
  }
}
