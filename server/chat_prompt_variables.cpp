// chat_prompt_variables: what a chat template sees of a request, with
// function calling written out as text for templates that lack it.
#include "server/chat_prompt_variables.h"

#include <algorithm>
#include <cstdint>

#include "server/gemma4_split.h"

namespace tc::server {
namespace {

using nlohmann::json;

// The tools and the call format, for a template that does not render `tools`.
std::string tools_preamble(const json& tools) {
  std::string text =
      "You can call functions. They are described here as JSON, one per line:\n";
  for (const auto& tool : tools) text += tool["function"].dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  text +=
      "To call functions, reply with one block per call and nothing else:\n"
      "<tool_call>\n{\"name\": \"function name\", \"arguments\": {\"argument name\": value}}\n</tool_call>\n"
      "Results come back in <tool_response></tool_response> tags. If no function helps, answer in plain text.";
  return text;
}

std::string text_of(const json& content) { return content.is_string() ? content.get<std::string>() : std::string(); }

// An assistant message's calls as the Hermes blocks the preamble asks for.
std::string calls_as_text(const json& calls) {
  std::string text;
  for (const auto& call : calls) {
    const json& function = call["function"];
    const auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
    if (!text.empty()) text += "\n";
    text += "<tool_call>\n{\"name\": " + dump(function["name"]) +
            ", \"arguments\": " + dump(function.value("arguments", json::object())) + "}\n</tool_call>";
  }
  return text;
}

// Calls into the assistant's content, results into user turns (merged with
// a user turn before them, for templates that insist on alternation).
json messages_without_tool_fields(const json& messages) {
  json out = json::array();
  for (const auto& m : messages) {
    json copy = m;
    if (m["role"] == "tool" || m["role"] == "function") {
      const std::string result = "<tool_response>\n" + text_of(m["content"]) + "\n</tool_response>";
      if (!out.empty() && out.back()["role"] == "user") {
        out.back()["content"] = text_of(out.back()["content"]) + "\n" + result;
        continue;
      }
      copy = {{"role", "user"}, {"content", result}};
    } else if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      std::string content = text_of(m["content"]);
      if (!content.empty()) content += "\n";
      copy["content"] = content + calls_as_text(*calls);
      copy.erase("tool_calls");
    }
    out.push_back(std::move(copy));
  }
  return out;
}

// The preamble into the first system message, or before the first user
// message's text when there is none (some templates refuse a system role).
void add_preamble(json& messages, const std::string& preamble) {
  for (auto& m : messages) {
    const std::string role = m["role"].get<std::string>();
    if (role == "system" || role == "developer") {
      m["content"] = text_of(m["content"]) + "\n\n" + preamble;
      return;
    }
    if (role == "user") {
      m["content"] = preamble + "\n\n" + text_of(m["content"]);
      return;
    }
  }
}

// Every tool call id of the messages as nine_char_call_id gives it.
json messages_with_nine_char_ids(json messages) {
  for (auto& m : messages) {
    if (auto id = m.find("tool_call_id"); id != m.end() && id->is_string()) {
      *id = nine_char_call_id(id->get<std::string>());
    }
    auto calls = m.find("tool_calls");
    if (calls == m.end() || !calls->is_array()) continue;
    for (auto& call : *calls) {
      if (auto id = call.find("id"); id != call.end() && id->is_string()) *id = nine_char_call_id(id->get<std::string>());
    }
  }
  return messages;
}

// Assistant messages as gpt-oss's template reads them (see the header).
json messages_for_harmony(json messages) {
  for (auto& m : messages) {
    if (m["role"] != "assistant") continue;
    const auto calls = m.find("tool_calls");
    const bool has_calls = calls != m.end() && calls->is_array() && !calls->empty();
    if (auto r = m.find("reasoning_content"); r != m.end() && r->is_string() && !m.contains("thinking")) {
      m["thinking"] = *r;
      if (has_calls) m.erase("content");
    }
    if (auto c = m.find("content"); c != m.end() && c->is_null()) m.erase(c);
  }
  return messages;
}

bool has_calls(const json& m) {
  const auto calls = m.find("tool_calls");
  return calls != m.end() && calls->is_array() && !calls->empty();
}

// A tool message's result as Gemma 4's tool_responses hold it.
json gemma4_response(const json& tool_message, const json& calls, size_t index) {
  json response;
  if (const auto c = tool_message.find("content"); c != tool_message.end()) {
    response = *c;
    if (c->is_string()) {
      json parsed = json::parse(c->get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_discarded()) response = std::move(parsed);
    }
  }
  std::string name;
  if (index < calls.size() && calls[index].contains("function") && calls[index]["function"].is_object()) {
    const json& n = calls[index]["function"].value("name", json());
    if (n.is_string()) name = n.get<std::string>();
  }
  if (name.empty()) {
    const json& id = tool_message.value("tool_call_id", json());
    if (id.is_string()) name = id.get<std::string>();
  }
  return {{"name", name}, {"response", std::move(response)}};
}

// Calls, their results and the answer after them as one assistant message
// (llama.cpp's convert_tool_responses_gemma4; see the header).
json messages_for_gemma4(const json& messages) {
  json out = json::array();
  for (size_t i = 0; i < messages.size();) {
    const json& m = messages[i];
    if (m.value("role", "") != "assistant" || !has_calls(m)) {
      out.push_back(m);
      ++i;
      continue;
    }
    json merged = {{"role", "assistant"}, {"tool_calls", m["tool_calls"]}};
    json responses = json::array();
    for (++i; i < messages.size() && messages[i].value("role", "") == "tool"; ++i) {
      responses.push_back(gemma4_response(messages[i], m["tool_calls"], responses.size()));
    }
    if (i < messages.size() && messages[i].value("role", "") == "assistant" && !has_calls(messages[i])) {
      const json& content = messages[i].value("content", json());
      if ((content.is_string() && !content.get<std::string>().empty()) || (content.is_array() && !content.empty())) {
        merged["content"] = content;
        ++i;
      }
    }
    if (!responses.empty()) merged["tool_responses"] = std::move(responses);
    if (const auto r = m.find("reasoning_content"); r != m.end() && r->is_string()) merged["reasoning_content"] = *r;
    out.push_back(std::move(merged));
  }
  return out;
}

}  // namespace

