// Compiling a request's response schema in declared order (see
// response_schema.h).
#include "server/response_schema.h"

#include <algorithm>

#include "server/qwen3_coder_call_reader.h"

namespace tc::server {

std::optional<ApiError> compile_response_schema(std::string_view body_text, SchemaField field,
                                                std::shared_ptr<const text::JsonSchema>& out) {
  out = nullptr;
  // The body parsed already (size and depth checked): this reads it again
  // keeping members in order.
  const auto body = nlohmann::ordered_json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  struct Where {
    const char* pointer;
    const char* name;  // in the error message
    const char* param;
  };
  const Where where = field == SchemaField::OllamaFormat ? Where{"/format", "'format'", "format"}
                      : field == SchemaField::JsonSchema
                          ? Where{"/json_schema", "'json_schema'", "json_schema"}
                          : Where{"/response_format/json_schema/schema", "'response_format.json_schema.schema'",
                                  "response_format"};
  const auto pointer = nlohmann::ordered_json::json_pointer(where.pointer);
  if (!body.is_object() || !body.contains(pointer) || !body.at(pointer).is_object()) return std::nullopt;
  try {
    out = text::JsonSchema::compile(body.at(pointer));
  } catch (const text::SchemaError& e) {
    return ApiError{400, "invalid_request_error", std::string(where.name) + " cannot be enforced: " + e.what(), "",
                    where.param};
  }
  return std::nullopt;
}

std::shared_ptr<const text::ToolCallGrammar> tool_call_grammar(std::string_view body_text, const ToolRequest& tools) {
  std::vector<std::string> names = tools.forced_names();
  std::vector<std::shared_ptr<const text::JsonSchema>> arguments(names.size());
  std::vector<std::vector<std::string>> text_parameters(names.size());
  const auto body = nlohmann::ordered_json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  const auto list = body.is_object() ? body.find("tools") : body.end();
  if (list != body.end() && list->is_array()) {
    for (const auto& tool : *list) {
      const auto* function = tool.is_object() && tool.contains("function") ? &tool["function"] : nullptr;
      if (function == nullptr || !function->is_object() || !function->contains("name") ||
          !(*function)["name"].is_string() || !function->contains("parameters")) {
        continue;
      }
      const auto at = std::lower_bound(names.begin(), names.end(), (*function)["name"].get<std::string>());
      if (at == names.end() || *at != (*function)["name"].get<std::string>()) continue;
      const auto& parameters = (*function)["parameters"];
      text_parameters[static_cast<size_t>(at - names.begin())] = text_parameters_of(parameters);
      if (!parameters.is_object() || parameters.value("type", "object") != "object") continue;
      try {
        arguments[static_cast<size_t>(at - names.begin())] = text::JsonSchema::compile(parameters);
      } catch (const text::SchemaError&) {
        // any object for this one (see the header)
      }
    }
  }
  return std::make_shared<const text::ToolCallGrammar>(std::move(names), std::move(arguments),
                                                       std::move(text_parameters));
}

}  // namespace tc::server
