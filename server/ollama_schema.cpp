// Ollama request bodies -> OpenAI bodies (see ollama_schema.h).
#include "server/ollama_schema.h"

#include <array>
#include <string_view>
#include <vector>

#include "server/field_error.h"
#include "server/image_input.h"

namespace tc::server {
namespace {

using nlohmann::json;

ApiError bad(std::string message, std::string param = "") {
  return {400, "invalid_request_error", std::move(message), "", std::move(param)};
}

// Ollama's sampling defaults (its Modelfile defaults), used where `options` leaves one out.
constexpr double kTemperature = 0.8;
constexpr int kTopK = 40;
constexpr double kTopP = 0.9;
constexpr double kRepeatPenalty = 1.1;

// The fields both endpoints share: model, stream, keep_alive, format, options.
void common_fields(const json& body, OllamaRequest& r) {
  if (!body.is_object()) {
    r.error = bad("request body must be a JSON object");
    return;
  }
  auto model = body.find("model");
  if (model == body.end() || model->is_null()) model = body.find("name");  // older clients
  if (model == body.end() || !model->is_string() || model->get<std::string>().empty()) {
    r.error = bad("model is required", "model");
    return;
  }
  r.model = model->get<std::string>();
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      r.error = bad("'stream' must be a boolean", "stream");
      return;
    }
    r.stream = it->get<bool>();
  }
  if (auto err = parse_keep_alive_field(body, r.keep_alive)) {
    r.error = err;
    return;
  }
  if (auto it = body.find("truncate"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      r.error = bad("'truncate' must be a boolean", "truncate");
      return;
    }
    r.truncate = it->get<bool>();
  }
  bool explicit_shift = false;
  if (auto it = body.find("shift"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      r.error = bad("'shift' must be a boolean", "shift");
      return;
    }
    r.shift = it->get<bool>();
    explicit_shift = true;
  }
  json response_format;
  if (auto it = body.find("format"); it != body.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
    if (it->is_string() && it->get<std::string>() == "json") {
      response_format = {{"type", "json_object"}};
    } else if (it->is_object()) {
      // Compiled from the request's text, in declared order (response_schema.h).
      response_format = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *it}}}};
    } else {
      r.error = bad("'format' must be \"json\" or a JSON schema", "format");
      return;
    }
  }
  // think: through the template's enable_thinking (Qwen3's), false switches
  // a thinking model's reasoning off; true also returns it apart, in
  // `thinking` (reasoning_split.h). Absent: the reply as the model wrote it.
  json& o = r.openai;
  o = json::object();
  o["reasoning_format"] = "none";
  if (auto it = body.find("think"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      r.error = bad("'think' must be a boolean", "think");
      return;
    }
    const bool think = it->get<bool>();
    o["chat_template_kwargs"] = {{"enable_thinking", think}};
    if (think) o["reasoning_format"] = "deepseek";
  }
  o["model"] = r.model;
  o["stream"] = r.stream;
  o["temperature"] = kTemperature;
  o["top_k"] = kTopK;
  o["top_p"] = kTopP;
  o["repeat_penalty"] = kRepeatPenalty;
  if (explicit_shift) o["context_shift"] = r.shift;
  if (!response_format.is_null()) o["response_format"] = std::move(response_format);
  auto options = body.find("options");
  if (options == body.end() || options->is_null()) return;
  if (!options->is_object()) {
    r.error = bad("'options' must be an object", "options");
    return;
  }
  // Same names, same meaning; types and ranges are checked by the OpenAI parser.
  for (const char* key : {"temperature", "top_k", "top_p", "min_p", "typical_p", "mirostat", "mirostat_tau",
                          "mirostat_eta", "seed", "presence_penalty", "frequency_penalty", "repeat_penalty", "stop"}) {
    if (auto it = options->find(key); it != options->end() && !it->is_null()) o[key] = *it;
  }
  if (auto it = options->find("num_predict"); it != options->end() && !it->is_null()) {
    if (!it->is_number_integer()) {
      r.error = bad("'options.num_predict' must be an integer", "options.num_predict");
      return;
    }
    // -1 (no limit): the default, one context's length with the shift on;
    // -2 (fill the context): what the context leaves, never shifting.
    if (it->get<int64_t>() > 0) o["max_tokens"] = *it;
    if (it->get<int64_t>() == -2) {
      r.shift = false;
      o["context_shift"] = false;
    }
    if (it->get<int64_t>() == 0) {
      r.error = bad("'options.num_predict' 0 generates nothing; use a positive number or -1", "options.num_predict");
      return;
    }
  }
  if (auto it = options->find("num_keep"); it != options->end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || it->get<int64_t>() > (1 << 24)) {
      r.error = bad("'options.num_keep' must be an integer >= -1 (-1: the whole prompt)", "options.num_keep");
      return;
    }
    o["n_keep"] = *it;
  }
  if (auto it = options->find("repeat_last_n"); it != options->end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || it->get<int64_t>() > (1 << 24)) {
      r.error = bad("'options.repeat_last_n' must be an integer >= -1", "options.repeat_last_n");
      return;
    }
    r.repeat_last_n = static_cast<int32_t>(it->get<int64_t>());
  }
  // Load-time options (num_ctx, num_gpu, num_thread, ...) are the model's
  // NAME.toml settings here; like Ollama with options it does not know, they
  // are ignored per request.
}

