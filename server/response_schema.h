// The JSON Schema a request's reply must follow (OpenAI's response_format
// {"type": "json_schema"}, Ollama's `format` schema), compiled from the
// request's text: the parsed body's objects are sorted by key, and a reply
// should write the properties in the order the client declared them
// (a "reasoning" field before an "answer" one).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "engine/text/json_schema.h"
#include "server/openai_errors.h"

namespace tc::server {

enum class SchemaField {
  ResponseFormat,  // /response_format/json_schema/schema (OpenAI)
  OllamaFormat,    // /format (Ollama)
};

// Compiles the schema at `field` of `body_text` into `out` (null when the
// request has none there). A 400 naming the field when the schema cannot
// be enforced (json_schema.h says what can).
std::optional<ApiError> compile_response_schema(std::string_view body_text, SchemaField field,
                                                std::shared_ptr<const text::JsonSchema>& out);

}  // namespace tc::server
