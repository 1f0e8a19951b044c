// Responses API bodies translated into chat completions bodies (see
// responses_schema.h).
#include "server/responses_schema.h"

#include <string>
#include <utility>

#include "server/field_error.h"
#include "server/image_input.h"
#include "server/response_store.h"

namespace tc::server {
namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& message, const std::string& param) { fail_field(message, param); }

// Fields only OpenAI's service acts on: accepted and ignored.
constexpr const char* kIgnored[] = {"store",  "metadata",         "include",           "truncation",
                                    "service_tier", "reasoning", "prompt_cache_key", "safety_identifier",
                                    "stream_options", "top_logprobs", "max_tool_calls", "user", "n"};
// Fields translated here.
constexpr const char* kTranslated[] = {"input", "instructions", "max_output_tokens", "tools", "tool_choice", "text",
                                       "previous_response_id"};

// An input_image part as a chat image part: its image_url a data: URL
// (checked here); a file_id or another URL is a 400.
ojson image_part(const ojson& part, const std::string& at) {
  if (part.contains("file_id") && !part["file_id"].is_null()) {
    fail("'" + at + ".file_id': files are not supported; send the image inline as a data: URL in 'image_url' "
         "(data:image/png;base64,...)",
         "input");
  }
  if (!part.contains("image_url") || !part["image_url"].is_string()) {
    fail("'" + at + ".image_url' must be a string (a data: URL)", "input");
  }
  image_bytes_from_url(part["image_url"].get<std::string>(), at + ".image_url");
  return {{"type", "image_url"}, {"image_url", {{"url", part["image_url"]}}}};
}

// A message's content as chat parts: a string, or input_text / output_text
// / refusal parts (text parts) and input_image parts (image parts).
ojson text_parts(const ojson& content, const std::string& where) {
  if (content.is_string()) return content;
  if (!content.is_array()) fail("'" + where + ".content' must be a string or an array of parts", "input");
  ojson parts = ojson::array();
  for (size_t j = 0; j < content.size(); ++j) {
    const ojson& part = content[j];
    const std::string at = where + ".content[" + std::to_string(j) + "]";
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type == "input_text" || type == "output_text") {
      if (!part.contains("text") || !part["text"].is_string()) fail("'" + at + ".text' must be a string", "input");
      parts.push_back({{"type", "text"}, {"text", part["text"]}});
    } else if (type == "refusal") {
      if (!part.contains("refusal") || !part["refusal"].is_string()) {
        fail("'" + at + ".refusal' must be a string", "input");
      }
      parts.push_back({{"type", "text"}, {"text", part["refusal"]}});
    } else if (type == "input_image") {
      parts.push_back(image_part(part, at));
    } else if (type == "input_file" || type == "input_audio") {
      fail("'" + at + "' is " + type + "; this server reads text and images only", "input");
    } else {
      fail("'" + at + ".type' must be input_text, output_text, refusal or input_image", "input");
    }
  }
  return parts;
}

// The assistant message a function call or an assistant text joins: the
// last message when it is the assistant's, else a new one.
ojson& assistant_message(ojson& messages) {
  if (messages.empty() || messages.back().value("role", "") != "assistant") {
    messages.push_back({{"role", "assistant"}, {"content", nullptr}});
  }
  return messages.back();
}

