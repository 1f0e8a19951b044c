// Messages API bodies translated into chat completions bodies (see
// anthropic_schema.h).
#include "server/anthropic_schema.h"

#include <string>
#include <utility>

#include "server/field_error.h"

namespace tc::server {
namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& message, const std::string& param) { fail_field(message, param); }

// Text blocks (or a string) as one string; `where` names the field, `param` the error's param.
std::string text_of(const ojson& content, const std::string& where, const char* param = "messages") {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) fail("'" + where + "' must be a string or an array of text blocks", param);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const ojson& b = content[j];
    if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string()) {
      fail("'" + where + "[" + std::to_string(j) + "]' must be a text block", param);
    }
    text += b["text"].get<std::string>();
  }
  return text;
}

void add_message(ojson& messages, const ojson& m, size_t i) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
    fail("'" + at + ".role' must be user or assistant", "messages");
  }
  const std::string role = m["role"].get<std::string>();
  if (role != "user" && role != "assistant") fail("'" + at + ".role' must be user or assistant", "messages");
  if (!m.contains("content")) fail("'" + at + ".content' is required", "messages");
  const ojson& content = m["content"];
  if (content.is_string()) {
    messages.push_back({{"role", role}, {"content", content}});
    return;
  }
  if (!content.is_array()) fail("'" + at + ".content' must be a string or an array of blocks", "messages");
  std::string text;
  ojson calls = ojson::array();
  for (size_t j = 0; j < content.size(); ++j) {
    const ojson& b = content[j];
    const std::string where = at + ".content[" + std::to_string(j) + "]";
    const std::string type = b.is_object() ? b.value("type", "") : "";
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) fail("'" + where + ".text' must be a string", "messages");
      text += b["text"].get<std::string>();
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string() ||
          !b.contains("input") || !b["input"].is_object()) {
        fail("'" + where + "' must have a string id and name and an object input", "messages");
      }
      calls.push_back({{"id", b["id"]},
                       {"type", "function"},
                       {"function", {{"name", b["name"]}, {"arguments", b["input"].dump()}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        fail("'" + where + ".tool_use_id' must be a string", "messages");
      }
      // The user's text so far comes first, then the result.
      if (!text.empty()) messages.push_back({{"role", "user"}, {"content", std::exchange(text, "")}});
      const std::string result = b.contains("content") ? text_of(b["content"], where + ".content") : "";
      const bool is_error = b.value("is_error", false);
      messages.push_back({{"role", "tool"},
                          {"tool_call_id", b["tool_use_id"]},
                          {"content", is_error ? "Error: " + result : result}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      // An earlier turn's thinking: left out, as chat templates leave it out.
    } else if (type == "image" || type == "document") {
      fail("'" + where + "' is " + type + "; this server reads text only", "messages");
    } else {
      fail("'" + where + ".type' must be text, tool_use (assistant), tool_result (user) or thinking", "messages");
    }
  }
  if (role == "assistant") {
    ojson msg = {{"role", "assistant"}, {"content", calls.empty() || !text.empty() ? ojson(text) : ojson(nullptr)}};
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    messages.push_back(std::move(msg));
  } else if (!text.empty() || messages.empty() || messages.back().value("role", "") != "tool") {
    messages.push_back({{"role", "user"}, {"content", text}});
  }
}

ojson chat_tools(const ojson& tools) {
  if (!tools.is_array()) fail("'tools' must be an array", "tools");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) fail("'" + at + ".name' is required", "tools");
    if (t.contains("type") && t["type"].is_string() && t["type"] != "custom") {
      fail("'" + at + "' is a server tool of type '" + t["type"].get<std::string>() +
               "'; only tools with an input_schema are supported",
           "tools");
    }
    ojson function = {{"name", t["name"]}};
    if (t.contains("description")) function["description"] = t["description"];
    function["parameters"] = t.contains("input_schema") ? t["input_schema"] : ojson{{"type", "object"}};
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

void read_tool_choice(const ojson& choice, ojson& chat) {
  const std::string type = choice.is_object() ? choice.value("type", "") : "";
  if (type == "auto" || type == "none") {
    chat["tool_choice"] = type;
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "tool" && choice.contains("name") && choice["name"].is_string()) {
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  } else {
    fail("'tool_choice.type' must be auto, any, tool (with a name) or none", "tool_choice");
  }
  if (choice.value("disable_parallel_tool_use", false)) chat["parallel_tool_calls"] = false;
}

AnthropicRequest translate(const ojson& body) {
  if (!body.is_object()) fail("request body must be a JSON object", "");
  AnthropicRequest r;
  ojson& chat = r.chat;
  chat = ojson::object();
  ojson messages = ojson::array();
  if (body.contains("system") && !body["system"].is_null()) {
    messages.push_back({{"role", "system"}, {"content", text_of(body["system"], "system", "system")}});
  }
  if (!body.contains("messages") || !body["messages"].is_array()) fail("'messages' must be an array", "messages");
  for (size_t i = 0; i < body["messages"].size(); ++i) add_message(messages, body["messages"][i], i);
  chat["messages"] = std::move(messages);
  if (!body.contains("max_tokens") || !body["max_tokens"].is_number_integer()) {
    fail("'max_tokens' is required (an integer >= 1)", "max_tokens");
  }
  chat["max_tokens"] = body["max_tokens"];
  if (body.contains("stop_sequences") && !body["stop_sequences"].is_null()) chat["stop"] = body["stop_sequences"];
  if (body.contains("tools") && !body["tools"].is_null()) {
    ojson tools = chat_tools(body["tools"]);
    if (!tools.empty()) chat["tools"] = std::move(tools);
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) read_tool_choice(body["tool_choice"], chat);
  // Anthropic's sampling fields, and this server's extensions beside them.
  for (const char* key : {"model", "stream", "temperature", "top_p", "top_k", "seed", "min_p", "logit_bias"}) {
    if (body.contains(key) && !body[key].is_null()) chat[key] = body[key];
  }
  return r;
}

}  // namespace

AnthropicRequest translate_anthropic_request(const nlohmann::ordered_json& body) {
  return translated<AnthropicRequest>([&] { return translate(body); });
}

nlohmann::json anthropic_error_body(const ApiError& e) {
  const char* type = e.status == 401   ? "authentication_error"
                     : e.status == 403 ? "permission_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 429 ? "rate_limit_error"
                     : e.status == 503 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.message}}}};
}

}  // namespace tc::server
