// Qwen3CoderCallPrefix: an incremental, byte-at-a-time check of one tool
// call in the XML form of Qwen3-Coder's template (Qwen 3.5, Nemotron Nano
// 3), after its <tool_call> marker:
//
//   \n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
//
// NAME one of a ToolCallGrammar's function names. A VALUE is raw text for
// the function's text_parameters (or for every parameter of a function
// without a schema) and JSON for the others; it ends at the first
// "\n</parameter>" (or at a "</parameter>" right where it starts: empty).
// The arguments are checked as the JSON they stand for, as
// Gemma4CallPrefix checks Gemma's: each key and each text value is turned
// into a JSON string (escaped), each JSON value passed on as written, and
// pushed to a JsonSchemaPrefix of the function's parameters when it has
// them, else a JsonPrefix (any object); so parameters are declared ones,
// in the order declared, required ones present, and each value fits its
// schema (a text value's string too: an enum, a pattern, a length).
// Between tags at most kMaxBlanks blanks; right after <parameter=KEY> one
// newline. server/qwen3_coder_call_reader.h reads every such call back
// (and more: it is lenient where this is strict). Drives lazy Qwen3-Coder
// calls (runtime/output_constraint.h), on after each "<tool_call>" and
// each "<function=NAME>" of a declared NAME (then fed from its '<').
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/text/step_call_prefix.h"

namespace tc::text {

class Qwen3CoderCallPrefix : public StepCallPrefix<Qwen3CoderCallPrefix> {
 public:
  static constexpr std::string_view kFunction = "<function=";
  static constexpr std::string_view kParameter = "<parameter=";
  static constexpr std::string_view kValueEnd = "\n</parameter>";
  static constexpr std::string_view kFunctionEnd = "</function>";
  static constexpr std::string_view kCallEnd = "</tool_call>";
  static constexpr uint8_t kMaxBlanks = 4;
  static constexpr uint8_t kMaxKeyBytes = 128;

  // `grammar` (problem() empty) must outlive every copy of this state.
  explicit Qwen3CoderCallPrefix(const ToolCallGrammar* grammar);

  // push(byte), push(bytes), accepts(bytes): StepCallPrefix's.
  // The call is whole, its </tool_call> written.
  bool complete() const { return part_ == Part::Done; }
  // Inside a text value that takes any text, past its first byte, no "\n</parameter>" begun.
  bool in_free_string() const;

 private:
  enum class Part : uint8_t {
    Open,     // blanks, then <function=
    Name,     // the function's name, up to '>'
    Body,     // blanks, then <parameter= or </function>
    Tag,      // inside <parameter= (parameter_) or </function>
    Key,      // the parameter's name, up to '>'
    Newline,  // the newline after <parameter=KEY>
    Value,    // the value, up to "\n</parameter>"
    Close,    // blanks, then </tool_call>
    Done,
  };

  friend class StepCallPrefix<Qwen3CoderCallPrefix>;

  bool step(uint8_t byte);
  bool step_tag(uint8_t byte);
  bool step_key(uint8_t byte);
  bool step_text(uint8_t byte);
  bool step_json(uint8_t byte);
  // The next byte of fixed text `fixed` (pos_ bytes matched); `next` once whole.
  bool fixed(std::string_view text, uint8_t byte, Part next);
  bool blank(uint8_t byte);
  // StepCallPrefix's, on arguments_ (feed_text: one byte of a key or a text value).
  bool feed(std::string_view json) { return StepCallPrefix::feed(arguments_, json); }
  bool feed_text(uint8_t byte) { return StepCallPrefix::feed_text(arguments_, byte); }
  bool could_feed(std::string_view json) const { return StepCallPrefix::could_feed(arguments_, json); }
  bool could_take_text(std::string_view raw) const;  // raw bytes as a text value's (escaped)
  // A JSON value is whole here: none of its containers or strings open, and
  // the object could go on with ',' or '}'.
  bool value_whole() const;

  const ToolCallGrammar* grammar_;
  Part part_ = Part::Open;
  uint8_t pos_ = 0;      // Open, Tag, Close: bytes of the tag matched; Value: bytes of kValueEnd matched
  uint8_t blanks_ = 0;   // Open, Body, Close: blanks since the last tag
  uint8_t key_len_ = 0;  // Key: bytes so far
  bool parameter_ = false;   // Tag: <parameter= (else </function>)
  bool first_ = true;        // no parameter written yet
  bool text_ = false;        // Value: a text value (else JSON)
  bool at_start_ = false;    // Value: no byte of the value taken yet
  uint8_t end_from_ = 0;     // Value, pos_ > 0: where in kValueEnd the match began (1: "</parameter>" at the start)
  bool raw_all_ = false;     // the function has no schema: every value is text
  uint8_t json_depth_ = 0;   // Value, JSON: its open containers
  bool json_string_ = false;  // Value, JSON: inside one of its strings
  bool json_escape_ = false;  // ...after a backslash
  bool text_key_ = false;    // Key: the bytes so far may still name one of the function's text parameters
  uint32_t function_ = 0;    // the function's index in grammar_->names, once named
  NameMatch name_;           // Name: the names the bytes may begin; Key: the text parameters they may begin
  CallArguments arguments_;
};

}  // namespace tc::text