// Ollama's `images` (an array of base64 strings; absent, null or empty:
// none) checked and decoded into `bytes`, each as a chat image part (a
// data: URL) in `parts`. `where` names the field; at most
// kMaxRequestImages in `bytes` in all.
std::optional<ApiError> read_images(const json* images, const std::string& where, std::vector<std::string>& bytes,
                                    json& parts) {
  if (images == nullptr || images->is_null()) return std::nullopt;
  const std::string param = where.substr(0, where.find_first_of("[."));
  if (!images->is_array()) return bad("'" + where + "' must be an array of base64 strings", param);
  try {
    for (size_t k = 0; k < images->size(); ++k) {
      const json& image = (*images)[k];
      const std::string at = where + "[" + std::to_string(k) + "]";
      if (!image.is_string()) return bad("'" + at + "' must be a base64 string", param);
      if (bytes.size() >= kMaxRequestImages) fail_too_many_images(param);
      bytes.push_back(image_bytes_from_base64(image.get_ref<const std::string&>(), at));
      parts.push_back({{"type", "image_url"},
                       {"image_url", {{"url", std::string("data:application/octet-stream;base64,") +
                                                  image.get_ref<const std::string&>()}}}});
    }
  } catch (const BadField& e) {
    return e.error;
  }
  return std::nullopt;
}

// The text that stands for `n` images before a message's text or a prompt:
// kImageMarker and a newline each.
std::string image_markers(size_t n) {
  std::string text;
  for (size_t i = 0; i < n; ++i) text.append(kImageMarker).append("\n");
  return text;
}

// A chat message's content with its images first: image parts, then its
// text as a text part (the parts joined with newlines: one marker and a
// newline per image, then the text).
json content_with_images(json parts, const json& content) {
  if (content.is_string()) parts.push_back({{"type", "text"}, {"text", content}});
  return parts;
}

