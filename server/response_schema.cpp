// Compiling a request's response schema in declared order (see
// response_schema.h).
#include "server/response_schema.h"

namespace tc::server {

std::optional<ApiError> compile_response_schema(std::string_view body_text, SchemaField field,
                                                std::shared_ptr<const text::JsonSchema>& out) {
  out = nullptr;
  // The body parsed already (size and depth checked): this reads it again
  // keeping members in order.
  const auto body = nlohmann::ordered_json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  const bool ollama = field == SchemaField::OllamaFormat;
  const char* param = ollama ? "format" : "response_format";
  const auto pointer = nlohmann::ordered_json::json_pointer(ollama ? "/format" : "/response_format/json_schema/schema");
  if (!body.is_object() || !body.contains(pointer) || !body.at(pointer).is_object()) return std::nullopt;
  try {
    out = text::JsonSchema::compile(body.at(pointer));
  } catch (const text::SchemaError& e) {
    return ApiError{400, "invalid_request_error",
                    std::string(ollama ? "'format'" : "'response_format.json_schema.schema'") +
                        " cannot be enforced: " + e.what(),
                    "", param};
  }
  return std::nullopt;
}

}  // namespace tc::server
