// JsonPrefix: whole objects accepted byte by byte and complete only at their
// end; malformed texts refused at their first bad byte; random objects as
// nlohmann serialises them accepted, and every random text it calls
// complete parsed by nlohmann as an object.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/json_prefix.h"

using tc::text::JsonPrefix;

namespace {

// The index of the first byte JsonPrefix refuses, or -1; `complete` is set
// to whether the whole text made an object.
int first_refused(const std::string& text, bool& complete) {
  JsonPrefix p;
  for (size_t i = 0; i < text.size(); ++i) {
    if (p.complete()) {
      complete = true;  // something after the end
    }
    if (!p.push(static_cast<uint8_t>(text[i]))) {
      complete = p.complete();
      return static_cast<int>(i);
    }
  }
  complete = p.complete();
  return -1;
}

// prefix followed by n in decimal (appended, not `+`: GCC 12 warns about
// string concatenation with -Wrestrict where nothing is wrong).
std::string key(const char* prefix, unsigned n) {
  std::string k = prefix;
  k.append(std::to_string(n));
  return k;
}

nlohmann::json random_value(std::mt19937& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 3 ? 6 : 8));
  switch (kind) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: return static_cast<int64_t>(rng()) - (1ll << 31);
    case 3: return std::ldexp(static_cast<double>(rng() % 100000) - 50000.0, static_cast<int>(rng() % 40) - 20);
    case 4:
    case 5: {
      static const std::vector<std::string> pieces = {"a", "Zz", " ", "\"", "\\", "/", "\n", "\t", "\x01",
                                                      "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "{}", "[,]"};
      std::string s;
      const int n = static_cast<int>(rng() % 6);
      for (int i = 0; i < n; ++i) s += pieces[rng() % pieces.size()];
      return s;
    }
    case 6: {
      nlohmann::json a = nlohmann::json::array();
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) o[key("k", rng() % 50)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

}  // namespace

TEST_CASE("JsonPrefix: accepts whole JSON objects byte by byte, complete only at their last byte", "[json]") {
  const std::vector<std::string> texts = {
      "{}",
      "\n  { }",
      R"({"a":1})",
      R"({"a": [1, -2.5e+3, 0, 0.25, 1E9, true, false, null, "x"], "b": {"c": {}}})",
      R"({"s": "tab\t quote\" slash\/ back\\ u\u00e9\u20AC"})",
      "{\"utf8\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
      R"({"nested": [[[[]]], [{}], {"x": [null]}]})",
      R"({"n": -0, "m": 0e5, "k": 10.0E-2})",
  };
  for (const std::string& text : texts) {
    CAPTURE(text);
    JsonPrefix p;
    for (size_t i = 0; i < text.size(); ++i) {
      REQUIRE_FALSE(p.complete());
      REQUIRE(p.push(static_cast<uint8_t>(text[i])));
    }
    REQUIRE(p.complete());
    CHECK(nlohmann::json::parse(text).is_object());
    // Nothing may follow, not even whitespace.
    CHECK_FALSE(p.accepts(" "));
    CHECK_FALSE(p.accepts("}"));
  }
}

