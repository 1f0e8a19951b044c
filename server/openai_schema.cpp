// Parsing and validating OpenAI request bodies (see openai_schema.h).
#include "server/openai_schema.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "server/chat_prompt_variables.h"
#include "server/field_error.h"
#include "server/image_input.h"

namespace tc::server {
namespace {

using nlohmann::json;

// Thrown inside this file only; turned into Parsed::error at the boundary.
struct FieldError {
  ApiError error;
};

[[noreturn]] void fail(std::string message, std::string param) {
  throw FieldError{invalid_request(std::move(message), std::move(param))};
}

// The field's value, or nullptr when absent or null.
const json* find_field(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> read_number(const json& body, const char* key, double lo, double hi) {
  const json* v = find_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(std::string("'") + key + "' must be a number", key);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    fail(std::string("'") + key + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " + v->dump(),
         key);
  }
  return x;
}

std::optional<int64_t> read_integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json* v = find_field(body, key);
  if (!v) return std::nullopt;
  // 3.0 is accepted as 3 (JavaScript clients send floats), 3.5 is not.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
      const auto i = static_cast<int64_t>(d);
      if (i < lo || i > hi) {
        fail(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", key);
      }
      return i;
    }
    fail(std::string("'") + key + "' must be an integer", key);
  }
  if (!v->is_number_integer()) fail(std::string("'") + key + "' must be an integer", key);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", key);
  }
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) {
    fail(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
             std::to_string(i),
         key);
  }
  return i;
}

std::optional<bool> read_bool(const json& body, const char* key) {
  const json* v = find_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(std::string("'") + key + "' must be a boolean", key);
  return v->get<bool>();
}

std::optional<std::string> read_string(const json& body, const char* key) {
  const json* v = find_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(std::string("'") + key + "' must be a string", key);
  return v->get<std::string>();
}

std::vector<std::string> read_stop(const json& body, const RequestLimits& limits) {
  const json* v = find_field(body, "stop");
  std::vector<std::string> stops;
  if (!v) return stops;
  if (v->is_string()) {
    stops.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& s : *v) {
      if (!s.is_string()) fail("'stop' must be a string or an array of strings", "stop");
      stops.push_back(s.get<std::string>());
    }
  } else {
    fail("'stop' must be a string or an array of strings", "stop");
  }
  if (static_cast<int>(stops.size()) > limits.max_stop) {
    fail("'stop' may hold at most " + std::to_string(limits.max_stop) + " strings", "stop");
  }
  std::vector<std::string> kept;
  for (auto& s : stops) {
    if (static_cast<int>(s.size()) > limits.max_stop_bytes) {
      fail("each 'stop' string may be at most " + std::to_string(limits.max_stop_bytes) + " bytes", "stop");
    }
    if (!s.empty()) kept.push_back(std::move(s));  // OpenAI ignores empty stop strings
  }
  return kept;
}

void read_logit_bias(const json& body, const RequestLimits& limits, runtime::SamplingParams& sampling) {
  const json* v = find_field(body, "logit_bias");
  if (!v) return;
  if (!v->is_object()) fail("'logit_bias' must be an object mapping token ids to biases", "logit_bias");
  for (const auto& [key, bias] : v->items()) {
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0 || id < 0 || (limits.n_vocab > 0 && id >= limits.n_vocab)) {
      fail("'logit_bias' key '" + key + "' is not a token id in [0, " + std::to_string(limits.n_vocab) + ")",
           "logit_bias");
    }
    if (!bias.is_number() || !std::isfinite(bias.get<double>()) || bias.get<double>() < -100 ||
        bias.get<double>() > 100) {
      fail("'logit_bias' values must be numbers in [-100, 100]", "logit_bias");
    }
    sampling.logit_bias[static_cast<text::TokenId>(id)] = bias.get<float>();
  }
}

void check_object(const json& body) {
  if (!body.is_object()) fail("request body must be a JSON object", "");
}

// Fields common to both endpoints; `logprobs` differs and is read by each.
// llama-server's `samplers` (an extension): the order of the filter stages,
// as names or one character each (sampler_chain.h); what it leaves out is
// off, the penalties and DRY included. Read after every sampling field.
void read_sampler_order(const json& body, runtime::SamplingParams& s) {
  const json* field = find_field(body, "samplers");
  if (field == nullptr) return;
  runtime::SamplerList list;
  if (field->is_string()) {
    list = runtime::sampler_list_from_chars(field->get_ref<const std::string&>());
  } else if (field->is_array() &&
             std::all_of(field->begin(), field->end(), [](const json& x) { return x.is_string(); })) {
    std::vector<std::string_view> names;
    for (const auto& x : *field) names.push_back(x.get_ref<const std::string&>());
    list = runtime::sampler_list_from_names(names);
  } else {
    fail("'samplers' must be an array of sampler names or a string of sampler characters", "samplers");
  }
  runtime::use_sampler_list(std::move(list), s);
}

