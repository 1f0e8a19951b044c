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
// A lazy form leaves the text free until it is triggered, holds what
// follows to the form until it is whole, and is free again: a model's own
// tool calls when it may call tools or answer in text. Triggered by a text
// (after each time it is written: <tool_call>{"name": ..., "arguments":
// ...}</tool_call>), or by the output's opening with the call's
// `{"name": "` (once: Llama 3.x's {"name": ..., "parameters": ...}), or by a
// control token (Mistral's [TOOL_CALLS]NAME[ARGS]{...}: the name, then the
// [ARGS] token once it is whole, then the arguments; text/
// mistral_call_prefix.h). Gemma 4's calls are a text trigger with a form of
// their own (<|tool_call>call:NAME{...}<tool_call|>; text/
// gemma4_call_prefix.h), and so are Qwen3-Coder's XML calls (<tool_call>
// <function=NAME>...; text/qwen3_coder_call_prefix.h), also triggered,
// as llama.cpp triggers them, by a declared function's <function=NAME>
// without the <tool_call>. A lazy form never ends the output.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/runtime/constraint_token_table.h"
#include "engine/runtime/grammar_mask.h"
#include "engine/text/gbnf_prefix.h"
#include "engine/text/gemma4_call_prefix.h"
#include "engine/text/json_prefix.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/mistral_call_prefix.h"
#include "engine/text/qwen3_coder_call_prefix.h"
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
  std::string trigger;  // non-empty: the form is lazy, on after each time this text is written
  bool at_start = false;  // lazy, on when the output opens (after blanks) with a call's `{"name": "`
  // With a trigger: a thinking model's reasoning (a <think>...</think>
  // block opening the output, or, with reasoning_open, the output up to
  // </think>: the prompt opened it; with gemma4, <|channel>thought ...
  // <channel|>) triggers nothing, as its calls come after it.
  // Without a trigger (JSON, a schema or a forced call; reasoning_open
  // required): the output up to the </think> that closes the prompt's
  // reasoning is free, save that it may not end there; the form holds what
  // follows.
  bool skip_reasoning = false;
  bool reasoning_open = false;
  // With tool_call and a trigger: each call is Gemma 4's
  // call:NAME{...}<tool_call|> (text/gemma4_call_prefix.h).
  bool gemma4 = false;
  // With tool_call and a trigger ("<tool_call>"): each call is
  // Qwen3-Coder's XML (text/qwen3_coder_call_prefix.h), on after the
  // trigger or after a declared function's "<function=NAME>" (outside the
  // reasoning); a "<tool_call>" also ends the reasoning (llama.cpp's
  // thinking_end_tags), and is then a call.
  bool qwen3_coder = false;
  // >= 0 (with tool_call): Mistral's calls, lazy, on after each trigger
  // token, the name ended by args_token.
  int32_t trigger_token = -1;
  int32_t args_token = -1;

  static OutputForm json_object() { return {}; }
  static OutputForm json_schema(std::shared_ptr<const text::JsonSchema> s) {
    OutputForm f;
    f.schema = std::move(s);
    return f;
  }
  static OutputForm call(std::shared_ptr<const text::ToolCallGrammar> g, std::string trigger = "",
                         bool at_start = false) {
    OutputForm f;
    f.tool_call = std::move(g);
    f.trigger = std::move(trigger);
    f.at_start = at_start;
    return f;
  }
  static OutputForm mistral_call(std::shared_ptr<const text::ToolCallGrammar> g, int32_t trigger_token,
                                 int32_t args_token) {
    OutputForm f;
    f.tool_call = std::move(g);
    f.trigger_token = trigger_token;
    f.args_token = args_token;
    return f;
  }
  static OutputForm grammar(std::shared_ptr<const text::GbnfGrammar> g) {
    OutputForm f;
    f.gbnf = std::move(g);
    return f;
  }
};

class OutputConstraint {
 public:
  OutputConstraint(std::shared_ptr<const ConstraintTokenTable> table, OutputForm form);

  // Sets logits[t] = -inf for every token t that cannot come next (none
  // while a lazy form is off). logits: f32 [n_vocab]. Tokens already at
  // -inf are not examined.
  void mask(std::span<float> logits) const;
  // Appends a generated token (one mask() allowed) to the text.
  void accept(text::TokenId token);
  // The text is whole: the object (or the call) is closed, or the grammar
  // lets nothing follow. Never for a lazy form.
  bool complete() const;
  // Back to the empty text.
  void reset();
  // A lazy form is holding the text (its trigger was written, the form is
  // not whole yet); always true for the others.
  bool active() const { return active_; }

 private:
  using Prefix = std::variant<text::JsonPrefix, text::JsonSchemaPrefix, text::ToolCallPrefix, text::GbnfPrefix,
                              text::MistralCallPrefix, text::Gemma4CallPrefix, text::Qwen3CoderCallPrefix>;
  Prefix start() const;
  bool prefix_complete() const;
  bool lazy() const { return !form_.trigger.empty() || form_.at_start || mistral(); }
  bool mistral() const { return form_.trigger_token >= 0; }
  // A form held only after the prompt's opened reasoning (skip_reasoning without a trigger).
  bool after_reasoning() const { return !lazy() && form_.skip_reasoning; }
  // Mistral's control tokens ([TOOL_CALLS], [ARGS]); true when `token` was one of them here.
  bool accept_mistral_marker(text::TokenId token);
  // Lazy at the start and not begun: the output's first bytes decide.
  void watch_start(const std::string& bytes);
  // Lazy and off: appends a token's bytes to recent_, and turns the form on
  // when they complete a trigger.
  void watch_for_trigger(std::string bytes);
  // skip_reasoning: what of `bytes` comes after the reasoning block (all of
  // them once it is over; none while it may still be going on).
  std::string past_reasoning(const std::string& bytes);
  // A lazy form turns on with `rest` (its text so far) pushed, unless it does not fit.
  void begin_form(std::string_view rest);

  std::shared_ptr<const ConstraintTokenTable> table_;
  OutputForm form_;  // keeps the grammar or the schema alive for the prefix's pointer
  Prefix prefix_;
  bool active_ = true;
  bool awaiting_start_ = false;  // at_start: the output may still open with the call
  std::string opening_text_;     // at_start: the output so far, while undecided
  std::string recent_;  // lazy and off: the text's last bytes, where the triggers are looked for
  // The trigger texts: form_.trigger, then (qwen3_coder) "<function=NAME>"
  // for each declared NAME, which the form then reads from its '<'.
  std::vector<std::string> triggers_;
  enum class Reasoning : uint8_t { Undecided, Inside, Over };
  Reasoning reasoning_ = Reasoning::Over;  // skip_reasoning: where the output is
  std::string reasoning_text_;  // Undecided: the output so far; Inside: its last bytes (for </think>)
  mutable GrammarMask grammar_mask_;  // the grammar form's mask and its cache of states
};

}  // namespace tc::runtime