TEST_CASE("JsonPrefix: refuses malformed text at its first bad byte and keeps its state", "[json]") {
  struct Case {
    std::string text;
    int bad;  // index of the first byte refused
  };
  const std::vector<Case> cases = {
      {"[1]", 0},                 // the top level must be an object
      {"\"a\"", 0},
      {"{a", 1},                  // keys are strings
      {"{\"a\" 1", 5},            // a colon must follow a key
      {"{\"a\":}", 5},
      {"{\"a\":1,}", 7},          // no trailing comma
      {"{\"a\":[1,]}", 8},
      {"{\"a\":01}", 6},          // no leading zeros
      {"{\"a\":-}", 6},
      {"{\"a\":1.}", 7},
      {"{\"a\":1e}", 7},
      {"{\"a\":.5}", 5},
      {"{\"a\":+1}", 5},
      {"{\"a\":tru}", 8},
      {"{\"a\":nul1}", 8},
      {"{\"a\":[}", 6},           // brackets must match
      {"{\"a\":[1}", 7},
      {"{\"a\":\"x\ny\"}", 7},    // raw control character in a string
      {"{\"a\":1e123}", 9},         // exponents of at most two digits
      {"{\"a\":123456789012345678901}", 25},  // integer parts of at most 20 digits
      {"{\"a\":\"\\x\"}", 7},     // unknown escape
      {"{\"a\":\"\\u12g4\"}", 10},
      {"{\"a\":\"\\ud800\"}", 9},  // surrogate escape
      {"{\"a\":\"\xc0\x80\"}", 6},  // overlong UTF-8
      {"{\"a\":\"\xe0\x80\x80\"}", 7},
      {"{\"a\":\"\xed\xa0\x80\"}", 7},  // UTF-8 surrogate
      {"{\"a\":\"\xf5\"}", 6},
      {"{\"a\":\"\xc3\x41\"}", 7},  // missing continuation byte
      {"{}}", 2},                 // nothing after the object
      {"{} ", 2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    bool complete = false;
    CHECK(first_refused(c.text, complete) == c.bad);
    // A refused byte leaves the state as it was: the good prefix still takes
    // a valid continuation where one exists.
    JsonPrefix p;
    REQUIRE(p.push(std::string_view(c.text).substr(0, static_cast<size_t>(c.bad))));
    CHECK_FALSE(p.push(static_cast<uint8_t>(c.text[static_cast<size_t>(c.bad)])));
    CHECK(p.accepts(std::string_view(c.text).substr(0, 0)));
  }
  // Depth and whitespace limits.
  std::string deep = "{\"a\":";
  for (int i = 1; i < JsonPrefix::kMaxDepth; ++i) deep += "[";
  bool complete = false;
  CHECK(first_refused(deep, complete) == -1);
  CHECK(first_refused(deep + "[", complete) == static_cast<int>(deep.size()));
  // Between tokens: one space, or a newline and an indent of at most 20.
  const std::string indent(tc::text::JsonGap::kMaxIndent, ' ');
  CHECK(first_refused("{\n" + indent + "}", complete) == -1);
  CHECK(first_refused("{\n" + indent + " }", complete) == static_cast<int>(indent.size()) + 2);
  CHECK(first_refused("{\n\t\t\"a\": 1,\n\t\t\"b\": 2\n}", complete) == -1);
  CHECK(first_refused("{  }", complete) == 2);
  CHECK(first_refused("{ \n}", complete) == 2);
  CHECK(first_refused("{\n\n}", complete) == 2);
  CHECK(first_refused("{\t}", complete) == 1);
  CHECK(first_refused("\n{}", complete) == -1);
  CHECK(first_refused("\n\n{}", complete) == 1);
}

TEST_CASE("JsonPrefix: random objects as nlohmann writes them are accepted, and random texts it completes parse", "[json]") {
  std::mt19937 rng(20261127);
  for (int i = 0; i < 2000; ++i) {
    nlohmann::json doc = nlohmann::json::object();
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) doc[key("key", static_cast<unsigned>(k))] = random_value(rng, 1);
    const std::string text = doc.dump(i % 3 == 0 ? -1 : static_cast<int>(i % 3));
    CAPTURE(text);
    JsonPrefix p;
    REQUIRE(p.push(text));
    REQUIRE(p.complete());
  }
  // Random texts over JSON's own alphabet: whatever JsonPrefix calls a
  // complete object, a strict parser reads as one.
  const std::string alphabet = "{}[]\":,. -+0123456789eEtrufalsn\\/bx\xc3\xa9";
  int completed = 0;
  for (int i = 0; i < 200000; ++i) {
    JsonPrefix p;
    std::string text;
    for (int step = 0; step < 40 && !p.complete(); ++step) {
      // Mostly bytes that fit, sometimes any byte (refused ones are dropped).
      const char c = alphabet[rng() % alphabet.size()];
      if (p.push(static_cast<uint8_t>(c))) text += c;
    }
    if (!p.complete()) continue;
    ++completed;
    CAPTURE(text);
    const auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    REQUIRE_FALSE(parsed.is_discarded());
    REQUIRE(parsed.is_object());
  }
  CHECK(completed > 1000);
}
