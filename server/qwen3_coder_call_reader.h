// A Qwen3-Coder XML tool call (Qwen3-Coder, Qwen 3.5, Nemotron Nano 3),
// read byte by byte as llama.cpp's qwen3_coder format reads it
// (common/chat.cpp), from after its <tool_call> marker:
//   <function=NAME>
//   <parameter=KEY>
//   VALUE
//   </parameter>
//   ...
//   </function>
//   </tool_call>
// NAME a declared function. A VALUE runs to the first "\n</parameter>"
// (a "</parameter>" right where it starts: an empty value), one newline
// after <parameter=KEY> left out. The value of a text parameter (its
// schema resolves to a string: text_parameters) is that text as a JSON
// string; any other is parsed as JSON, and kept as a string when it is not
// JSON (llama.cpp's grammar lets no such value through, and its parser
// fails on one written without it). A lenient reader: blanks of any length
// between the tags, parameters in any order and not only declared ones (a
// key written twice keeps its last value), and the closing </tool_call>
// may be missing (the call then ends at </function>). A call that begins
// at <function= (the model left <tool_call> out) reads the same from its
// name on. Arguments are an object in the order written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_call_parser.h"

namespace tc::server {

inline constexpr std::string_view kQwen3CoderFunction = "<function=";

// The tools a reply's calls may use: the declared functions (sorted) and,
// [names.size()] or empty, each one's text parameters (sorted).
struct Qwen3CoderTools {
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> text_parameters;
};

// The properties of a function's `parameters` whose schema resolves to a
// string, sorted: llama.cpp's common_schema_info::resolves_to_string (type
// "string", a type list holding "string", or an anyOf / oneOf alternative
// that does; $refs into the parameters' document followed).
std::vector<std::string> text_parameters_of(const nlohmann::ordered_json& parameters);

class Qwen3CoderCallReader {
 public:
  enum class Status { More, Done, Invalid };
  static constexpr size_t kMaxKeyBytes = 256;
  static constexpr int kMaxDepth = 64;  // deeper JSON values are kept as strings

  // `opened`: read from after <tool_call> (blanks, then <function=); else
  // from after a <function= the model wrote without it.
  explicit Qwen3CoderCallReader(bool opened = true);

  // One more byte of the reply. Done once the call is whole: its
  // </tool_call> read, or, at the first byte after </function> and its
  // blanks that does not begin one, without it; Invalid, for good, from the
  // first byte that no call can go on with.
  Status push(char c, const Qwen3CoderTools& tools);
  // The reply is over: Done if </function> was read, else Invalid.
  Status finish();
  Status status() const;
  // Done: how many of the bytes pushed are the call's (those after it, read
  // while looking for </tool_call>, are not).
  size_t length() const { return length_; }
  // Done: the call (id unset).
  ToolCall call() const;

 private:
  enum class At : uint8_t {
    Blank, Function, Name, Body, Tag, Key, ValueStart, Value, CloseBlank, Close, Done, Invalid
  };

  Status fail();
  Status step(char c, const Qwen3CoderTools& tools);
  // The parameter's value is whole: into the arguments.
  void add_value(std::string value, const Qwen3CoderTools& tools);

  At at_;
  size_t pos_ = 0;        // Function, Tag, Close: bytes of the tag matched
  bool parameter_ = false;  // Tag: <parameter= (else </function>)
  size_t pushed_ = 0;     // bytes pushed
  size_t length_ = 0;     // CloseBlank on: the bytes up to </function>; Done: the call's
  size_t function_ = 0;   // the function's index in tools.names
  std::string name_;
  std::string key_;
  std::string value_;
  nlohmann::ordered_json arguments_ = nlohmann::ordered_json::object();
};

}  // namespace tc::server
