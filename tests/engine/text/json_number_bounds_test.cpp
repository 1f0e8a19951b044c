// JSON Schema number bounds (json_number_bounds.h): every prefix of up to
// four characters is judged feasible exactly when some number of up to six
// characters starting with it lies within the bounds (brute force,
// compared with strtod); a bounded schema takes in-range numbers and
// refuses the first byte that leaves none, an exponent included; an
// integer's bounds round inward; and a constrained sampler on random logits
// writes only numbers within them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/json_lexers.h"
#include "engine/text/json_number_bounds.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"
#include "tests/engine/text/constrained_walk.h"

using tc::text::JsonSchema;
using tc::text::JsonSchemaPrefix;
using tc::text::NumberBounds;
using json = nlohmann::ordered_json;

namespace {

// Every string over "-0123456789." of at most `max_len` characters that the
// number lexer reads: with `whole`, only those it calls complete.
std::vector<std::string> numbers(size_t max_len, bool integer, bool whole) {
  std::vector<std::string> out;
  std::vector<std::string> frontier = {""};
  for (size_t len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const auto& s : frontier) {
      for (char c : std::string("-0123456789.")) {
        tc::text::JsonNumberLexer lexer(integer);
        bool ok = tc::text::JsonNumberLexer::starts(static_cast<uint8_t>((s + c)[0]));
        for (char x : s + c) ok = ok && lexer.push(static_cast<uint8_t>(x));
        if (!ok) continue;
        next.push_back(s + c);
        if (!whole || lexer.complete()) out.push_back(s + c);
      }
    }
    frontier = std::move(next);
  }
  return out;
}

bool within_ref(const std::string& s, const NumberBounds& b) {
  const double v = std::strtod(s.c_str(), nullptr);
  return (b.exclusive_minimum ? v > b.minimum : v >= b.minimum) &&
         (b.exclusive_maximum ? v < b.maximum : v <= b.maximum);
}

}  // namespace

TEST_CASE("JSON number bounds: a prefix is feasible when some number it begins is within the bounds",
          "[json][schema]") {
  const std::vector<std::pair<NumberBounds, bool>> cases = {
      {{3, 42, false, false}, true},       {{3, 42, false, false}, false},     {{-5.5, 2.25, false, false}, false},
      {{0, 1, true, true}, false},         {{100, 100, false, false}, true},   {{-20, -3, false, false}, true},
      {{-0.5, 0.5, false, true}, false},   {{7, 1e9, false, false}, true},
  };
  int feasible = 0, infeasible = 0;
  for (const auto& [b, integer] : cases) {
    // The prefixes (up to 4 characters) of the numbers within the bounds.
    std::set<std::string> reachable;
    for (const auto& w : numbers(6, integer, true)) {
      if (!within_ref(w, b)) continue;
      for (size_t n = 1; n <= std::min<size_t>(4, w.size()); ++n) reachable.insert(w.substr(0, n));
    }
    for (const auto& p : numbers(4, integer, false)) {
      const bool expected = reachable.count(p) != 0;
      CAPTURE(p, b.minimum, b.maximum, b.exclusive_minimum, b.exclusive_maximum, integer);
      REQUIRE(tc::text::number_prefix_feasible(p, integer, b) == expected);
      (expected ? feasible : infeasible)++;
    }
    for (const auto& w : numbers(5, integer, true)) REQUIRE(tc::text::number_within(w, b) == within_ref(w, b));
  }
  CHECK(feasible > 100);
  CHECK(infeasible > 100);
}

TEST_CASE("JSON Schema bounds: in-range numbers pass, the first byte that leaves none is refused",
          "[json][schema]") {
  const auto schema = JsonSchema::compile(json::parse(R"({"type": "object", "properties": {
    "score": {"type": "number", "minimum": 0, "maximum": 10},
    "n": {"type": "integer", "exclusiveMinimum": 0.5, "maximum": 5.9},
    "t": {"type": ["number", "null"], "minimum": -1, "exclusiveMaximum": 1}},
    "required": ["score", "n", "t"]})"));
  auto fits = [&](const std::string& text) {
    JsonSchemaPrefix p(schema.get());
    return p.push(text) && p.complete();
  };
  CHECK(fits(R"({"score": 10, "n": 1, "t": -1})"));
  CHECK(fits(R"({"score": 0.25, "n": 5, "t": 0.999})"));
  CHECK(fits(R"({"score": 7, "n": 3, "t": null})"));
  CHECK_FALSE(fits(R"({"score": 10.5, "n": 1, "t": 0})"));
  CHECK_FALSE(fits(R"({"score": 1, "n": 6, "t": 0})"));   // 5.9 rounds down to 5
  CHECK_FALSE(fits(R"({"score": 1, "n": 0, "t": 0})"));   // exclusive 0.5 rounds up to 1
  CHECK_FALSE(fits(R"({"score": 1, "n": 1, "t": 1})"));   // exclusive
  CHECK_FALSE(fits(R"({"score": 1e1, "n": 1, "t": 0})"));  // no exponent when bounded
  // Refused at the first byte that leaves no number in range.
  JsonSchemaPrefix p(schema.get());
  REQUIRE(p.push(R"({"score": 1)"));
  CHECK(p.accepts("0"));       // 10
  CHECK_FALSE(p.accepts("1"));  // 11...
  CHECK_FALSE(p.accepts("-"));
  CHECK(p.accepts(".5"));
}

TEST_CASE("JSON Schema bounds: a constrained sampler writes only numbers within them", "[json][schema][sampler]") {
  const json s = json::parse(R"({"type": "object", "properties": {
    "a": {"type": "integer", "minimum": -3, "maximum": 12},
    "b": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5}}, "required": ["a", "b"],
    "additionalProperties": false})");
  const auto schema = JsonSchema::compile(s);
  for (const auto& text : tc::text::test::closed_schema_walks(schema, tc::text::TokenizerKind::Spm, 30, 31)) {
    CAPTURE(text);
    const auto v = json::parse(text);
    REQUIRE(v["a"].is_number_integer());
    CHECK(v["a"].get<int64_t>() >= -3);
    CHECK(v["a"].get<int64_t>() <= 12);
    CHECK(v["b"].get<double>() > 0.0);
    CHECK(v["b"].get<double>() <= 0.5);
  }
}
