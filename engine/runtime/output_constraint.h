// Constrained output: a sequence's tokens are masked so that its generated
// text keeps a fixed form. Two forms:
//   - JSON mode: one JSON object (OpenAI's response_format
//     {"type": "json_object"}, Ollama's format "json"; text/json_prefix.h);
//   - a JSON Schema's instance (OpenAI's response_format
//     {"type": "json_schema"}, Ollama's `format` schema;
//     text/json_schema_prefix.h);
//   - a forced tool call: {"name": "NAME", "arguments": {...}} with NAME
//     one of the declared functions (OpenAI's tool_choice "required" or a
//     named function; text/tool_call_prefix.h).
// Before each draw, every token whose bytes would break the form gets logit
// -inf; end-of-generation tokens are allowed only once the text is whole,
// and then nothing else is.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/text/json_prefix.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/tokenizer.h"
#include "engine/text/tool_call_prefix.h"

namespace tc::runtime {

// Each token's bytes, computed once per model and shared by its sequences.
struct ConstraintTokenTable {
  enum class Kind : uint8_t {
    Text,             // ordinary bytes: allowed where they fit
    EndOfGeneration,  // allowed only when the text is whole
    Never,            // control tokens and empty pieces: never allowed
  };
  std::vector<std::string> bytes;  // [n_vocab]: the token's text as it decodes mid-sequence
  std::vector<Kind> kind;          // [n_vocab]
  // [n_vocab]: 1 when the token is whole characters that a JSON string
  // takes as they are (valid UTF-8, no quote, backslash or control byte):
  // text any string without a length limit accepts (the mask's fast path).
  std::vector<uint8_t> plain;

  // n_vocab: the logits' length (the model's output rows; ids the tokenizer
  // does not know are never allowed).
  static std::shared_ptr<const ConstraintTokenTable> from(const text::Tokenizer& tokenizer, int32_t n_vocab);
};

// Which form the output must take: a call to one of `tool_call`'s
// functions when set, else an instance of `schema` when set, else any JSON
// object (JSON mode).
struct OutputForm {
  std::shared_ptr<const text::ToolCallGrammar> tool_call;
  std::shared_ptr<const text::JsonSchema> schema;

  static OutputForm json_object() { return {}; }
  static OutputForm json_schema(std::shared_ptr<const text::JsonSchema> s) { return {nullptr, std::move(s)}; }
  static OutputForm call(std::shared_ptr<const text::ToolCallGrammar> g) { return {std::move(g), nullptr}; }
};

class OutputConstraint {
 public:
  OutputConstraint(std::shared_ptr<const ConstraintTokenTable> table, OutputForm form);

  // Sets logits[t] = -inf for every token t that cannot come next.
  // logits: f32 [n_vocab]. Tokens already at -inf are not examined.
  void mask(std::span<float> logits) const;
  // Appends a generated token (one mask() allowed) to the text.
  void accept(text::TokenId token);
  // The text is whole: the object (or the call) is closed.
  bool complete() const;
  // Back to the empty text.
  void reset();

 private:
  using Prefix = std::variant<text::JsonPrefix, text::JsonSchemaPrefix, text::ToolCallPrefix>;
  Prefix start() const;

  std::shared_ptr<const ConstraintTokenTable> table_;
  OutputForm form_;  // keeps the grammar or the schema alive for the prefix's pointer
  Prefix prefix_;
};

}  // namespace tc::runtime