// response_format: absent, null or {"type": "text"}: free text;
// {"type": "json_object"}: JSON mode; {"type": "json_schema", "json_schema":
// {"name", "schema", "strict"}}: the reply follows the schema (its shape is
// checked here; the route compiles it from the request's text, which keeps
// the properties' order: response_schema.h).
void read_response_format(const json& body, CommonRequest& r) {
  const json* rf = find_field(body, "response_format");
  if (rf == nullptr) return;
  if (!rf->is_object()) fail("'response_format' must be an object", "response_format");
  const auto type = read_string(*rf, "type");
  if (!type) fail("'response_format' needs a 'type'", "response_format");
  if (*type == "text") return;
  if (*type == "json_object") {
    r.json_object = true;
    return;
  }
  if (*type == "json_schema") {
    const json* js = find_field(*rf, "json_schema");
    if (js == nullptr || !js->is_object()) fail("'response_format.json_schema' must be an object", "response_format");
    const json* name = find_field(*js, "name");
    const json* strict = find_field(*js, "strict");
    if ((name != nullptr && !name->is_string()) || (strict != nullptr && !strict->is_boolean())) {
      fail("'response_format.json_schema' has a 'name' that is not a string or a 'strict' that is not a boolean",
           "response_format");
    }
    const json* schema = find_field(*js, "schema");
    if (schema == nullptr || !schema->is_object()) {
      fail("'response_format.json_schema.schema' must be a JSON Schema object", "response_format");
    }
    r.json_schema = true;
    return;
  }
  fail("'response_format.type' must be 'text', 'json_object' or 'json_schema'", "response_format");
}

