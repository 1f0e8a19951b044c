// llama.cpp's /completion and /infill bodies as /v1/completions bodies (see
// llamacpp_schema.h).
#include "server/llamacpp_schema.h"

#include <string>

#include "server/field_error.h"
#include "server/image_input.h"

namespace tc::server {
namespace {

using nlohmann::json;

// A field that is missing or of the wrong shape: the 400 to answer.
[[noreturn]] void fail(const std::string& message, const std::string& param) { fail_field(message, param); }

// llama.cpp's server sampling defaults, for fields the body leaves out.
const json& llamacpp_defaults() {
  static const json kDefaults = {{"temperature", 0.8}, {"top_k", 40}, {"top_p", 0.95}, {"min_p", 0.05}};
  return kDefaults;
}

// llama.cpp's logit_bias: [[id, bias], ...] (a bias of false bans the token)
// or {"id": bias}; ours is the object.
json logit_bias(const json& value) {
  if (value.is_object()) return value;
  const char* kShape = "'logit_bias' must be an object of token ids or an array of [token id, bias] pairs";
  if (!value.is_array()) fail(kShape, "logit_bias");
  json out = json::object();
  for (const json& pair : value) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer()) fail(kShape, "logit_bias");
    const json& bias = pair[1];
    if (!bias.is_number() && !(bias.is_boolean() && !bias.get<bool>())) fail(kShape, "logit_bias");
    out[std::to_string(pair[0].get<int64_t>())] = bias.is_boolean() ? json(-100) : bias;
  }
  return out;
}

// The fields both routes share, as /v1/completions names them.
LlamaCppRequest common_fields(const json& body) {
  if (!body.is_object()) fail("request body must be a JSON object", "");
  LlamaCppRequest r;
  json& o = r.openai;
  o = llamacpp_defaults();
  for (const char* key : {"model", "temperature", "top_k", "top_p", "min_p", "typical_p", "mirostat", "mirostat_tau",
                          "mirostat_eta", "top_n_sigma", "dynatemp_range", "dynatemp_exponent", "xtc_probability",
                          "xtc_threshold",
                          "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n",
                          "dry_sequence_breakers", "seed", "stop", "repeat_penalty", "presence_penalty",
                          "frequency_penalty", "stream", "ignore_eos", "max_tokens", "n_keep", "samplers"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) o[key] = *it;
  }
  if (auto it = body.find("model"); it != body.end() && it->is_string()) r.model = it->get<std::string>();
  if (auto it = body.find("stream"); it != body.end() && it->is_boolean()) r.stream = it->get<bool>();
  if (auto it = body.find("n_predict"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1) fail("'n_predict' must be an integer >= -1", "n_predict");
    r.n_predict = it->get<int64_t>();
    if (r.n_predict >= 0) o["max_tokens"] = r.n_predict;  // -1: up to the context
  }
  if (auto it = body.find("n_probs"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) fail("'n_probs' must be an integer >= 0", "n_probs");
    if (it->get<int64_t>() > 0) o["logprobs"] = *it;
  }
  if (auto it = body.find("repeat_last_n"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || it->get<int64_t>() > INT32_MAX) {
      fail("'repeat_last_n' must be an integer >= -1", "repeat_last_n");
    }
    r.repeat_last_n = static_cast<int32_t>(it->get<int64_t>());
  }
  if (auto it = body.find("logit_bias"); it != body.end() && !it->is_null()) o["logit_bias"] = logit_bias(*it);
  const auto grammar = body.find("grammar");
  const bool has_grammar = grammar != body.end() && grammar->is_string() && !grammar->get<std::string>().empty();
  if (grammar != body.end() && !grammar->is_null()) {
    if (!grammar->is_string()) fail("'grammar' must be a string (GBNF)", "grammar");
    o["grammar"] = *grammar;
  }
  if (auto it = body.find("json_schema"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) fail("'json_schema' must be an object (a JSON Schema)", "json_schema");
    // With both, llama-server follows the grammar; so does this.
    if (!has_grammar) {
      o["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "json_schema"}, {"schema", *it}}}};
    }
  }
  return r;
}

std::string required_string(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) fail(std::string("'") + key + "' is required", key);
  if (!it->is_string()) fail(std::string("'") + key + "' must be a string", key);
  return it->get<std::string>();
}

}  // namespace

LlamaCppRequest translate_llamacpp_completion(const json& body) {
  return translated<LlamaCppRequest>([&] {
    LlamaCppRequest r = common_fields(body);
    auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) fail("'prompt' is required", "prompt");
    const json& prompt = *it;
    // One prompt; llama-server's object form in a one-element array too.
    const json& one = prompt.is_array() && prompt.size() == 1 && prompt[0].is_object() ? prompt[0] : prompt;
    if (one.is_object()) {
      const auto text = one.find("prompt_string");
      if (text == one.end() || !text->is_string()) fail("'prompt.prompt_string' must be a string", "prompt");
      r.openai["prompt"] = *text;
      if (const auto data = one.find("multimodal_data"); data != one.end() && !data->is_null()) {
        if (!data->is_array()) fail("'prompt.multimodal_data' must be an array of base64 strings", "prompt");
        for (size_t i = 0; i < data->size(); ++i) {
          const std::string where = "prompt.multimodal_data[" + std::to_string(i) + "]";
          if (!(*data)[i].is_string()) fail("'" + where + "' must be a base64 string", "prompt");
          if (r.images.size() >= kMaxRequestImages) fail_too_many_images("prompt");
          r.images.push_back(image_bytes_from_base64((*data)[i].get<std::string>(), where));
        }
      }
    } else if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
      r.openai["prompt"] = prompt[0];
    } else if (prompt.is_string() || (prompt.is_array() && !prompt.empty() && prompt[0].is_number_integer())) {
      r.openai["prompt"] = prompt;  // /v1/completions' parser checks the ids
    } else {
      fail("'prompt' must be a string, an array of token ids or {\"prompt_string\", \"multimodal_data\"} "
           "(one prompt per request)",
           "prompt");
    }
    return r;
  });
}

LlamaCppRequest translate_llamacpp_infill(const json& body) {
  return translated<LlamaCppRequest>([&] {
    LlamaCppRequest r = common_fields(body);
    r.openai["prompt"] = "";  // the FIM prompt is built apart
    FimInput& in = r.fim;
    in.repo_level = true;
    in.prefix = required_string(body, "input_prefix");
    in.suffix = required_string(body, "input_suffix");
    if (auto it = body.find("prompt"); it != body.end() && !it->is_null()) {
      if (!it->is_string()) fail("'prompt' must be a string", "prompt");
      in.middle_start = it->get<std::string>();
    }
    if (auto it = body.find("input_extra"); it != body.end() && !it->is_null()) {
      const char* kShape = "'input_extra' must be an array of {\"filename\": string, \"text\": string}";
      if (!it->is_array()) fail(kShape, "input_extra");
      for (const json& chunk : *it) {
        if (!chunk.is_object() || !chunk.contains("text") || !chunk["text"].is_string()) fail(kShape, "input_extra");
        FimFile file{"tmp", chunk["text"].get<std::string>()};
        if (auto name = chunk.find("filename"); name != chunk.end() && !name->is_null()) {
          if (!name->is_string()) fail(kShape, "input_extra");
          file.filename = name->get<std::string>();
        }
        in.extra.push_back(std::move(file));
      }
    }
    return r;
  });
}

}  // namespace tc::server
