// Gemma4CallPrefix: an incremental, byte-at-a-time check of one tool call
// as Gemma 4 writes it after its <|tool_call> marker:
//
//   call:NAME{KEY:VALUE,...}<tool_call|>
//
// NAME one of a ToolCallGrammar's function names; keys bare; a VALUE a
// string between <|"|> markers (any text), an object, an array, a JSON
// number, true, false or null (server/gemma4_call_reader.h reads it back).
// The arguments are checked as the JSON they stand for: each byte is
// turned into JSON (a key's quotes added, a string's markers made quotes
// and its text escaped) and pushed to a JsonSchemaPrefix of the function's
// parameters when it has them, else a JsonPrefix (any object), so they fit
// the schema as JSON arguments would (properties in the order declared),
// with the whitespace JsonPrefix allows. Drives lazy Gemma 4 calls
// (runtime/output_constraint.h), on after each "<|tool_call>".
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

#include "engine/text/json_prefix.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/tool_call_prefix.h"

namespace tc::text {

class Gemma4CallPrefix {
 public:
  static constexpr std::string_view kHead = "call:";
  static constexpr std::string_view kQuote = "<|\"|>";
  static constexpr std::string_view kTail = "<tool_call|>";

  // `grammar` (problem() empty) must outlive every copy of this state.
  explicit Gemma4CallPrefix(const ToolCallGrammar* grammar);

  // False (the state unchanged) when the byte leaves the form.
  bool push(uint8_t byte);
  // False when one of the bytes does not fit; the state is then unspecified.
  bool push(std::string_view bytes);
  bool accepts(std::string_view bytes) const;
  // The call is whole, its closing marker written.
  bool complete() const { return part_ == Part::Done; }
  // Inside a string that takes any text, between characters, no marker begun.
  bool in_free_string() const;

 private:
  enum class Part : uint8_t { Head, Name, Arguments, Tail, Done };
  // Where the arguments are: an object's next key (or its '}'), inside a
  // key, a value to start, a string's opening marker, inside a string, or
  // elsewhere (inside a number or a literal, after a value).
  enum class At : uint8_t { KeyStart, Key, Value, Quote, String, Other };

  bool step(uint8_t byte);
  bool step_arguments(uint8_t byte);
  bool step_string(uint8_t byte);
  // Pushes JSON bytes to the arguments: false when they do not fit.
  bool feed(std::string_view json);
  // One byte of a key or a string, escaped as JSON wants it.
  bool feed_text(uint8_t byte);
  // Whether the arguments could take `json` now (this unchanged).
  bool could_feed(std::string_view json) const;
  bool open(bool array);
  void close();

  const ToolCallGrammar* grammar_;
  Part part_ = Part::Head;
  At at_ = At::Other;
  uint8_t pos_ = 0;     // Head, Tail, Quote: bytes matched; String: bytes of the closing marker matched
  uint8_t depth_ = 0;   // open containers of the arguments
  uint64_t arrays_ = 0;  // bit d: the container at depth d is an array
  NameMatch name_;
  std::variant<JsonPrefix, JsonSchemaPrefix> arguments_;
};

}  // namespace tc::text