CommonRequest read_common(const json& body, const RequestLimits& limits) {
  CommonRequest r;
  if (auto model = read_string(body, "model")) r.model = *model;
  // Asked for (or the server's default) where the model can shift; where
  // it cannot, the request runs without it and only what needs the shift
  // (a max_tokens past the context) is refused, saying why.
  const bool wants_shift = read_bool(body, "context_shift").value_or(limits.context_shift);
  r.context_shift = wants_shift && limits.context_shift_refusal.empty();
  if (auto keep = read_integer(body, "n_keep", -1, std::numeric_limits<int32_t>::max())) {
    r.n_keep = static_cast<int32_t>(*keep);
  }
  if (auto draft = read_integer(body, "draft_max", 0, 256)) r.draft_max = static_cast<int32_t>(*draft);
  const int64_t cap = r.context_shift ? limits.max_tokens_cap_shifting : limits.max_tokens_cap;
  r.max_tokens = read_integer(body, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max());
  if (!r.max_tokens) r.max_tokens = read_integer(body, "max_tokens", 1, std::numeric_limits<int32_t>::max());
  if (r.max_tokens && *r.max_tokens > cap) {
    fail("'max_tokens' must be at most " + std::to_string(cap) + " on this server" +
             (wants_shift && !r.context_shift
                  ? " (context shift is not possible on this model: " + limits.context_shift_refusal + ")"
                  : std::string()),
         "max_tokens");
  }
  auto& s = r.sampling;
  if (auto t = read_number(body, "temperature", 0, 2)) s.temperature = static_cast<float>(*t);
  if (auto p = read_number(body, "top_p", 0, 1)) {
    if (*p <= 0) fail("'top_p' must be in (0, 1]", "top_p");
    s.top_p = static_cast<float>(*p);
  }
  if (auto k = read_integer(body, "top_k", -1, std::numeric_limits<int32_t>::max())) {
    s.top_k = static_cast<int32_t>(*k < 0 ? 0 : *k);
  }
  if (auto m = read_number(body, "min_p", 0, 1)) s.min_p = static_cast<float>(*m);
  // llama.cpp's XTC, an extension as in llama-server.
  if (auto x = read_number(body, "xtc_probability", 0, 1)) s.xtc_probability = static_cast<float>(*x);
  if (auto x = read_number(body, "xtc_threshold", 0, 1)) s.xtc_threshold = static_cast<float>(*x);
  // llama.cpp's top-n-sigma and dynamic temperature, extensions.
  if (auto n = read_number(body, "top_n_sigma", -1e6, 1e6)) s.top_n_sigma = static_cast<float>(*n);
  if (auto d = read_number(body, "dynatemp_range", 0, 100)) s.dynatemp_range = static_cast<float>(*d);
  if (auto d = read_number(body, "dynatemp_exponent", 0, 100)) s.dynatemp_exponent = static_cast<float>(*d);
  // llama.cpp's typical and mirostat samplers (Ollama's options too), extensions.
  if (auto t = read_number(body, "typical_p", 0, 1)) {
    if (*t <= 0) fail("'typical_p' must be in (0, 1]", "typical_p");
    s.typical_p = static_cast<float>(*t);
  }
  if (auto m = read_integer(body, "mirostat", 0, 2)) s.mirostat = static_cast<int32_t>(*m);
  if (auto m = read_number(body, "mirostat_tau", 0, 100)) s.mirostat_tau = static_cast<float>(*m);
  if (auto m = read_number(body, "mirostat_eta", 0, 100)) s.mirostat_eta = static_cast<float>(*m);
  // llama.cpp's DRY, an extension as in llama-server.
  if (auto d = read_number(body, "dry_multiplier", 0, 1000)) s.dry_multiplier = static_cast<float>(*d);
  if (auto d = read_number(body, "dry_base", 1, 1000)) s.dry_base = static_cast<float>(*d);
  if (auto d = read_integer(body, "dry_allowed_length", 0, 1 << 20)) s.dry_allowed_length = static_cast<int32_t>(*d);
  if (auto d = read_integer(body, "dry_penalty_last_n", -1, std::numeric_limits<int32_t>::max())) {
    s.dry_penalty_last_n = static_cast<int32_t>(*d);
  }
  if (const json* v = find_field(body, "dry_sequence_breakers")) {
    const char* kShape = "'dry_sequence_breakers' must be an array of at most 64 strings of at most 256 bytes";
    if (!v->is_array() || v->size() > tc::runtime::kMaxDryBreakers) fail(kShape, "dry_sequence_breakers");
    s.dry_sequence_breakers.clear();
    for (const auto& b : *v) {
      if (!b.is_string() || b.get<std::string>().size() > 256) fail(kShape, "dry_sequence_breakers");
      s.dry_sequence_breakers.push_back(b.get<std::string>());
    }
  }
  if (auto p = read_number(body, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*p);
  if (auto f = read_number(body, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*f);
  if (auto rp = read_number(body, "repeat_penalty", 0, 10)) {
    if (*rp <= 0) fail("'repeat_penalty' must be in (0, 10]", "repeat_penalty");
    s.repeat_penalty = static_cast<float>(*rp);
  }
  if (auto seed = read_integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    s.seed = static_cast<uint64_t>(*seed);
    r.has_seed = true;
  }
  if (auto n = read_integer(body, "n", 1, limits.max_n)) r.n = static_cast<int>(*n);
  r.stop = read_stop(body, limits);
  read_logit_bias(body, limits, s);
  read_sampler_order(body, s);
  r.stream = read_bool(body, "stream").value_or(false);
  if (const json* so = find_field(body, "stream_options")) {
    if (!so->is_object()) fail("'stream_options' must be an object", "stream_options");
    if (!r.stream) fail("'stream_options' is only allowed when 'stream' is true", "stream_options");
    r.include_usage = read_bool(*so, "include_usage").value_or(false);
  }
  r.ignore_eos = read_bool(body, "ignore_eos").value_or(false);
  read_response_format(body, r);
  if (auto grammar = read_string(body, "grammar")) {
    r.grammar = *grammar;
    if (!r.grammar.empty() && (r.json_object || r.json_schema)) {
      fail("'grammar' cannot be combined with a JSON response_format", "grammar");
    }
  }
  read_string(body, "user");  // type-checked, otherwise ignored
  return r;
}

std::vector<int32_t> read_token_array(const json& arr, const RequestLimits& limits) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const auto& t : arr) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || (limits.n_vocab > 0 && t.get<int64_t>() >= limits.n_vocab)) {
      fail("'prompt' token ids must be integers in [0, " + std::to_string(limits.n_vocab) + ")", "prompt");
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  if (ids.empty()) fail("'prompt' must not be an empty token array", "prompt");
  return ids;
}