std::string nine_char_call_id(std::string_view id) {
  const bool fits = id.size() == 9 && std::all_of(id.begin(), id.end(), [](char c) {
                      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
                    });
  if (fits) return std::string(id);
  // FNV-1a, 64 bits, written in base 62: stable across requests and processes.
  uint64_t h = 14695981039346656037ull;
  for (const char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string out(9, '0');
  for (char& c : out) {
    c = kDigits[h % 62];
    h /= 62;
  }
  return out;
}

TemplateToolSupport TemplateToolSupport::of(std::string_view source) {
  TemplateToolSupport support;
  support.tools = source.find("tools") != std::string_view::npos;
  support.tool_calls = source.find("tool_calls") != std::string_view::npos;
  support.nine_char_ids = source.find("length != 9") != std::string_view::npos;
  support.harmony = source.find("<|channel|>") != std::string_view::npos;
  support.gemma4 = is_gemma4_template(source);
  support.gemma4_tool_responses = support.gemma4 && source.find("<|tool_call>call:") != std::string_view::npos &&
                                  source.find("OpenAI Chat Completions:") == std::string_view::npos;
  return support;
}

json chat_prompt_variables(const ChatRequest& request, const std::string& bos_token, const std::string& eos_token,
                           const TemplateToolSupport& support) {
  json messages = support.tool_calls ? request.messages : messages_without_tool_fields(request.messages);
  if (support.nine_char_ids) messages = messages_with_nine_char_ids(std::move(messages));
  if (support.harmony) messages = messages_for_harmony(std::move(messages));
  if (support.tool_calls && support.gemma4_tool_responses) messages = messages_for_gemma4(messages);
  json vars = {{"messages", std::move(messages)},
               {"add_generation_prompt", request.add_generation_prompt},
               {"bos_token", bos_token},
               {"eos_token", eos_token}};
  if (request.template_kwargs.is_object()) {
    for (const auto& [key, value] : request.template_kwargs.items()) vars[key] = value;
  }
  // tool_choice "none": the model is not told about the tools at all.
  if (!request.tools.tools.is_null() && request.tools.choice != ToolRequest::Choice::None) {
    vars["tools"] = request.tools.tools;
    if (!support.tools) add_preamble(vars["messages"], tools_preamble(request.tools.tools));
  }
  return vars;
}

}  // namespace tc::server
