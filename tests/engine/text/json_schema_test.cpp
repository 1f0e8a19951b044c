// JSON Schema constrained output: schemas compile or fail naming the
// keyword; JsonSchemaPrefix accepts valid instances (written in the order
// declared, compact or indented) byte by byte and refuses invalid ones
// (and padding) at their first bad byte; random instances generated from the schema are
// accepted; the mask with its shortcuts equals trying every token; and
// on random logits every text the sampler closes parses and validates
// against the schema by an independent validator written here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/output_constraint.h"
#include "engine/runtime/sampler.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"
#include "tests/engine/text/constrained_walk.h"
#include "tests/engine/text/text_test_util.h"

// Ordered: objects keep their members in the order written, as the server
// reads a schema from the request's text.
using json = nlohmann::ordered_json;
using tc::text::JsonSchema;
using tc::text::JsonSchemaPrefix;

namespace {

const json& person_schema() {
  static const json s = json::parse(R"({
    "type": "object",
    "title": "Person",
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 8},
      "age": {"type": "integer"},
      "score": {"type": ["number", "null"]},
      "tags": {"type": "array", "items": {"enum": ["a", "bc", 1, 12]}, "maxItems": 3},
      "home": {"anyOf": [{"$ref": "#/$defs/place"}, {"type": "null"}]},
      "nick": {"type": "string"}
    },
    "required": ["name", "age", "home"],
    "additionalProperties": false,
    "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}, "ok": {"type": "boolean"}},
                        "required": ["city"]}}
  })");
  return s;
}

const json& tree_schema() {
  static const json s = json::parse(R"({
    "type": "object",
    "properties": {"v": {"const": "x"}, "kids": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2},
                   "meta": {"type": "object", "additionalProperties": {"type": "integer"}}, "any": {}},
    "required": ["v"]
  })");
  return s;
}

// The index of the first byte refused, or -1; `complete` after all bytes.
int first_refused(const JsonSchema& schema, const std::string& text, bool& complete) {
  JsonSchemaPrefix p(&schema);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!p.push(static_cast<uint8_t>(text[i]))) {
      complete = false;
      return static_cast<int>(i);
    }
  }
  complete = p.complete();
  return -1;
}

// An independent validator for the keywords the compiler supports.
bool validates(const json& v, const json& s, const json& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    return validates(v, root.at(json::json_pointer(s["$ref"].get<std::string>().substr(1))), root);
  }
  if (s.contains("const")) return v == s["const"];
  if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    int matches = 0;
    for (const auto& alt : s[key]) matches += validates(v, alt, root) ? 1 : 0;
    return std::string(key) == "anyOf" ? matches > 0 : matches == 1;
  }
  if (s.contains("type")) {
    const json types = s["type"].is_array() ? s["type"] : json::array({s["type"]});
    bool ok = false;
    for (const auto& t : types) {
      ok = ok || (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
           (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
           (t == "integer" && v.is_number_integer()) || (t == "boolean" && v.is_boolean()) ||
           (t == "null" && v.is_null());
    }
    if (!ok) return false;
  }
  if (v.is_object()) {
    for (const auto& r : s.value("required", json::array())) {
      if (!v.contains(r.get<std::string>())) return false;
    }
    const json props = s.value("properties", json::object());
    for (const auto& [k, x] : v.items()) {
      if (props.contains(k)) {
        if (!validates(x, props[k], root)) return false;
      } else if (s.contains("additionalProperties")) {
        if (!validates(x, s["additionalProperties"], root)) return false;
      }
    }
  }
  if (v.is_array()) {
    if (v.size() < s.value("minItems", 0u) || v.size() > s.value("maxItems", 1000000u)) return false;
    for (const auto& x : v) {
      if (s.contains("items") && !validates(x, s["items"], root)) return false;
    }
  }
  if (v.is_string()) {
    // Characters: UTF-8 lead bytes.
    size_t chars = 0;
    for (unsigned char c : v.get<std::string>()) chars += (c & 0xc0) != 0x80 ? 1 : 0;
    if (chars < s.value("minLength", 0u) || chars > s.value("maxLength", 1000000u)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("JSON Schema: unsupported or contradictory schemas fail naming the keyword and where", "[json][schema]") {
  struct Case {
    const char* schema;
    const char* message;  // a part of the error
  };
  const std::vector<Case> cases = {
      {R"({"type": "object", "properties": {"a": {"type": "string", "pattern": "\\bx"}}})",
       "the pattern uses a word boundary (\\b), which cannot be enforced at /properties/a"},
      {R"({"type": "object", "properties": {"d": {"type": "string", "format": "email"}}})", "'format' \"email\" is not supported"},
      {R"({"type": "object", "properties": {"n": {"type": "number", "multipleOf": 2}}})", "'multipleOf'"},
      {R"({"type": "object", "properties": {"n": {"type": "number", "minimum": 3, "maximum": 2}}})",
       "the bounds leave no number"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 2.2, "maximum": 2.8}}})",
       "the bounds leave no number"},
      {R"({"type": "object", "properties": {"n": {"type": "number", "minimum": "0"}}})", "'minimum' must be a number"},
      {R"({"allOf": [{"type": "object"}, {"type": "object"}]})", "'allOf' of more than one schema"},
      {R"({"allOf": [{"type": "object"}], "type": "object"})", "'allOf' beside other constraints"},
      {R"({"type": "string"})", "root must be an object or an array"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})", "points at nothing"},
      {R"({"type": "object", "properties": {"a": {"$ref": "other.json"}}})", "not within this schema"},
      {R"({"type": "object", "properties": {"a": {"anyOf": [{"type": "object"}, {"type": "object"}]}}})", "start alike"},
      {R"({"type": "object", "properties": {"a": {"type": ["integer", "number"]}}})", "start alike"},
      {R"({"type": "object", "properties": {"a": false}})", "'false'"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "'b' is not in 'properties'"},
      {R"({"type": "array", "items": [{"type": "string"}]})", "tuple"},
      {R"({"type": "object", "properties": {"a": {"type": "strange"}}})", "unknown type 'strange'"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "'minItems' is above 'maxItems'"},
      {R"({"type": "object", "properties": {"d": {"type": "string", "nullable": ["d"]}}})",
       "'nullable' must be true or false"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}})", "cycle"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.schema);
    try {
      JsonSchema::compile(json::parse(c.schema));
      FAIL("compiled");
    } catch (const tc::text::SchemaError& e) {
      CHECK_THAT(e.what(), Catch::Contains(c.message));
    }
  }
  CHECK_NOTHROW(JsonSchema::compile(person_schema()));
  CHECK_NOTHROW(JsonSchema::compile(tree_schema()));
}

