// Constrained output: a sequence's tokens are masked so that its generated
// text keeps a fixed form. The forms:
//   - JSON mode: one JSON object (OpenAI's response_format
//     {"type": "json_object"}, Ollama's format "json"; text/json_prefix.h);
//   - a JSON Schema's instance (OpenAI's response_format
//     {"type": "json_schema"}, Ollama's `format` schema;
//     text/json_schema_prefix.h);
//   - a forced tool call: {"name": "NAME", "arguments": {...}} with NAME
//     one of the declared functions (OpenAI's tool_choice "required" or a
//     named function; text/tool_call_prefix.h);
//   - a text a GBNF grammar generates (llama.cpp's `grammar`;
//     text/gbnf_prefix.h, masked by grammar_mask.h).
// Before each draw, every token whose bytes would break the form gets logit
// -inf; end-of-generation tokens are allowed only where the text may end.
// The JSON forms end as soon as the value closes; a grammar ends where
// nothing more can follow.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/runtime/constraint_token_table.h"
#include "engine/runtime/grammar_mask.h"
#include "engine/text/gbnf_prefix.h"
#include "engine/text/json_prefix.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/tokenizer.h"
#include "engine/text/tool_call_prefix.h"

namespace tc::runtime {

// Which form the output must take: a call to one of `tool_call`'s
// functions when set, else a text of `gbnf` when set, else an instance of
// `schema` when set, else any JSON object (JSON mode).
struct OutputForm {
  std::shared_ptr<const text::ToolCallGrammar> tool_call;
  std::shared_ptr<const text::JsonSchema> schema;
  std::shared_ptr<const text::GbnfGrammar> gbnf;

  static OutputForm json_object() { return {}; }
  static OutputForm json_schema(std::shared_ptr<const text::JsonSchema> s) { return {nullptr, std::move(s), nullptr}; }
  static OutputForm call(std::shared_ptr<const text::ToolCallGrammar> g) { return {std::move(g), nullptr, nullptr}; }
  static OutputForm grammar(std::shared_ptr<const text::GbnfGrammar> g) { return {nullptr, nullptr, std::move(g)}; }
};

class OutputConstraint {
 public:
  OutputConstraint(std::shared_ptr<const ConstraintTokenTable> table, OutputForm form);

  // Sets logits[t] = -inf for every token t that cannot come next.
  // logits: f32 [n_vocab]. Tokens already at -inf are not examined.
  void mask(std::span<float> logits) const;
  // Appends a generated token (one mask() allowed) to the text.
  void accept(text::TokenId token);
  // The text is whole: the object (or the call) is closed, or the grammar
  // lets nothing follow.
  bool complete() const;
  // Back to the empty text.
  void reset();

 private:
  using Prefix = std::variant<text::JsonPrefix, text::JsonSchemaPrefix, text::ToolCallPrefix, text::GbnfPrefix>;
  Prefix start() const;

  std::shared_ptr<const ConstraintTokenTable> table_;
  OutputForm form_;  // keeps the grammar or the schema alive for the prefix's pointer
  Prefix prefix_;
  mutable GrammarMask grammar_mask_;  // the grammar form's mask and its cache of states
};

}  // namespace tc::runtime
