// Gemma 4's tool call, read byte by byte from what follows its <|tool_call>
// marker, as llama.cpp's gemma4 grammar (common/chat.cpp) reads it and its
// gemma4_to_json turns the arguments into JSON:
//   call:NAME{KEY:VALUE,...}<tool_call|>
// NAME a declared function; KEY bare (one or more bytes, none ':' or '}');
// VALUE one of
//   <|"|>TEXT<|"|>    a string, TEXT as written (any bytes but the marker),
//   {KEY:VALUE,...}   an object,
//   [VALUE,...]       an array,
//   a JSON number, true, false or null.
// Blanks may follow '{', '[', ',' and ':', and, a little more lenient than
// llama.cpp, precede ',' and the closing brackets. Containers nest at most
// kMaxDepth deep. A key written twice keeps its last value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_call_parser.h"

namespace tc::server {

inline constexpr std::string_view kGemma4Quote = "<|\"|>";
inline constexpr std::string_view kGemma4CallClose = "<tool_call|>";

class Gemma4CallReader {
 public:
  enum class Status { More, Done, Invalid };
  static constexpr size_t kMaxDepth = 64;

  // One more byte of the call. `names`: the declared functions, sorted.
  // Done once the call is whole (its closing marker read); Invalid, for
  // good, from the first byte that no call can go on with.
  Status push(char c, const std::vector<std::string>& names);
  Status status() const;
  // Done: the call, its arguments the object as JSON, serialised (id unset).
  ToolCall call() const;

 private:
  enum class At : uint8_t {
    Prefix,      // "call:"
    Name,        // the function's name, up to '{'
    KeyStart,    // an object's next key (or, first_key, its '}')
    Key,         // inside a key, up to ':'
    ValueStart,  // a value must start (or, after '[', the ']')
    OpenQuote,   // a string's opening marker, after its '<'
    String,      // inside a string
    Number,      // inside a number
    Literal,     // inside true, false or null
    AfterValue,  // ',' or the closing bracket
    Close,       // the closing marker
    Done,
    Invalid,
  };
  // Where a JSON number is: after '-', a leading 0, integer digits, '.',
  // fraction digits, 'e', the exponent's sign, exponent digits.
  enum class Num : uint8_t { Minus, Zero, Int, Dot, Frac, E, ESign, Exp };

  Status fail();
  Status step(char c, const std::vector<std::string>& names);
  Status value_start(char c);
  Status after_value(char c);
  bool number_byte(char c);
  bool number_whole() const;
  // A value is whole: into its container.
  void add_value(nlohmann::json value);
  // The innermost container closes.
  Status close();

  struct Frame {
    nlohmann::json value;  // an object or an array
    std::string key;       // object: the key whose value comes next
  };

  At at_ = At::Prefix;
  bool first_key_ = false;   // KeyStart: right after '{' ('}' may come)
  bool first_item_ = false;  // ValueStart: right after '[' (']' may come)
  Num num_ = Num::Minus;
  size_t pos_ = 0;  // Prefix, OpenQuote, Literal, Close: bytes matched; String: bytes of the closing marker
  std::string_view literal_;  // Literal: "true", "false" or "null"
  std::string name_;
  std::string text_;  // Key, String, Number: the bytes so far
  std::vector<Frame> stack_;
  nlohmann::json arguments_;  // Close, Done: the arguments' object
};

}  // namespace tc::server
