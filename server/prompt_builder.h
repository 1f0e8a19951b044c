// From a parsed request to engine requests: render the chat template,
// tokenize, pick max_tokens and check the context, all before the server
// answers 200. Errors are ApiErrors (400s) with the template's or the
// context check's message.
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/engine.h"
#include "engine/text/gbnf_grammar.h"
#include "server/fill_in_middle.h"
#include "server/openai_schema.h"
#include "server/server_context.h"

namespace tc::server {

// One choice to generate: its engine request and, for echo, the prompt text.
struct PlannedChoice {
  runtime::GenerationRequest request;
  std::string echo_text;
  int prompt_group = 0;  // which prompt it answers (usage counts each prompt once)
};

struct Plan {
  std::vector<PlannedChoice> choices;  // in OpenAI's choice index order
  // The request's GBNF grammar, compiled once for all its prompts (null: none).
  std::shared_ptr<const text::GbnfGrammar> grammar;
  // Chat: whether replies are split into reasoning and content (the
  // request's reasoning_format, else the server's, is not "none"), and
  // whether the rendered prompt ends by opening a reasoning block (<think>,
  // or a Gemma 4 template's <|channel>thought), so the reply starts inside
  // it (reasoning_split.h, gemma4_split.h).
  bool split_reasoning = false;
  bool opens_reasoning = false;
  // Chat of a harmony model (gpt-oss, ServingModel::harmony) whose reply
  // is not forced into a tool call's JSON: replies are read as harmony
  // messages (harmony_split.h), from where the prompt left them.
  bool harmony = false;
  std::string harmony_prompt_tail;  // harmony_prompt_tail of the rendered prompt
  // Chat with a Gemma 4 template (is_gemma4_template) whose reply is not
  // forced into a tool call's JSON: replies are read as Gemma 4 writes them
  // (gemma4_split.h), its markers rendered.
  bool gemma4 = false;
  // Chat with a Qwen3-Coder template (is_qwen3_coder_template: Qwen3-Coder,
  // Qwen 3.5, Nemotron Nano 3) whose reply is not forced into a tool
  // call's JSON: replies are read with its XML calls (qwen3_coder_split.h).
  bool qwen3_coder = false;
  std::optional<ApiError> error;
};

// Chat: template + tokenize; one prompt, `n` choices. A forced tool call
// holds each reply to the call; when the model may call tools and writes
// its calls in a form lazy_tool_call knows, each call it opens is held to
// a declared function and its parameters.
Plan plan_chat(const ChatRequest& request, const ServingModel& serving, const config::ServeOptions& options);

// How a model with this chat template opens a tool call, for a lazy call
// (engine.h's tool_call_trigger, tool_call_at_start, tool_call_*_token):
// after "<tool_call>" (Hermes, Qwen 2.5 / 3 and the many templates after
// them; and templates that render no tools, for which the server asks for
// that form), as Mistral's [TOOL_CALLS]NAME[ARGS]{...} (v11 and later
// templates: Mistral Small 3.x, Devstral, Magistral; `mistral`, the
// markers being the vocabulary's control tokens), or as the whole reply's
// JSON (Llama 3.1-3.3, whose templates ask for {"name": ...,
// "parameters": ...}), or after "<|tool_call>" as Gemma 4's
// call:NAME{...}<tool_call|> (`gemma4`: is_gemma4_template), or after
// "<tool_call>" (or a declared "<function=NAME>") as Qwen3-Coder's XML
// <function=NAME><parameter=KEY>... (`qwen3_coder`:
// is_qwen3_coder_template); none for the others.
struct LazyToolCall {
  std::string trigger;
  bool at_start = false;
  bool mistral = false;
  bool gemma4 = false;
  bool qwen3_coder = false;
  bool any() const { return !trigger.empty() || at_start; }  // (mistral needs the tokens too)
};
LazyToolCall lazy_tool_call(std::string_view template_source);
// Completions: each prompt (text or ids) times `n` choices; without
// max_tokens each generates `default_max_tokens` (OpenAI's 16), at most
// what the context leaves. With a suffix each text prompt is the code
// before the cursor of a fill-in-the-middle prompt (fill_in_middle.h),
// cut to fim_prompt_room; a model without FIM tokens is a 400.
Plan plan_completion(const CompletionRequest& request, const ServingModel& serving,
                     const config::ServeOptions& options, int64_t default_max_tokens = 16);

// llama.cpp's /infill: one choice of the repo-level FIM prompt for `input`
// (fill_in_middle.h), cut to fim_prompt_room; `truncated` says whether it
// was. A model without FIM tokens is a 400.
Plan plan_infill(const CommonRequest& common, const FimInput& input, const ServingModel& serving,
                 const config::ServeOptions& options, int64_t default_max_tokens, bool& truncated);

// Fill in the middle: the most tokens the prompt may take, leaving the
// reply its max_tokens (or, when the request sets none or shifts the
// context, at most half the context).
int64_t fim_prompt_room(const CommonRequest& common, int64_t default_max_tokens, const ServingModel& serving);

// The text the chat template renders for `request`. A Gemma 4 template
// that leaves the model's turn unopened after a turn it closed (after
// tool results and an answer) gets "<|turn>model\n" added, as llama.cpp
// adds it.
std::string render_chat_prompt(const ChatRequest& request, const ServingModel& serving);

// The chat prompt's token ids: the template rendered and tokenized (special
// tokens parsed, BOS added unless the template wrote it), or the 400 (no
// template, or the template's own error).
struct ChatTokens {
  std::vector<text::TokenId> ids;
  std::vector<model::PromptImage> images;  // the request's images, whose placeholder ids `ids` holds
  bool opens_reasoning = false;  // the rendered prompt ends with an opened <think> (Gemma 4: <|channel>thought)
  std::string harmony_prompt_tail;  // a harmony model's: the prompt from its last <|start|>
  std::optional<ApiError> error;
};
// Images (request.images) are decoded and encoded unless image_rows is
// false (counting tokens: the placeholders are laid out, their rows null).
ChatTokens tokenize_chat(const ChatRequest& request, const ServingModel& serving, bool image_rows = true);

// The per-request caps of `options` for `serving`'s model.
RequestLimits request_limits(const config::ServeOptions& options, const ServingModel& serving);

}  // namespace tc::server