void read_prompts(const json& body, const RequestLimits& limits, CompletionRequest& r) {
  const json* p = find_field(body, "prompt");
  if (!p) fail("'prompt' is required", "prompt");
  const char* kShape = "'prompt' must be a string, an array of strings, an array of token ids or an array of those";
  if (p->is_string()) {
    r.prompts.emplace_back(p->get<std::string>());
    return;
  }
  if (!p->is_array() || p->empty()) fail(kShape, "prompt");
  if ((*p)[0].is_number()) {
    r.prompts.emplace_back(read_token_array(*p, limits));
    return;
  }
  for (const auto& item : *p) {
    if (item.is_string()) {
      r.prompts.emplace_back(item.get<std::string>());
    } else if (item.is_array()) {
      r.prompts.emplace_back(read_token_array(item, limits));
    } else {
      fail(kShape, "prompt");
    }
  }
}

// An image_url part's image: {"url": "data:..."} (or the URL as a plain
// string, as some clients send it) -> its bytes in `images`; the text it
// stands for.
std::string_view read_image_part(const json& part, const std::string& where, std::vector<std::string>& images) {
  const json* image = find_field(part, "image_url");
  const json* url = image != nullptr && image->is_object() ? find_field(*image, "url") : image;
  if (url == nullptr || !url->is_string()) {
    fail("'" + where + ".image_url' must be an object with a string 'url' (a data: URL)", "messages");
  }
  if (images.size() >= kMaxRequestImages) fail_too_many_images("messages");
  images.push_back(image_bytes_from_url(url->get_ref<const std::string&>(),
                                        where + (image->is_object() ? ".image_url.url" : ".image_url")));
  return kImageMarker;
}

// A message's content as the template sees it: a string, or null (an
// assistant message carrying tool_calls). Image parts become kImageMarker
// and their bytes the next entries of `images`.
json normalise_content(const json& message, size_t index, std::vector<std::string>& images) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) {
    if (message.contains("tool_calls") && !message["tool_calls"].is_null()) return nullptr;
    fail("'" + where + "' is required", "messages");
  }
  if (it->is_string()) return *it;
  if (it->is_array()) {
    std::string text;
    for (size_t j = 0; j < it->size(); ++j) {
      const json& part = (*it)[j];
      if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
        fail("'" + where + "' parts must be objects with a 'type'", "messages");
      }
      if (!text.empty()) text += "\n";
      if (part["type"] == "image_url") {
        text += read_image_part(part, where + "[" + std::to_string(j) + "]", images);
        continue;
      }
      if (part["type"] != "text") {
        fail("'" + where + "' part type '" + part["type"].get<std::string>() + "' is not supported by this model",
             "messages");
      }
      if (!part.contains("text") || !part["text"].is_string()) {
        fail("'" + where + "' text parts need a string 'text'", "messages");
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  fail("'" + where + "' must be a string, an array of content parts or null", "messages");
}

// The messages normalised (normalise_content), their images' bytes in `images`.
json read_messages(const json& body, std::vector<std::string>& images) {
  const json* m = find_field(body, "messages");
  if (!m) fail("'messages' is required", "messages");
  if (!m->is_array()) fail("'messages' must be an array", "messages");
  if (m->empty()) fail("'messages' must not be empty", "messages");
  json out = json::array();
  for (size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) fail("'" + where + "' must be an object", "messages");
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) fail("'" + where + ".role' must be a string", "messages");
    static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool", "function"};
    bool known = false;
    for (const char* k : kRoles) known = known || *role == k;
    if (!known) {
      fail("'" + where + ".role' must be one of system, developer, user, assistant, tool, function", "messages");
    }
    json copy = msg;
    copy["content"] = normalise_content(msg, i, images);
    if (auto e = normalise_message_tool_calls(copy, i)) throw FieldError{*e};
    if (copy.contains("name") && !copy["name"].is_null() && !copy["name"].is_string()) {
      fail("'" + where + ".name' must be a string", "messages");
    }
    out.push_back(std::move(copy));
  }
  return out;
}

template <class T, class Fn>
Parsed<T> guarded(Fn&& fn) {
  Parsed<T> result;
  try {
    result.request = fn();
  } catch (const FieldError& e) {
    result.error = e.error;
  } catch (const BadField& e) {  // image_input.h's
    result.error = e.error;
  } catch (const nlohmann::json::exception& e) {
    result.error = invalid_request(std::string("invalid request: ") + e.what());
  }
  return result;
}

}  // namespace

ApiError invalid_request(std::string message, std::string param) {
  return {400, "invalid_request_error", std::move(message), "", std::move(param)};
}

