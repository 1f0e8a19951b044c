// JsonPrefix: an incremental, byte-at-a-time check that a text is a prefix
// of one JSON object (RFC 8259), for JSON-constrained sampling: the sampler
// keeps one per sequence and asks, for each candidate token, whether its
// bytes keep the text a valid prefix. The state is a small trivially
// copyable value, so trying a token is a copy and a few push() calls.
//
// Stricter than RFC 8259 where a strict parser or a runaway model would
// trip: the top-level value must be an object; strings and numbers as
// json_lexers.h reads them (valid UTF-8, no surrogates, numbers that fit a
// double); containers nest at most kMaxDepth deep; and between tokens (and
// before the object) at most one space, or a newline and an indent
// (JsonGap: a model that does not know JSON would otherwise pad forever).
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/text/json_lexers.h"

namespace tc::text {

class JsonPrefix {
 public:
  static constexpr int kMaxDepth = 64;
  // Appends one byte: false (and the state unchanged) when the text with it
  // is no longer a prefix of a JSON object.
  bool push(uint8_t byte);
  // Appends bytes: false when one of them does not fit. The state is then
  // unspecified: use it on a copy (see accepts()).
  bool push(std::string_view bytes);
  // Whether `bytes` appended keep the text a valid prefix (this is unchanged).
  bool accepts(std::string_view bytes) const;
  // The text is one whole JSON object (nothing more can follow).
  bool complete() const { return state_ == State::Done; }
  // Inside a string, between characters: any printable ASCII other than
  // '"' and '\' may follow.
  bool in_free_string() const { return state_ == State::String && string_.at_boundary(); }

 private:
  enum class State : uint8_t {
    Start,        // before the top-level object: whitespace or '{'
    ObjectFirst,  // after '{': whitespace, '"' (a key) or '}'
    ObjectKey,    // after ',' in an object: whitespace or '"'
    Colon,        // after a key: whitespace or ':'
    Value,        // a value must start
    ArrayFirst,   // after '[': a value or ']'
    AfterValue,   // whitespace, ',' or the bracket that closes the container
    String,       // inside a string (string_)
    Number,       // inside a number (number_)
    Literal,      // inside true / false / null
    Done,         // the top-level object is closed
  };

  bool push_value_start(uint8_t byte);
  bool push_structure(uint8_t byte);
  bool open(bool array);
  bool close(bool array);
  void end_value();

  uint64_t stack_ = 0;  // bit d: container at depth d is an array (1) or an object (0)
  uint8_t depth_ = 0;   // open containers
  State state_ = State::Start;
  bool key_ = false;              // the string being read is an object key
  uint8_t literal_ = 0;           // Literal: which of true/false/null
  uint8_t literal_pos_ = 0;       // Literal: bytes of it read
  JsonGap gap_;                   // whitespace since the last token
  JsonStringLexer string_;
  JsonNumberLexer number_;
};

}  // namespace tc::text