TEST_CASE("JSON Schema: valid instances are accepted, invalid ones refused at their first bad byte", "[json][schema]") {
  const auto schema = JsonSchema::compile(person_schema());
  const std::vector<std::string> valid = {
      R"({"name": "Ann", "age": 41, "home": null})",
      R"({"name":"Bo","age":-3,"score":2.5e-3,"tags":["a",12,1],"home":{"city":"Oslo","ok":true},"nick":"b"})",
      R"({"name": "\u00e9\n", "age": 0, "score": null, "tags": [], "home": {"city": ""}})",
      "\n{\n  \"name\": \"x\",\n\t\t\"age\": 7,\n  \"home\": null\n}",
  };
  for (const auto& text : valid) {
    CAPTURE(text);
    bool complete = false;
    CHECK(first_refused(*schema, text, complete) == -1);
    CHECK(complete);
    CHECK(validates(json::parse(text), person_schema(), person_schema()));
  }
  struct Case {
    std::string text;
    int refused;
  };
  const std::vector<Case> invalid = {
      {R"({"age": 1})", 2},                                  // "name" is required first
      {R"({"name": "", "age": 1})", 10},                     // minLength 1
      {R"({"name": "123456789"})", 18},                      // maxLength 8
      {R"({"name": "a", "nick": "b"})", 15},                 // required "age" and "home" come first
      {R"({"name": "a", "age": 1.5})", 22},                  // an integer
      {R"({"name": "a", "age": 1, "home": null, "x": 1})", 39},   // no undeclared key
      {R"({"name": "a", "age": 1})", 22},                    // "home" is required: no '}' yet
      {R"({"name": "a", "age": 1, "tags": ["b"]})", 35},     // not in the enum
      {R"({"name": "a", "age": 1, "tags": [1, 12, 1, 1]})", 41},  // maxItems 3
      {R"({"name": "a", "age": 1, "tags": [123]})", 35},     // 12 then 3: no such literal
      {R"({"name": "a", "age": 1, "home": {"ok": true}})", 34},   // "city" required
      {R"({"name": "a", "age": 1, "home": 5})", 32},
      {R"(["name"])", 0},
      {"{\"name\":  \"a\"", 9},                         // one space at most
      {"{\"name\":\n\n\"a\"", 9},                     // one newline at most
      {"{\n" + std::string(21, ' ') + "\"name\"", 22},  // an indent of 20 at most
  };
  for (const auto& c : invalid) {
    CAPTURE(c.text);
    bool complete = false;
    CHECK(first_refused(*schema, c.text, complete) == c.refused);
  }
  // Recursion through "#", open objects and any values.
  const auto tree = JsonSchema::compile(tree_schema());
  bool complete = false;
  const std::string nested = R"({"v": "x", "kids": [{"v": "x", "kids": [{"v": "x"}]}, {"v": "x", "meta": {"a": 1, "b": -2}}],
    "any": {"q": [1, "s", null, {"t": false}]}})";
  CHECK(first_refused(*tree, nested, complete) == -1);
  CHECK(complete);
  CHECK(first_refused(*tree, R"({"v": "x", "meta": {"a": 1.5}})", complete) == 26);
  CHECK(first_refused(*tree, R"({"v": "y"})", complete) == 7);
}

