// Messages API bodies translated into chat completions bodies (see
// anthropic_schema.h).
#include "server/anthropic_schema.h"

#include <string>
#include <utility>

#include "server/field_error.h"
#include "server/image_input.h"

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

// An image block {"type": "image", "source": {"type": "base64", "media_type",
// "data"}} as a chat image part (a data: URL), its data checked.
ojson image_part(const ojson& block, const std::string& where) {
  const ojson* source = block.contains("source") && block["source"].is_object() ? &block["source"] : nullptr;
  const auto string_of = [&](const char* key) {
    return source != nullptr && source->contains(key) && (*source)[key].is_string() ? (*source)[key].get<std::string>()
                                                                                    : std::string();
  };
  const std::string type = string_of("type");
  if (type == "base64") {
    if (!source->contains("data") || !(*source)["data"].is_string()) {
      fail("'" + where + ".source.data' must be a base64 string", "messages");
    }
    const std::string& data = (*source)["data"].get_ref<const std::string&>();
    image_bytes_from_base64(data, where + ".source.data");
    std::string media_type = string_of("media_type");
    if (media_type.empty() || media_type.find_first_of(",; ") != std::string::npos) {
      media_type = "application/octet-stream";
    }
    const std::string url = std::string("data:").append(media_type).append(";base64,").append(data);
    return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
  }
  if (type == "url") {
    const ojson* url = source->contains("url") ? &(*source)["url"] : nullptr;
    if (url == nullptr || !url->is_string()) fail("'" + where + ".source.url' must be a string", "messages");
    image_bytes_from_url(url->get<std::string>(), where + ".source.url");  // a data: URL, or the 400
    return {{"type", "image_url"}, {"image_url", {{"url", *url}}}};
  }
  if (type == "file") fail("'" + where + ".source': files are not supported; send the image as base64", "messages");
  fail("'" + where + ".source.type' must be base64 (or url, for a data: URL)", "messages");
}

// A user turn's content: its text, or with images its parts (the text
// since the last image a text part); both emptied.
ojson user_content(ojson& parts, std::string& text) {
  if (parts.empty()) return std::exchange(text, "");
  if (!text.empty()) parts.push_back({{"type", "text"}, {"text", std::exchange(text, "")}});
  return std::exchange(parts, ojson::array());
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
  ojson parts = ojson::array();  // with images: the user's text and image parts so far
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
      if (!text.empty() || !parts.empty()) {
        messages.push_back({{"role", "user"}, {"content", user_content(parts, text)}});
      }
      const std::string result = b.contains("content") ? text_of(b["content"], where + ".content") : "";
      const bool is_error = b.value("is_error", false);
      messages.push_back({{"role", "tool"},
                          {"tool_call_id", b["tool_use_id"]},
                          {"content", is_error ? "Error: " + result : result}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      // An earlier turn's thinking: left out, as chat templates leave it out.
    } else if (type == "image" && role == "user") {
      if (!text.empty()) parts.push_back({{"type", "text"}, {"text", std::exchange(text, "")}});
      parts.push_back(image_part(b, where));
    } else if (type == "image" || type == "document") {
      fail("'" + where + "' is " + type + (type == "image" ? "; images are read in user messages only"
                                                          : "; this server reads text and images only"),
           "messages");
    } else {
      fail("'" + where + ".type' must be text, tool_use (assistant), tool_result (user) or thinking", "messages");
    }
  }
  if (role == "assistant") {
    ojson msg = {{"role", "assistant"}, {"content", calls.empty() || !text.empty() ? ojson(text) : ojson(nullptr)}};
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    messages.push_back(std::move(msg));
  } else if (!text.empty() || !parts.empty() || messages.empty() || messages.back().value("role", "") != "tool") {
    messages.push_back({{"role", "user"}, {"content", user_content(parts, text)}});
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
