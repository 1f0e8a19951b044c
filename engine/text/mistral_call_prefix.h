// MistralCallPrefix: an incremental, byte-at-a-time check of one tool call
// as Mistral's v11+ templates have models write it (Mistral Small 3.x,
// Devstral, Magistral):
//
//   [TOOL_CALLS]NAME[ARGS]OBJECT
//
// where [TOOL_CALLS] and [ARGS] are control tokens (no bytes: the caller
// sees them as token ids), NAME one of a ToolCallGrammar's function names
// and OBJECT a JSON object, an instance of that function's parameters
// schema when it has one (JsonSchemaPrefix), else any object (JsonPrefix).
// The state starts after [TOOL_CALLS], in the name; the caller moves it to
// the arguments at [ARGS] (begin_arguments), allowed once the name is
// whole. Drives lazy Mistral calls (runtime/output_constraint.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

#include "engine/text/json_prefix.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/tool_call_prefix.h"

namespace tc::text {

class MistralCallPrefix {
 public:
  // `grammar` (problem() empty) must outlive every copy of this state.
  explicit MistralCallPrefix(const ToolCallGrammar* grammar);

  // In the name: the byte extends it towards a declared name (no quotes,
  // no blanks). In the arguments: JsonPrefix's push. False (the state
  // unchanged) when the byte leaves the form.
  bool push(uint8_t byte);
  // False when one of the bytes does not fit; the state is then unspecified.
  bool push(std::string_view bytes);
  bool accepts(std::string_view bytes) const;

  bool in_name() const { return !in_arguments_; }
  // The name written so far is a declared one: [ARGS] may come.
  bool name_complete() const;
  // [ARGS]: from the name to its arguments (name_complete() must hold).
  void begin_arguments();
  // The arguments' object is closed: the call is whole.
  bool complete() const;
  bool in_free_string() const {
    return in_arguments_ && std::visit([](const auto& a) { return a.in_free_string(); }, arguments_);
  }

 private:
  const ToolCallGrammar* grammar_;
  bool in_arguments_ = false;
  NameMatch name_;  // the names the bytes so far may begin
  std::variant<JsonPrefix, JsonSchemaPrefix> arguments_;
};

}  // namespace tc::text