void add_item(ojson& messages, const ojson& item, const std::string& where) {
  if (!item.is_object()) fail("'" + where + "' must be an object", "input");
  const std::string type = item.value("type", item.contains("role") ? "message" : "");
  if (type == "message") {
    if (!item.contains("role") || !item["role"].is_string()) fail("'" + where + ".role' must be a string", "input");
    std::string role = item["role"].get<std::string>();
    if (!item.contains("content")) fail("'" + where + ".content' is required", "input");
    ojson content = text_parts(item["content"], where);
    if (role == "developer") role = "system";
    if (role == "assistant") {
      ojson& m = assistant_message(messages);
      if (m["content"].is_null()) {
        m["content"] = std::move(content);
      } else {
        // Text after a call in one turn: the parts joined.
        ojson joined = m["content"].is_string() ? ojson::array({{{"type", "text"}, {"text", m["content"]}}})
                                                : m["content"];
        if (content.is_string()) content = ojson::array({{{"type", "text"}, {"text", content}}});
        for (auto& part : content) joined.push_back(part);
        m["content"] = std::move(joined);
      }
      return;
    }
    if (role != "user" && role != "system") {
      fail("'" + where + ".role' must be user, system, developer or assistant", "input");
    }
    messages.push_back({{"role", role}, {"content", std::move(content)}});
  } else if (type == "function_call") {
    for (const char* key : {"call_id", "name", "arguments"}) {
      if (!item.contains(key) || !item[key].is_string()) {
        fail("'" + where + "." + key + "' must be a string", "input");
      }
    }
    ojson& m = assistant_message(messages);
    if (!m.contains("tool_calls")) m["tool_calls"] = ojson::array();
    m["tool_calls"].push_back({{"id", item["call_id"]},
                               {"type", "function"},
                               {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
  } else if (type == "function_call_output") {
    if (!item.contains("call_id") || !item["call_id"].is_string()) {
      fail("'" + where + ".call_id' must be a string", "input");
    }
    if (!item.contains("output")) fail("'" + where + ".output' is required", "input");
    messages.push_back({{"role", "tool"},
                        {"tool_call_id", item["call_id"]},
                        {"content", text_parts(item["output"], where + ".output")}});
  } else if (type == "reasoning") {
    // An earlier turn's reasoning: chat templates leave it out of the
    // prompt, and so does this.
  } else if (type == "item_reference") {
    fail("'" + where + "' refers to a stored item; nothing is stored here: send the item itself", "input");
  } else {
    fail("'" + where + ".type' must be message, function_call, function_call_output or reasoning", "input");
  }
}

ojson chat_tools(const ojson& tools) {
  if (!tools.is_array()) fail("'tools' must be an array", "tools");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    const std::string type = t.is_object() ? t.value("type", "") : "";
    if (type != "function") {
      fail("'" + at + "' is of type '" + type + "'; only function tools are supported", "tools");
    }
    ojson function = ojson::object();
    for (const auto& [key, value] : t.items()) {
      if (key != "type") function[key] = value;
    }
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

ojson chat_tool_choice(const ojson& choice) {
  if (choice.is_string()) return choice;
  if (choice.is_object() && choice.value("type", "") == "function" && choice.contains("name")) {
    return {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  }
  fail("'tool_choice' must be none, auto, required or {\"type\": \"function\", \"name\": ...}", "tool_choice");
}

// text.format -> response_format.
void read_text_format(const ojson& text, ojson& chat) {
  if (!text.is_object()) fail("'text' must be an object", "text");
  if (!text.contains("format") || text["format"].is_null()) return;
  const ojson& f = text["format"];
  const std::string type = f.is_object() ? f.value("type", "") : "";
  if (type == "text") return;
  if (type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    if (!f.contains("schema") || !f["schema"].is_object()) fail("'text.format.schema' must be an object", "text");
    ojson schema = {{"name", f.value("name", "response")}, {"schema", f["schema"]}};
    if (f.contains("strict")) schema["strict"] = f["strict"];
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  } else {
    fail("'text.format.type' must be text, json_object or json_schema", "text");
  }
}

ResponsesRequest translate(const ojson& body, const PreviousResponses& previous) {
  if (!body.is_object()) fail("request body must be a JSON object", "");
  if (body.contains("conversation") && !body["conversation"].is_null()) {
    fail("'conversation' objects are not supported; continue with 'previous_response_id' or send the whole "
         "conversation in 'input'",
         "conversation");
  }
  if (body.contains("background") && body["background"].is_boolean() && body["background"].get<bool>()) {
    fail("'background' responses are not supported", "background");
  }
  if (body.contains("prompt") && !body["prompt"].is_null()) {
    fail("stored prompts ('prompt') are not supported", "prompt");
  }
  ResponsesRequest r;
  ojson& chat = r.chat;
  chat = ojson::object();
  // The conversation: the previous response's, then this input.
  ojson conversation = ojson::array();
  nlohmann::json previous_id = nullptr;
  if (body.contains("previous_response_id") && !body["previous_response_id"].is_null()) {
    if (!body["previous_response_id"].is_string()) {
      fail("'previous_response_id' must be a string", "previous_response_id");
    }
    const std::string id = body["previous_response_id"].get<std::string>();
    const auto stored = previous ? previous(id) : std::nullopt;
    if (!stored) {
      throw BadField{ApiError{404, "invalid_request_error",
                              "previous response '" + id + "' was not found (responses are kept in memory, the " +
                                  "latest " + std::to_string(ResponseStore::kMaxEntries) + ", until the server stops)",
                              "previous_response_not_found", "previous_response_id"}};
    }
    conversation = ojson::parse(stored->dump());
    previous_id = id;
  }
  if (!body.contains("input") || body["input"].is_null()) fail("'input' is required", "input");
  const ojson& input = body["input"];
  if (input.is_string()) {
    conversation.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    for (size_t i = 0; i < input.size(); ++i) add_item(conversation, input[i], "input[" + std::to_string(i) + "]");
  } else {
    fail("'input' must be a string or an array of items", "input");
  }
  ojson messages = ojson::array();
  if (body.contains("instructions") && !body["instructions"].is_null()) {
    if (!body["instructions"].is_string()) fail("'instructions' must be a string", "instructions");
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  }
  for (const auto& m : conversation) messages.push_back(m);
  chat["messages"] = std::move(messages);
  r.conversation = nlohmann::json::parse(conversation.dump());
  if (body.contains("store") && body["store"].is_boolean()) r.store = body["store"].get<bool>();
  if (body.contains("max_output_tokens") && !body["max_output_tokens"].is_null()) {
    chat["max_tokens"] = body["max_output_tokens"];
  }
  if (body.contains("tools") && !body["tools"].is_null()) {
    ojson tools = chat_tools(body["tools"]);
    if (!tools.empty()) chat["tools"] = std::move(tools);
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    chat["tool_choice"] = chat_tool_choice(body["tool_choice"]);
  }
  if (body.contains("text") && !body["text"].is_null()) read_text_format(body["text"], chat);
  // The rest (model, stream, temperature, top_p, parallel_tool_calls and
  // this server's extensions) as they are.
  for (const auto& [key, value] : body.items()) {
    bool skip = false;
    for (const char* k : kIgnored) skip = skip || key == k;
    for (const char* k : kTranslated) skip = skip || key == k;
    if (!skip) chat[key] = value;
  }
  nlohmann::json& echo = r.echo;
  const auto as_json = [](const ojson& j) { return nlohmann::json::parse(j.dump()); };
  const auto field = [&](const char* key, nlohmann::json fallback) {
    echo[key] = body.contains(key) && !body[key].is_null() ? as_json(body[key]) : std::move(fallback);
  };
  field("instructions", nullptr);
  field("max_output_tokens", nullptr);
  field("temperature", 1.0);
  field("top_p", 1.0);
  field("tools", nlohmann::json::array());
  field("tool_choice", "auto");
  field("parallel_tool_calls", true);
  field("text", {{"format", {{"type", "text"}}}});
  field("metadata", nlohmann::json::object());
  field("reasoning", nullptr);
  echo["store"] = r.store;
  echo["previous_response_id"] = previous_id;
  return r;
}

}  // namespace

ResponsesRequest translate_responses_request(const nlohmann::ordered_json& body, const PreviousResponses& previous) {
  return translated<ResponsesRequest>([&] { return translate(body, previous); });
}

}  // namespace tc::server
