// JsonSchema: a JSON Schema compiled into a graph of nodes that the
// schema-constrained sampler (json_schema_prefix.h) walks byte by byte, for
// OpenAI's response_format {"type": "json_schema"} and Ollama's `format`
// with a schema.
//
// What is enforced: type (one or several), properties / required /
// additionalProperties, items / minItems / maxItems, minLength /
// maxLength, format (date, time, date-time, uuid: json_formats.h),
// allOf of one schema, minimum / maximum / exclusiveMinimum / exclusiveMaximum
// (json_number_bounds.h; a bounded number has no exponent), pattern (a
// regular expression, regex_to_gbnf.h; its strings are written without
// escapes), enum, const, anyOf / oneOf (alternatives must start
// differently: an object and a string, not two objects), $ref to "#" or a
// JSON pointer into the document ($defs, definitions; recursion allowed),
// nullable. Objects are written with their declared properties in the
// order declared (required ones always, optional ones may be left out);
// extra properties only where an object declares none. Annotations (title,
// description, default, examples, $schema, ...) and unknown keywords are
// ignored. Keywords that constrain in ways this cannot enforce
// (multipleOf, allOf, not, ...) are a SchemaError naming them, never
// silently dropped (so is any other format). The root must be an object or
// an array.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/gbnf_grammar.h"
#include "engine/text/json_formats.h"
#include "engine/text/json_number_bounds.h"

namespace tc::text {

// A schema that cannot be compiled: what() names the keyword and where,
// e.g. "'pattern' at /properties/name is not supported".
class SchemaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SchemaNode {
  enum class Kind : uint8_t {
    Object,    // properties (closed) or, with none declared, any keys with `additional` values
    Array,     // items of `items`
    String,
    Number,
    Integer,
    Literals,  // one of `literals` (enum, const, boolean, null)
    Choice,    // one of `alternatives`, told apart by the first byte
  };
  struct Property {
    std::string key;  // the key as JSON writes it after its opening quote, closing quote included
    int node = -1;
    bool required = false;
  };

  Kind kind = Kind::Choice;
  std::vector<Property> properties;  // Object: in the order declared (at most 64)
  int additional = -1;               // Object without properties: the values' node
  int items = -1;                    // Array
  uint32_t min_items = 0, max_items = std::numeric_limits<uint32_t>::max();
  uint32_t min_length = 0, max_length = std::numeric_limits<uint32_t>::max();  // String, in characters
  JsonFormat format = JsonFormat::None;                                         // String
  NumberBounds bounds;  // Number, Integer: minimum / maximum (an Integer's rounded inward to integers)
  std::shared_ptr<const GbnfGrammar> pattern;  // String: its `pattern` as a grammar (regex_to_gbnf.h), or null
  std::vector<std::string> literals;  // Literals: compact JSON texts, sorted, distinct
  std::vector<int> alternatives;      // Choice
  std::array<int16_t, 256> by_first_byte{};  // Choice: the alternative (index into alternatives) a byte starts, or -1
};

struct JsonSchema {
  std::vector<SchemaNode> nodes;
  int root = -1;

  static constexpr size_t kMaxProperties = 64;
  static constexpr size_t kMaxNodes = 4096;

  // Throws SchemaError. Objects are written with their properties in the
  // order of `schema`'s members, so it is an ordered_json read from the
  // request's text (nlohmann::json would have sorted them).
  static std::shared_ptr<const JsonSchema> compile(const nlohmann::ordered_json& schema);
};

}  // namespace tc::text
