// The global variables a chat template renders a chat request with. No
// HTTP and no model here, so the request fuzzer (fuzz/) renders exactly
// what the server does.
//
// Templates written before function calling (ChatML, Llama 2, Gemma, Phi-3
// and the bundled model's) know nothing of `tools`, `tool_calls` or the
// `tool` role: they would drop the tools, or fail on an assistant message
// whose content is null. For those the request is rewritten into what they
// do render: the tools and the call format (the Hermes <tool_call> form,
// which tool_call_parser.h reads back) as text in the first system or user
// message, earlier calls as that text in the assistant's content, and tool
// results as user messages in <tool_response> tags.
//
// For gpt-oss's harmony template, assistant messages go as llama.cpp
// passes them: `reasoning_content` (a string) copied to `thinking` (unless
// the message has one), the content then dropped from a message with tool
// calls, and a null content left out.
//
// Gemma 4's templates (gemma4_split.h) that predate their own reading of
// `tool` messages (the source lacks "OpenAI Chat Completions:") take a
// call's results from the assistant message's `tool_responses`: as
// llama.cpp does for them, an assistant message with tool_calls, the tool
// messages after it and an assistant answer without calls after those
// become one assistant message {tool_calls, tool_responses: [{name,
// response}], content, reasoning_content}, each response the tool
// message's content parsed as JSON where it is JSON, its name the call's.
//
// Mistral's templates refuse a tool call id that is not 9 alphanumeric
// characters; the ids OpenAI clients send back ("call_..." as this server
// and OpenAI give them) are mapped to such ids for those templates, the
// same id to the same 9 characters in a call and in its result.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/openai_schema.h"

namespace tc::server {

// What a chat template does with function calling, read from its source.
struct TemplateToolSupport {
  bool tools = true;       // renders the `tools` variable
  bool tool_calls = true;  // renders assistant messages' `tool_calls` (and, with them, tool results)
  bool nine_char_ids = false;  // insists on tool call ids of 9 alphanumeric characters (Mistral)
  // gpt-oss's harmony template (its source writes <|channel|>): reads an
  // assistant message's reasoning as `thinking`, refuses content beside it
  // in a message with tool calls, and fails on a null content.
  bool harmony = false;
  // Gemma 4's (is_gemma4_template); one that reads results only from
  // `tool_responses` (see above) has gemma4_tool_responses too.
  bool gemma4 = false;
  bool gemma4_tool_responses = false;

  static TemplateToolSupport of(std::string_view template_source);
};

// {messages, add_generation_prompt, bos_token, eos_token}, the request's
// chat_template_kwargs, and `tools` when
// the request has them and tool_choice is not "none"; bos/eos are the
// model's token texts ("" if none). Messages rewritten where `support`
// lacks something the request uses (see above).
// The variables chat_prompt_variables sets from the request itself, which
// chat_template_kwargs may not replace.
inline constexpr std::string_view kRequestTemplateVariables[] = {"messages", "tools", "add_generation_prompt",
                                                                 "bos_token", "eos_token"};

// A tool call id as a template that insists on 9 alphanumeric characters
// takes it: itself when it is one, else 9 characters derived from it.
std::string nine_char_call_id(std::string_view id);

nlohmann::json chat_prompt_variables(const ChatRequest& request, const std::string& bos_token,
                                     const std::string& eos_token, const TemplateToolSupport& support = {});

}  // namespace tc::server