// /api/chat's messages with their `images` as image parts of their content.
std::optional<ApiError> chat_messages(const json& messages, json& out) {
  out = messages;
  std::vector<std::string> bytes;
  for (size_t i = 0; i < out.size(); ++i) {
    json& m = out[i];
    if (!m.is_object()) continue;  // the OpenAI parser names it
    auto images = m.find("images");
    if (images == m.end() || images->is_null() || (images->is_array() && images->empty())) continue;
    json parts = json::array();
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (auto e = read_images(&*images, where + ".images", bytes, parts)) return e;
    auto content = m.find("content");
    if (content != m.end() && !content->is_null() && !content->is_string()) {
      return bad("'" + where + ".content' must be a string", "messages");
    }
    m["content"] = content_with_images(std::move(parts), content != m.end() ? *content : json());
    m.erase("images");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_keep_alive_field(const json& body, std::optional<config::KeepAlive>& out) {
  out.reset();
  if (!body.is_object()) return std::nullopt;
  auto it = body.find("keep_alive");
  if (it == body.end() || it->is_null()) return std::nullopt;
  try {
    if (it->is_number()) {
      out = config::keep_alive_from_seconds(it->get<double>());
    } else if (it->is_string()) {
      out = config::parse_keep_alive(it->get<std::string>());
    } else {
      return bad("'keep_alive' must be a duration string (\"5m\", \"1h\", \"-1\") or a number of seconds",
                 "keep_alive");
    }
  } catch (const std::invalid_argument& e) {
    return bad(e.what(), "keep_alive");
  }
  return std::nullopt;
}

OllamaRequest translate_ollama_chat(const json& body) {
  OllamaRequest r;
  common_fields(body, r);
  if (r.error) return r;
  if (auto it = body.find("images"); it != body.end() && !it->is_null() && !(it->is_array() && it->empty())) {
    r.error = bad("/api/chat takes images in its messages ('messages[].images'), not beside them", "images");
    return r;
  }
  auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null() || (messages->is_array() && messages->empty())) {
    r.load_only = true;
    return r;
  }
  if (!messages->is_array()) {
    r.error = bad("'messages' must be an array", "messages");
    return r;
  }
  if (auto e = chat_messages(*messages, r.openai["messages"])) {
    r.error = e;
    return r;
  }
  if (auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) r.openai["tools"] = *tools;
  return r;
}

OllamaRequest translate_ollama_generate(const json& body) {
  OllamaRequest r;
  common_fields(body, r);
  if (r.error) return r;
  if (auto t = body.find("template"); t != body.end() && t->is_string() && !t->get<std::string>().empty()) {
    r.error = bad("a per-request 'template' (Go template syntax) is not supported; the model's chat template is used "
                  "(set chat_template_file in the model's NAME.toml to change it)",
                  "template");
    return r;
  }
  // images: before the prompt, through the chat template as the user
  // message's image parts; raw, as markers in the prompt and r.images.
  std::vector<std::string> images;
  json image_parts = json::array();
  const auto images_field = body.find("images");
  if (auto e = read_images(images_field != body.end() ? &*images_field : nullptr, "images", images, image_parts)) {
    r.error = e;
    return r;
  }
  auto prompt = body.find("prompt");
  if (auto s = body.find("suffix"); s != body.end() && !s->is_null()) {
    if (!s->is_string()) {
      r.error = bad("'suffix' must be a string", "suffix");
      return r;
    }
    if (!s->get<std::string>().empty() && !images.empty()) {
      r.error = bad("'images' cannot be combined with a 'suffix' (fill in the middle)", "images");
      return r;
    }
    if (!s->get<std::string>().empty()) {
      // Fill in the middle: the prompt is the code before the cursor (may be
      // empty), the suffix the code after it; no chat template, as Ollama's
      // FIM templates.
      if (prompt != body.end() && !prompt->is_null() && !prompt->is_string()) {
        r.error = bad("'prompt' must be a string", "prompt");
        return r;
      }
      r.completion = true;
      r.openai["prompt"] = prompt != body.end() && prompt->is_string() ? prompt->get<std::string>() : "";
      r.openai["suffix"] = *s;
      r.openai.erase("reasoning_format");
      return r;
    }
  }
  if (prompt == body.end() || prompt->is_null() || (prompt->is_string() && prompt->get<std::string>().empty())) {
    r.load_only = true;
    return r;
  }
  if (!prompt->is_string()) {
    r.error = bad("'prompt' must be a string", "prompt");
    return r;
  }
  bool raw = false;
  if (auto it = body.find("raw"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      r.error = bad("'raw' must be a boolean", "raw");
      return r;
    }
    raw = it->get<bool>();
  }
  if (raw) {
    if (r.openai.value("reasoning_format", "none") != "none") {
      r.error = bad("'think' true needs the model's chat template, which a raw prompt does not use", "think");
      return r;
    }
    r.completion = true;
    r.openai["prompt"] = images.empty() ? *prompt : json(image_markers(images.size()) + prompt->get<std::string>());
    r.images = std::move(images);
    return r;
  }
  json messages = json::array();
  if (auto sys = body.find("system"); sys != body.end() && !sys->is_null()) {
    if (!sys->is_string()) {
      r.error = bad("'system' must be a string", "system");
      return r;
    }
    if (!sys->get<std::string>().empty()) messages.push_back({{"role", "system"}, {"content", *sys}});
  }
  messages.push_back(
      {{"role", "user"}, {"content", images.empty() ? *prompt : content_with_images(std::move(image_parts), *prompt)}});
  r.openai["messages"] = std::move(messages);
  return r;
}

}  // namespace tc::server