namespace {

// A random instance of `s` (the supported subset), properties in order.
json random_instance(const json& s, const json& root, std::mt19937& rng, int depth) {
  if (s.contains("$ref")) return random_instance(root.at(json::json_pointer(s["$ref"].get<std::string>().substr(1))), root, rng, depth);
  if (s.contains("const")) return s["const"];
  if (s.contains("enum")) return s["enum"][rng() % s["enum"].size()];
  if (s.contains("anyOf")) return random_instance(s["anyOf"][rng() % s["anyOf"].size()], root, rng, depth);
  std::string type = "object";
  if (s.contains("type")) type = s["type"].is_array() ? s["type"][rng() % s["type"].size()] : s["type"];
  else if (!s.contains("properties") && !s.contains("additionalProperties")) type = depth > 2 ? "string" : "array";
  if (type == "object") {
    json o = json::object();
    const json required = s.value("required", json::array());
    const json props = s.value("properties", json::object());
    for (const auto& [k, sub] : props.items()) {
      const bool req = std::find(required.begin(), required.end(), k) != required.end();
      if (req || (depth < 3 && rng() % 2 == 0)) o[k] = random_instance(sub, root, rng, depth + 1);
    }
    if (s.contains("additionalProperties") && s["additionalProperties"].is_object() && depth < 3) o["k" + std::to_string(rng() % 9)] = random_instance(s["additionalProperties"], root, rng, depth + 1);
    return o;
  }
  if (type == "array") {
    json a = json::array();
    const size_t n = depth > 2 ? 0 : std::min<size_t>(s.value("maxItems", 3u), rng() % 4);
    for (size_t i = 0; i < n; ++i) a.push_back(random_instance(s.value("items", json::object()), root, rng, depth + 1));
    return a;
  }
  if (type == "string") {
    static const char* pieces[] = {"s", "\"", "\xc3\xa9", "\\", "\n", "\xf0\x9f\x98\x80"};
    std::string text;
    for (unsigned i = 0, n = 1 + rng() % 4; i < n; ++i) text += pieces[rng() % 6];
    return text;
  }
  if (type == "integer") return static_cast<int>(rng() % 2000) - 1000;
  if (type == "number") return (static_cast<double>(rng() % 20000) - 10000.0) / 64.0;
  if (type == "boolean") return rng() % 2 == 0;
  return nullptr;
}

}  // namespace

TEST_CASE("JSON Schema: random instances in declared order are accepted compact and indented", "[json][schema]") {
  std::mt19937 rng(17);
  for (const json* schema_json : {&person_schema(), &tree_schema()}) {
    const auto schema = JsonSchema::compile(*schema_json);
    int tried = 0;
    for (int i = 0; i < 400; ++i) {
      const json instance = random_instance(*schema_json, *schema_json, rng, 0);  // properties in declared order
      if (!validates(instance, *schema_json, *schema_json)) continue;  // e.g. a string under minLength
      for (int indent : {-1, 2}) {
        const std::string text = instance.dump(indent);
        CAPTURE(text);
        bool complete = false;
        REQUIRE(first_refused(*schema, text, complete) == -1);
        REQUIRE(complete);
      }
      ++tried;
    }
    CHECK(tried >= 300);
  }
}

namespace {

const tc::text::Tokenizer& schema_tokenizer() {
  static const auto tokenizer = tc::text::Tokenizer::create(tc::text::test::spm_vocab({
      {"{", 0}, {"}", 0}, {"[", 0}, {"]", 0}, {"\"", 0}, {":", 0}, {",", 0}, {"a", 0}, {"b", 0}, {"c", 0},
      {"1", 0}, {"2", 0}, {"0", 0}, {".", 0}, {"e", 0}, {"-", 0}, {"true", 0}, {"null", 0}, {"\u2581", 0},
      {"name", 0}, {"age", 0}, {"home", 0}, {"city", 0}, {"tags", 0}, {"score", 0}, {"ok", 0}, {"nick", 0},
      {"{\"", 0}, {"\":", 0}, {"\",", 0}, {"\"}", 0}, {"x", 0}, {"v", 0}, {"kids", 0}, {"meta", 0}, {"any", 0},
      {"ab c", 0}, {"\\n", 0}, {"\u00e9", 0}, {"\u2581\"", 0}, {"\u2581{", 0}, {"\u2581[", 0}, {"\u25811", 0},
      {"\u2581true", 0}, {"\u2581x", 0}, {"\u2581\u2581", 0}, {"\n", 0}, {"\n\"", 0}, {"\n}", 0}, {"\n\u2581", 0},
  }));
  return *tokenizer;
}

}  // namespace

