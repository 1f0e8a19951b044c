// JsonFormatLexer against independent checks: every date of four years
// (leap and not, century rules) against std::chrono's calendar, and random
// texts over each format's alphabet against a regular expression of RFC
// 3339's time and date-time and RFC 4122's uuid; a refused byte leaves the
// lexer as it was. Then a schema with formats through JsonSchemaPrefix.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/text/json_formats.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"

using tc::text::JsonFormat;
using tc::text::JsonFormatLexer;

namespace {

// Whether the lexer reads all of `text` and calls it a whole value.
bool whole(JsonFormat format, const std::string& text) {
  JsonFormatLexer lexer(format);
  for (char c : text) {
    if (!lexer.push(static_cast<uint8_t>(c))) return false;
  }
  return lexer.complete();
}

}  // namespace

TEST_CASE("JsonFormatLexer: dates that exist, as std::chrono's calendar says", "[json][schema][format]") {
  int accepted = 0;
  for (int year : {1900, 2000, 2023, 2024}) {
    for (int month = 0; month <= 13; ++month) {
      for (int day = 0; day <= 32; ++day) {
        char text[16];
        std::snprintf(text, sizeof text, "%04d-%02d-%02d", year, month, day);
        const std::chrono::year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                                              std::chrono::day{static_cast<unsigned>(day)}};
        CAPTURE(text);
        CHECK(whole(JsonFormat::Date, text) == ymd.ok());
        CHECK(whole(JsonFormat::DateTime, std::string(text) + "T12:00:00Z") == ymd.ok());
        accepted += ymd.ok() ? 1 : 0;
      }
    }
  }
  CHECK(accepted == 365 + 366 + 365 + 366);  // 1900 is not a leap year, 2000 is
}

TEST_CASE("JsonFormatLexer: time, date-time and uuid agree with regular expressions on random texts",
          "[json][schema][format]") {
  const std::string time_re = R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
  const std::regex time(time_re);
  const std::regex date_time(R"((\d{4})-(\d{2})-(\d{2})T)" + time_re);  // the date is checked by std::chrono
  const std::regex uuid(R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})");
  struct Case {
    JsonFormat format;
    const std::regex* re;
    std::string seed;  // a valid value the random texts mutate
    std::string alphabet;
  };
  const std::vector<Case> cases = {
      {JsonFormat::Time, &time, "23:59:58.123+05:30", "0123456789:.+-Z5"},
      {JsonFormat::DateTime, &date_time, "2024-02-28T09:05:00Z", "0123456789:-.+TZ"},
      {JsonFormat::Uuid, &uuid, "123e4567-e89b-12d3-a456-426614174000", "0123456789abcdefABCDEF-g"},
  };
  std::mt19937 rng(31);
  for (const auto& c : cases) {
    REQUIRE(whole(c.format, c.seed));
    int matched = 0;
    for (int i = 0; i < 20000; ++i) {
      std::string text = c.seed;
      for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
        const size_t at = rng() % (text.size() + 1);
        const char ch = c.alphabet[rng() % c.alphabet.size()];
        switch (rng() % 3) {
          case 0: if (at < text.size()) text[at] = ch; break;
          case 1: text.insert(at, 1, ch); break;
          default: if (at < text.size()) text.erase(at, 1); break;
        }
      }
      std::smatch m;
      bool expected = std::regex_match(text, m, *c.re);
      if (expected && c.format == JsonFormat::DateTime) {
        expected = std::chrono::year_month_day{std::chrono::year{std::stoi(m[1].str())},
                                               std::chrono::month{static_cast<unsigned>(std::stoi(m[2].str()))},
                                               std::chrono::day{static_cast<unsigned>(std::stoi(m[3].str()))}}
                       .ok();
      }
      CAPTURE(text);
      REQUIRE(whole(c.format, text) == expected);
      matched += expected ? 1 : 0;
    }
    CHECK(matched > 500);
  }
  // A refused byte leaves the lexer as it was.
  JsonFormatLexer lexer(JsonFormat::Time);
  for (char ch : std::string("12:3")) REQUIRE(lexer.push(static_cast<uint8_t>(ch)));
  CHECK_FALSE(lexer.push('x'));
  CHECK(lexer.push('0'));
}

TEST_CASE("JSON Schema: string formats are enforced, other formats are errors", "[json][schema][format]") {
  const auto schema = tc::text::JsonSchema::compile(nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"day": {"type": "string", "format": "date"},
          "id": {"type": ["string", "null"], "format": "uuid"}}, "required": ["day", "id"]})"));
  auto accepted = [&](const std::string& text) {
    tc::text::JsonSchemaPrefix p(schema.get());
    return p.push(text) && p.complete();
  };
  CHECK(accepted(R"({"day": "2024-02-29", "id": null})"));
  CHECK(accepted(R"({"day": "2024-02-29", "id": "123e4567-e89b-12d3-a456-426614174000"})"));
  CHECK_FALSE(accepted(R"({"day": "2023-02-29", "id": null})"));
  CHECK_FALSE(accepted(R"({"day": "2024-02-2", "id": null})"));
  CHECK_FALSE(accepted(R"({"day": "today", "id": null})"));
  for (const char* bad : {R"({"type": "object", "properties": {"e": {"type": "string", "format": "email"}}})",
                          R"({"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}})",
                          R"({"type": "object", "properties": {"d": {"type": "string", "format": "date", "maxLength": 3}}})"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(tc::text::JsonSchema::compile(nlohmann::ordered_json::parse(bad)), tc::text::SchemaError);
  }
}
