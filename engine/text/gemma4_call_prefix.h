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

#include "engine/text/step_call_prefix.h"

namespace tc::text {

class Gemma4CallPrefix : public StepCallPrefix<Gemma4CallPrefix> {
 public:
  static constexpr std::string_view kHead = "call:";
  static constexpr std::string_view kQuote = "<|\"|>";
  static constexpr std::string_view kTail = "<tool_call|>";

  // `grammar` (problem() empty) must outlive every copy of this state.
  explicit Gemma4CallPrefix(const ToolCallGrammar* grammar);

  // push(byte), push(bytes), accepts(bytes): StepCallPrefix's.
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

  friend class StepCallPrefix<Gemma4CallPrefix>;

  bool step(uint8_t byte);
  bool step_arguments(uint8_t byte);
  bool step_string(uint8_t byte);
  // StepCallPrefix's, on arguments_.
  bool feed(std::string_view json) { return StepCallPrefix::feed(arguments_, json); }
  bool feed_text(uint8_t byte) { return StepCallPrefix::feed_text(arguments_, byte); }
  bool could_feed(std::string_view json) const { return StepCallPrefix::could_feed(arguments_, json); }
  bool open(bool array);
  void close();

  const ToolCallGrammar* grammar_;
  Part part_ = Part::Head;
  At at_ = At::Other;
  uint8_t pos_ = 0;     // Head, Tail, Quote: bytes matched; String: bytes of the closing marker matched
  uint8_t depth_ = 0;   // open containers of the arguments
  uint64_t arrays_ = 0;  // bit d: the container at depth d is an array
  NameMatch name_;
  CallArguments arguments_;
};

}  // namespace tc::text
