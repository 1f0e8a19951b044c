// ToolCallPrefix: an incremental, byte-at-a-time check that a text is a
// prefix of one tool call written as
//
//   {"name": "NAME", "arguments": OBJECT}
//
// ("parameters" in place of "arguments" too, as Llama 3.x writes calls)
// (after a JsonGap's whitespace, which tokenizers that glue a space to the
// first piece need)
// where NAME is one of a fixed list of function names and OBJECT is a JSON
// object: an instance of that function's parameters schema when it has one
// (JsonSchemaPrefix), else any object (JsonPrefix). It drives forced tool calls (OpenAI's
// tool_choice "required" or a named function): the sampler masks every
// token whose bytes would leave this form, so the model can only call a
// declared function, with arguments that parse (and fit the function's
// schema) and are not padded (JsonGap). Like JsonPrefix, the state
// is a small trivially copyable value (the names live outside it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <memory>
#include <variant>

#include "engine/text/json_prefix.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"

namespace tc::text {

// The functions a forced call may name.
struct ToolCallGrammar {
  std::vector<std::string> names;  // sorted, distinct, non-empty, none with '"' or '\' (written raw between quotes)
  // [names.size()] or empty: each one's parameters; null: any object.
  std::vector<std::shared_ptr<const JsonSchema>> arguments;
  // [names.size()] or empty (none): each one's parameters whose schema
  // resolves to a string, sorted; a form that writes values raw
  // (Qwen3-Coder's <parameter=NAME>, qwen3_coder_call_prefix.h) writes
  // theirs as text, the others as JSON.
  std::vector<std::vector<std::string>> text_parameters;

  explicit ToolCallGrammar(std::vector<std::string> n, std::vector<std::shared_ptr<const JsonSchema>> a = {},
                           std::vector<std::vector<std::string>> t = {})
      : names(std::move(n)), arguments(std::move(a)), text_parameters(std::move(t)) {}

  // What breaks the rules above, or "" for a usable grammar.
  std::string problem() const;
};

// The names of a sorted list that begin with the bytes written so far:
// names[lo, hi) (contiguous, as the list is sorted); pos bytes written.
struct NameMatch {
  uint32_t lo = 0;
  uint32_t hi = 0;
  uint32_t pos = 0;

  explicit NameMatch(size_t n_names = 0) : hi(static_cast<uint32_t>(n_names)) {}
  // False (and the state unchanged) when no name goes on with `byte`.
  bool push(const std::vector<std::string>& names, uint8_t byte);
  // The bytes are a whole name (sorted: a name that is a prefix of others comes first).
  bool whole(const std::vector<std::string>& names) const { return pos > 0 && names[lo].size() == pos; }
};

class ToolCallPrefix {
 public:
  // `grammar` must outlive every copy of this state.
  explicit ToolCallPrefix(const ToolCallGrammar* grammar);

  // As JsonPrefix: false (and the state unchanged) when the byte leaves the form.
  bool push(uint8_t byte);
  // False when one of the bytes does not fit; the state is then unspecified.
  bool push(std::string_view bytes);
  bool accepts(std::string_view bytes) const;
  // The whole call is written (nothing more can follow).
  bool complete() const { return part_ == Part::Done; }
  // Inside a string of the arguments that takes any text (JsonPrefix's and
  // JsonSchemaPrefix's in_free_string()).
  bool in_free_string() const {
    return part_ == Part::Arguments && std::visit([](const auto& a) { return a.in_free_string(); }, arguments_);
  }

  // The fixed text around the name and the arguments; the arguments' key
  // may also be "parameters" (kMiddleParameters), as Llama 3.x writes it.
  static constexpr std::string_view kHead = "{\"name\": \"";
  static constexpr std::string_view kMiddle = "\", \"arguments\": ";
  static constexpr std::string_view kMiddleParameters = "\", \"parameters\": ";
  static constexpr std::string_view kTail = "}";

 private:
  enum class Part : uint8_t { Head, Name, Middle, Arguments, Tail, Done };

  const ToolCallGrammar* grammar_;
  Part part_ = Part::Head;
  uint32_t pos_ = 0;  // bytes of the current fixed text written
  bool parameters_ = false;  // Middle: the key is "parameters" (kMiddleParameters)
  JsonGap leading_;  // Head: whitespace before it
  NameMatch name_;   // Name: the names the bytes so far may begin
  std::variant<JsonPrefix, JsonSchemaPrefix> arguments_;
};

}  // namespace tc::text
