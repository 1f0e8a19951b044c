// parse_json_body: size limit, syntax, and the nesting bound that keeps the
// recursive JSON walks downstream within a thread's stack.
#include <catch2/catch.hpp>
#include <string>

#include "server/request_body.h"

namespace {

using tc::server::kMaxJsonDepth;
using tc::server::parse_json_body;

// `depth` levels of alternating arrays and objects around a number.
std::string nested(int depth) {
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    if (i % 2 == 0) {
      open += "[";
      close = "]" + close;
    } else {
      open += "{\"k\":";
      close = "}" + close;
    }
  }
  return open + "7" + close;
}

}  // namespace

TEST_CASE("parse_json_body: valid bodies parse, the rest are 400s and 413s naming why", "[server][body]") {
  const auto ok = parse_json_body(R"({"prompt": "a", "n": 2})", 1 << 20);
  REQUIRE_FALSE(ok.error);
  CHECK(ok.json["n"] == 2);

  const auto large = parse_json_body(std::string(101, ' ') + "{}", 100);
  REQUIRE(large.error);
  CHECK(large.error->status == 413);

  // Each names where and why, in printable ASCII only (the body's own bytes,
  // possibly invalid UTF-8, are not echoed).
  const std::pair<const char*, const char*> bad_bodies[] = {
      {"", "line 1, column 1: "},
      {"{", "line 1, column 2: "},
      {"{\"a\": }", "unexpected '}'"},
      {"[1, 2", "line 1, column 6: "},
      {"{\"a\": \"\xff\"}", "ill-formed UTF-8 byte"},
      {"{\"a\":\n \"x\xc3\"}", "line 2, column 5: "},
      {"nul", "invalid literal"},
  };
  for (const auto& [bad, why] : bad_bodies) {
    INFO(bad);
    const auto r = parse_json_body(bad, 1 << 20);
    REQUIRE(r.error);
    CHECK(r.error->status == 400);
    CHECK_THAT(r.error->message, Catch::StartsWith("request body is not valid JSON: parse error at line "));
    CHECK_THAT(r.error->message, Catch::Contains(why));
    CHECK_THAT(r.error->message, !Catch::Contains("last read"));
    for (const char c : r.error->message) CHECK((c >= 0x20 && c <= 0x7e));
  }
}

TEST_CASE("parse_json_body: nesting is bounded before any DOM is built", "[server][body]") {
  const auto at_limit = parse_json_body(nested(kMaxJsonDepth), 1 << 20);
  REQUIRE_FALSE(at_limit.error);
  CHECK(at_limit.json.is_array());
  // Depth is per path, not per body: many siblings at the limit are fine.
  // Appended, not `"[" + nested(...)`: GCC 12 warns -Wrestrict on that (a false positive).
  std::string two = "[";
  two += nested(kMaxJsonDepth - 1);
  two += ",";
  two += nested(kMaxJsonDepth - 1);
  two += "]";
  const auto siblings = parse_json_body(two, 1 << 20);
  CHECK_FALSE(siblings.error);

  for (const int depth : {kMaxJsonDepth + 1, 1000, 200000}) {
    INFO("depth " << depth);
    const auto r = parse_json_body("{\"tools\": " + nested(depth - 1) + "}", 1 << 22);
    REQUIRE(r.error);
    CHECK(r.error->status == 400);
    CHECK(r.error->message == "request body nests arrays and objects more than 128 levels deep");
  }
  // A syntax error beyond the limit still names the depth (the first problem the parse meets).
  const auto deep_and_broken = parse_json_body(std::string(kMaxJsonDepth + 5, '['), 1 << 20);
  REQUIRE(deep_and_broken.error);
  CHECK_THAT(deep_and_broken.error->message, Catch::Contains("levels deep"));
}
