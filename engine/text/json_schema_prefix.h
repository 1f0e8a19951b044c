// JsonSchemaPrefix: an incremental, byte-at-a-time check that a text is a
// prefix of one JSON value that a compiled JSON Schema (json_schema.h)
// accepts, for schema-constrained sampling (OpenAI's json_schema response
// format, Ollama's `format` schema). Like JsonPrefix: push() a byte or
// bytes, accepts() on a copy, complete() once the value is whole; strings
// and numbers as json_lexers.h reads them, and between tokens (and before
// the value) at most one space, or a newline and an indent (JsonGap). The state is a fixed-size value (a
// stack of kMaxDepth frames) but for a patterned string's matcher; the schema lives outside it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/text/gbnf_prefix.h"
#include "engine/text/json_formats.h"
#include "engine/text/json_lexers.h"
#include "engine/text/json_schema.h"

namespace tc::text {

class JsonSchemaPrefix {
 public:
  static constexpr int kMaxDepth = 24;

  // `schema` must outlive every copy of this state.
  explicit JsonSchemaPrefix(const JsonSchema* schema);

  bool push(uint8_t byte);
  // False when one of the bytes does not fit; the state is then unspecified.
  bool push(std::string_view bytes);
  bool accepts(std::string_view bytes) const;
  // The value is whole (nothing more can follow: the root is a container).
  bool complete() const { return done_; }
  // Inside a string with no length limit (or a key of an object without
  // declared properties), between characters: any printable ASCII other
  // than '"' and '\' may follow.
  bool in_free_string() const;

 private:
  // Where a container frame is.
  enum class Part : uint8_t {
    First,       // after '{' / '[': a key / an item, or the closing bracket
    Key,         // inside a declared key (matching properties by their bytes)
    OpenKey,     // inside a key of an object without declared properties
    Colon,       // after a key
    Value,       // the value must start (object: after ':'; array: after ',')
    AfterValue,  // ',' or the closing bracket
    NextKey,     // object, after ',': '"'
  };
  // What the top of the stack is reading when it is a scalar.
  enum class Scalar : uint8_t { None, String, Number, Literal };

  struct Frame {
    int32_t node = -1;   // an Object or Array node
    Part part = Part::First;
    uint8_t prop = 0;    // Object: the property being written, or the next one that may come
    uint16_t key_pos = 0;  // Key: bytes matched
    uint64_t alive = 0;  // Key: the candidate properties whose key still matches
    uint32_t count = 0;  // Array: items written
  };

  const SchemaNode& node(int index) const { return schema_->nodes[static_cast<size_t>(index)]; }
  bool push_byte(uint8_t byte);  // push() without restoring the state on failure
  bool push_value_start(int node_index, uint8_t byte);
  bool push_scalar(uint8_t byte);
  bool push_structure(uint8_t byte);
  bool push_key_byte(Frame& f, uint8_t byte);
  bool push_number_text(const SchemaNode& n, uint8_t byte);  // a bounded number's next byte
  bool object_may_close(const Frame& f) const;
  uint64_t key_candidates(const Frame& f) const;
  bool start_key(Frame& f);
  bool close();
  void end_value();

  const JsonSchema* schema_;
  std::array<Frame, kMaxDepth> stack_{};
  uint8_t depth_ = 0;
  bool done_ = false;
  JsonGap gap_;  // whitespace since the last token
  Scalar scalar_ = Scalar::None;
  int32_t scalar_node_ = -1;  // the String or Literals node being read
  JsonStringLexer string_;
  JsonFormatLexer format_;  // String with a format: read instead of string_
  JsonNumberLexer number_;
  std::optional<GbnfPrefix> pattern_;  // String with a pattern: the characters so far
  // A bounded number's bytes so far (sign, digits, '.', at most
  // kBoundedFractionDigits fraction digits), checked against its bounds.
  std::array<char, 40> number_text_{};
  uint8_t number_len_ = 0;
  uint16_t literal_lo_ = 0, literal_hi_ = 0, literal_pos_ = 0;  // Literal: literals [lo, hi) match the bytes so far
};

}  // namespace tc::text