TEST_CASE("Constrained output: the mask and its shortcuts allow exactly the tokens whose bytes fit",
          "[sampler][json][schema]") {
  const auto& tokenizer = schema_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  REQUIRE(std::count(table->plain.begin(), table->plain.end(), 1) > 10);
  const auto person = JsonSchema::compile(person_schema());
  const auto tree = JsonSchema::compile(tree_schema());
  // Each form with the reference: the automaton fed the text so far, then
  // every token's bytes tried on a copy.
  using Fits = std::function<bool(const std::string& text, const std::string& piece, bool& whole)>;
  auto fits_with = [](auto start) -> Fits {
    return [start](const std::string& text, const std::string& piece, bool& whole) {
      auto p = start;
      if (!p.push(text)) return false;
      whole = p.complete();
      return p.accepts(piece);
    };
  };
  const std::vector<std::pair<tc::runtime::OutputForm, Fits>> forms = {
      {tc::runtime::OutputForm::json_object(), fits_with(tc::text::JsonPrefix())},
      {tc::runtime::OutputForm::json_schema(person), fits_with(JsonSchemaPrefix(person.get()))},
      {tc::runtime::OutputForm::json_schema(tree), fits_with(JsonSchemaPrefix(tree.get()))},
  };
  std::mt19937 rng(29);
  int compared = 0;
  for (const auto& [form, fits] : forms) {
    for (int walk = 0; walk < 20; ++walk) {
      tc::runtime::OutputConstraint constraint(table, form);
      std::string text;
      for (int step = 0; step < 200 && !constraint.complete(); ++step) {
        std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
        constraint.mask(logits);
        std::vector<tc::text::TokenId> allowed;
        for (int t = 0; t < n_vocab; ++t) {
          const auto i = static_cast<size_t>(t);
          bool whole = false;
          const bool is_text = table->kind[i] == tc::runtime::ConstraintTokenTable::Kind::Text;
          const bool expected = is_text ? fits(text, table->bytes[i], whole) : false;
          CAPTURE(text, table->bytes[i]);
          if (is_text) REQUIRE((logits[i] == 0.0f) == expected);
          if (is_text && expected) allowed.push_back(t);
        }
        ++compared;
        if (allowed.empty()) break;
        const auto t = allowed[rng() % allowed.size()];
        constraint.accept(t);
        text += table->bytes[static_cast<size_t>(t)];
      }
    }
  }
  CHECK(compared > 1000);
}

TEST_CASE("JSON Schema mode: random logits give texts that close and validate", "[sampler][json][schema]") {
  const auto& tokenizer = schema_tokenizer();
  const int32_t n_vocab = tokenizer.n_vocab();
  const auto table = tc::runtime::ConstraintTokenTable::from(tokenizer, n_vocab);
  const tc::text::TokenId eos = tokenizer.vocab().eos_id;
  std::mt19937 rng(23);
  for (const json* schema_json : {&person_schema(), &tree_schema()}) {
    const auto schema = JsonSchema::compile(*schema_json);
    int closed = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const auto walk = tc::text::test::constrained_walk(
          table, tc::runtime::OutputForm::json_schema(schema), eos, seed, rng,
          [&](const std::string& text) { return JsonSchemaPrefix(schema.get()).accepts(text); });
      if (!walk.closed) continue;
      ++closed;
      CAPTURE(walk.text);
      REQUIRE(validates(json::parse(walk.text), *schema_json, *schema_json));
    }
    CHECK(closed >= 30);
  }
}

TEST_CASE("JSON Schema: allOf of one schema is that schema, as Pydantic writes a referenced model",
          "[json][schema]") {
  const auto schema = JsonSchema::compile(json::parse(R"({"type": "object",
    "properties": {"home": {"allOf": [{"$ref": "#/$defs/place"}], "description": "where"}}, "required": ["home"],
    "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"));
  for (const auto& [text, fits] : std::vector<std::pair<std::string, bool>>{
           {R"({"home": {"city": "Oslo"}})", true}, {R"({"home": 3})", false}, {R"({"home": {}})", false}}) {
    CAPTURE(text);
    bool complete = false;
    const int refused = first_refused(*schema, text, complete);
    CHECK((refused == -1 && complete) == fits);
  }
}
