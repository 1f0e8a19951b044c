// Validating tools and tool_choice; assistant tool_calls for the template
// (see tool_request.h).
#include "server/tool_request.h"

#include <algorithm>

namespace tc::server {
namespace {

using nlohmann::json;

ApiError bad(std::string message, std::string param) {
  return {400, "invalid_request_error", std::move(message), "", std::move(param)};
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > ToolRequest::kMaxNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == ':';
  });
}

const json* field(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::optional<ApiError> read_tools(const json& tools, ToolRequest& out) {
  if (!tools.is_array()) return bad("'tools' must be an array", "tools");
  if (tools.size() > ToolRequest::kMaxTools) {
    return bad("'tools' may hold at most " + std::to_string(ToolRequest::kMaxTools) + " functions", "tools");
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& tool = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object()) return bad("'" + where + "' must be an object", "tools");
    const json* type = field(tool, "type");
    if (type == nullptr || !type->is_string()) return bad("'" + where + ".type' must be \"function\"", "tools");
    if (*type != "function") {
      return bad("'" + where + ".type' is '" + type->get<std::string>() + "': only \"function\" tools are supported",
                 "tools");
    }
    const json* function = field(tool, "function");
    if (function == nullptr || !function->is_object()) return bad("'" + where + ".function' must be an object", "tools");
    const json* name = field(*function, "name");
    if (name == nullptr || !name->is_string() || !valid_name(name->get<std::string>())) {
      return bad("'" + where + ".function.name' must be 1 to 64 letters, digits, '_', '-', '.' or ':'", "tools");
    }
    if (const json* d = field(*function, "description"); d != nullptr && !d->is_string()) {
      return bad("'" + where + ".function.description' must be a string", "tools");
    }
    if (const json* p = field(*function, "parameters"); p != nullptr && !p->is_object()) {
      return bad("'" + where + ".function.parameters' must be a JSON Schema object", "tools");
    }
    out.names.push_back(name->get<std::string>());
  }
  std::sort(out.names.begin(), out.names.end());
  if (auto dup = std::adjacent_find(out.names.begin(), out.names.end()); dup != out.names.end()) {
    return bad("'tools' declares the function '" + *dup + "' twice", "tools");
  }
  if (!tools.empty()) out.tools = tools;
  return std::nullopt;
}

std::optional<ApiError> read_choice(const json& choice, ToolRequest& out) {
  const char* kShape =
      "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}";
  if (choice.is_string()) {
    if (choice == "none") out.choice = ToolRequest::Choice::None;
    else if (choice == "auto") out.choice = ToolRequest::Choice::Auto;
    else if (choice == "required") out.choice = ToolRequest::Choice::Required;
    else return bad(kShape, "tool_choice");
  } else if (choice.is_object()) {
    const json* type = field(choice, "type");
    const json* function = field(choice, "function");
    const json* name = function != nullptr && function->is_object() ? field(*function, "name") : nullptr;
    if (type == nullptr || *type != "function" || name == nullptr || !name->is_string()) return bad(kShape, "tool_choice");
    out.choice = ToolRequest::Choice::Named;
    out.named = name->get<std::string>();
    if (!std::binary_search(out.names.begin(), out.names.end(), out.named)) {
      return bad("'tool_choice' names the function '" + out.named + "', which 'tools' does not declare", "tool_choice");
    }
  } else {
    return bad(kShape, "tool_choice");
  }
  if (out.choice != ToolRequest::Choice::None && out.names.empty()) {
    return bad("'tool_choice' is only allowed when 'tools' are specified", "tool_choice");
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> ToolRequest::forced_names() const {
  if (choice == Choice::Named) return {named};
  return names;
}

std::optional<ApiError> read_tool_request(const json& body, ToolRequest& out) {
  out = ToolRequest{};
  if (const json* tools = field(body, "tools")) {
    if (auto e = read_tools(*tools, out)) return e;
  }
  out.choice = out.names.empty() ? ToolRequest::Choice::None : ToolRequest::Choice::Auto;
  if (const json* choice = field(body, "tool_choice")) {
    if (auto e = read_choice(*choice, out)) return e;
  }
  if (const json* parallel = field(body, "parallel_tool_calls")) {
    if (!parallel->is_boolean()) return bad("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    out.parallel = parallel->get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> normalise_message_tool_calls(json& message, size_t index) {
  auto it = message.find("tool_calls");
  if (it == message.end() || it->is_null()) return std::nullopt;
  const std::string where = "messages[" + std::to_string(index) + "].tool_calls";
  if (!it->is_array()) return bad("'" + where + "' must be an array", "messages");
  for (size_t j = 0; j < it->size(); ++j) {
    json& call = (*it)[j];
    const std::string at = where + "[" + std::to_string(j) + "]";
    if (!call.is_object()) return bad("'" + at + "' must be an object", "messages");
    auto function = call.find("function");
    if (function == call.end() || !function->is_object()) {
      return bad("'" + at + ".function' must be an object", "messages");
    }
    const json* name = field(*function, "name");
    if (name == nullptr || !name->is_string()) return bad("'" + at + ".function.name' must be a string", "messages");
    auto arguments = function->find("arguments");
    if (arguments == function->end() || arguments->is_null()) {
      (*function)["arguments"] = json::object();
      continue;
    }
    if (arguments->is_object()) continue;
    if (!arguments->is_string()) {
      return bad("'" + at + ".function.arguments' must be a JSON object or a string holding one", "messages");
    }
    json parsed = json::parse(arguments->get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) {
      return bad("'" + at + ".function.arguments' is not a JSON object: " + arguments->get<std::string>().substr(0, 80),
                 "messages");
    }
    *arguments = std::move(parsed);
  }
  return std::nullopt;
}

}  // namespace tc::server