Parsed<CompletionRequest> parse_completion_request(const json& body, const RequestLimits& limits) {
  return guarded<CompletionRequest>([&] {
    check_object(body);
    CompletionRequest r;
    r.common = read_common(body, limits);
    read_prompts(body, limits, r);
    r.echo = read_bool(body, "echo").value_or(false);
    // Fill in the middle: the prompt is the code before the cursor, the
    // suffix the code after it (fill_in_middle.h).
    if (auto suffix = read_string(body, "suffix")) r.suffix = std::move(*suffix);
    if (!r.suffix.empty() && r.echo) fail("'echo' cannot be combined with 'suffix'", "echo");
    // Legacy logprobs: an integer count of alternatives, 0..5 in OpenAI's API.
    if (auto lp = read_integer(body, "logprobs", 0, limits.max_top_logprobs)) {
      r.common.logprobs = true;
      r.common.sampling.n_probs = static_cast<int32_t>(*lp);
    }
    if (r.echo && r.common.logprobs) fail("'echo' together with 'logprobs' is not supported", "echo");
    if (static_cast<int64_t>(r.prompts.size()) * r.common.n > limits.max_n) {
      fail("the number of prompts times 'n' must be at most " + std::to_string(limits.max_n), "n");
    }
    return r;
  });
}

bool chat_body_has_images(const json& body) {
  const auto messages = body.find("messages");
  if (!body.is_object() || messages == body.end() || !messages->is_array()) return false;
  for (const json& message : *messages) {
    if (!message.is_object()) continue;
    const auto content = message.find("content");
    if (content == message.end() || !content->is_array()) continue;
    for (const json& part : *content) {
      if (part.is_object() && part.value("type", json()) == "image_url") return true;
    }
  }
  return false;
}

Parsed<ChatRequest> parse_chat_request(const json& body, const RequestLimits& limits) {
  return guarded<ChatRequest>([&] {
    check_object(body);
    ChatRequest r;
    r.common = read_common(body, limits);
    r.messages = read_messages(body, r.images);
    r.common.logprobs = read_bool(body, "logprobs").value_or(false);
    if (auto top = read_integer(body, "top_logprobs", 0, limits.max_top_logprobs)) {
      if (!r.common.logprobs) fail("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
      r.common.sampling.n_probs = static_cast<int32_t>(*top);
    }
    if (auto e = read_tool_request(body, r.tools)) throw FieldError{*e};
    if (r.tools.forced() && (r.common.json_object || r.common.json_schema)) {
      fail("a forced tool call ('tool_choice') cannot be combined with a JSON response_format", "tool_choice");
    }
    if (r.tools.forced() && !r.common.grammar.empty()) {
      fail("a forced tool call ('tool_choice') cannot be combined with a 'grammar'", "tool_choice");
    }
    if (auto agp = read_bool(body, "add_generation_prompt")) r.add_generation_prompt = *agp;
    if (auto truncate = read_bool(body, "truncate")) r.truncate = *truncate;
    if (const json* kwargs = find_field(body, "chat_template_kwargs")) {
      if (!kwargs->is_object()) fail("'chat_template_kwargs' must be an object", "chat_template_kwargs");
      for (const std::string_view own : kRequestTemplateVariables) {
        if (kwargs->contains(own)) {
          fail("'chat_template_kwargs' cannot set '" + std::string(own) + "': the request's own fields do",
               "chat_template_kwargs");
        }
      }
      r.template_kwargs = *kwargs;
    }
    // OpenAI's reasoning_effort reaches templates that read it (gpt-oss's
    // "Reasoning: low|medium|high") as a template variable, unless
    // chat_template_kwargs sets one itself.
    if (auto effort = read_string(body, "reasoning_effort")) {
      if (*effort != "minimal" && *effort != "low" && *effort != "medium" && *effort != "high") {
        fail("'reasoning_effort' must be \"minimal\", \"low\", \"medium\" or \"high\"", "reasoning_effort");
      }
      if (!r.template_kwargs.is_object()) r.template_kwargs = nlohmann::json::object();
      if (!r.template_kwargs.contains("reasoning_effort")) r.template_kwargs["reasoning_effort"] = *effort;
    }
    if (auto format = read_string(body, "reasoning_format")) {
      if (*format != "auto" && *format != "deepseek" && *format != "none") {
        fail("'reasoning_format' must be \"auto\", \"deepseek\" or \"none\"", "reasoning_format");
      }
      r.reasoning_format = *format;
    }
    return r;
  });
}

}  // namespace tc::server
