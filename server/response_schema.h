// The JSON Schema a request's reply must follow (OpenAI's response_format
// {"type": "json_schema"}, Ollama's `format` schema, llama.cpp's
// `json_schema`), compiled from the
// request's text: the parsed body's objects are sorted by key, and a reply
// should write the properties in the order the client declared them
// (a "reasoning" field before an "answer" one). Likewise a forced tool
// call's arguments.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "engine/text/json_schema.h"
#include "engine/text/tool_call_prefix.h"
#include "server/openai_errors.h"
#include "server/tool_request.h"

namespace tc::server {

enum class SchemaField {
  ResponseFormat,  // /response_format/json_schema/schema (OpenAI)
  OllamaFormat,    // /format (Ollama)
  JsonSchema,      // /json_schema (llama.cpp's /completion)
};

// Compiles the schema at `field` of `body_text` into `out` (null when the
// request has none there). A 400 naming the field when the schema cannot
// be enforced (json_schema.h says what can).
std::optional<ApiError> compile_response_schema(std::string_view body_text, SchemaField field,
                                                std::shared_ptr<const text::JsonSchema>& out);

// A forced call's grammar (tool_choice "required" or a named function):
// the names it may use and, for each, its `parameters` compiled from the
// request's text in declared order. Parameters that are not an object
// schema, or use a keyword that cannot be enforced, leave that function's
// arguments any JSON object: a tool's schema guides the model, and the
// request is not refused for it. Each function's text parameters
// (text_parameters_of) come with them, for Qwen3-Coder's calls.
std::shared_ptr<const text::ToolCallGrammar> tool_call_grammar(std::string_view body_text, const ToolRequest& tools);

}  // namespace tc::server
