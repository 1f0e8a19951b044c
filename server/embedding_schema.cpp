// The embedding routes' wire formats (see embedding_schema.h).
#include "server/embedding_schema.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "server/ollama_schema.h"

namespace tc::server {
namespace {

using nlohmann::json;

// A 400 thrown by the readers below and caught by the parse functions.
struct BadField : std::runtime_error {
  BadField(const std::string& message, std::string field) : std::runtime_error(message), param(std::move(field)) {}
  std::string param;
};

const json* field(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::vector<int32_t> token_ids(const json& arr) {
  std::vector<int32_t> ids;
  for (const auto& t : arr) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      throw BadField("'input' token ids must be non-negative integers", "input");
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  if (ids.empty()) throw BadField("'input' must not hold an empty token array", "input");
  return ids;
}

std::string text_input(const json& s, bool allow_empty) {
  std::string text = s.get<std::string>();
  if (text.empty() && !allow_empty) throw BadField("'input' must not hold an empty string", "input");
  return text;
}

// `input` as OpenAI sends it, or Ollama's (strings only, empty ones allowed
// and skipped: an empty list loads the model only).
void read_inputs(const json* input, bool openai, EmbeddingRequest& r) {
  const char* shape = openai ? "'input' must be a string, an array of strings, an array of token ids or an "
                               "array of token-id arrays"
                             : "'input' must be a string or an array of strings";
  if (input == nullptr) {
    if (openai) throw BadField("'input' is required", "input");
    return;
  }
  if (input->is_string()) {
    std::string text = text_input(*input, !openai);
    if (!text.empty()) r.inputs.emplace_back(std::move(text));
    return;
  }
  if (!input->is_array()) throw BadField(shape, "input");
  if (input->empty()) {
    if (openai) throw BadField("'input' must not be an empty array", "input");
    return;
  }
  if (input->size() > kMaxEmbeddingInputs) {
    throw BadField("'input' holds " + std::to_string(input->size()) + " inputs; at most " +
                       std::to_string(kMaxEmbeddingInputs) + " per request",
                   "input");
  }
  if (openai && (*input)[0].is_number()) {
    r.inputs.emplace_back(token_ids(*input));
    return;
  }
  for (const auto& item : *input) {
    if (item.is_string()) {
      std::string text = text_input(item, !openai);
      if (!text.empty()) r.inputs.emplace_back(std::move(text));
    } else if (openai && item.is_array()) {
      r.inputs.emplace_back(token_ids(item));
    } else {
      throw BadField(shape, "input");
    }
  }
}

void read_model(const json& body, EmbeddingRequest& r, bool ollama_name) {
  for (const char* key : {"model", "name"}) {
    if (!ollama_name && std::strcmp(key, "name") == 0) break;
    if (const json* m = field(body, key)) {
      if (!m->is_string()) throw BadField(std::string("'") + key + "' must be a string", key);
      r.model = m->get<std::string>();
      return;
    }
  }
}

void read_dimensions(const json& body, EmbeddingRequest& r) {
  if (const json* d = field(body, "dimensions")) {
    if (!d->is_number() || (d->is_number_float() && std::floor(d->get<double>()) != d->get<double>()) ||
        d->get<double>() < 1) {
      throw BadField("'dimensions' must be a positive integer", "dimensions");
    }
    r.dimensions = static_cast<int64_t>(d->get<double>());
  }
}

template <class Read>
EmbeddingParse parse(const json& body, Read&& read) {
  EmbeddingParse out;
  if (!body.is_object()) {
    out.error = ApiError{400, "invalid_request_error", "request body must be a JSON object", "", ""};
    return out;
  }
  try {
    EmbeddingRequest r;
    read(r);
    out.request = std::move(r);
  } catch (const BadField& e) {
    out.error = ApiError{400, "invalid_request_error", e.what(), "", e.param};
  }
  return out;
}

// OpenAI's `input` rules for the field `key` (TEI's `inputs`, llama-server's
// `content`), its errors naming that field.
void read_inputs_as(const json& body, const char* key, EmbeddingRequest& r) {
  try {
    read_inputs(field(body, key), true, r);
  } catch (const BadField& e) {
    std::string message = e.what();
    if (const auto at = message.find("'input'"); at != std::string::npos) {
      message.replace(at, 7, "'" + std::string(key) + "'");
    }
    throw BadField(message, key);
  }
}

// Ollama's fields both routes share.
void read_ollama_common(const json& body, EmbeddingRequest& r) {
  read_model(body, r, true);
  if (auto err = parse_keep_alive_field(body, r.keep_alive)) throw BadField(err->message, "keep_alive");
  if (const json* o = field(body, "options"); o != nullptr && !o->is_object()) {
    throw BadField("'options' must be an object", "options");
  }
}

}  // namespace

EmbeddingParse parse_openai_embedding(const json& body) {
  return parse(body, [&](EmbeddingRequest& r) {
    read_model(body, r, false);
    read_inputs(field(body, "input"), true, r);
    if (const json* f = field(body, "encoding_format")) {
      if (!f->is_string() || (*f != "float" && *f != "base64")) {
        throw BadField("'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
      }
      r.base64 = *f == "base64";
    }
    read_dimensions(body, r);
    if (const json* u = field(body, "user"); u != nullptr && !u->is_string()) {
      throw BadField("'user' must be a string", "user");
    }
  });
}

EmbeddingParse parse_ollama_embed(const json& body) {
  return parse(body, [&](EmbeddingRequest& r) {
    read_ollama_common(body, r);
    read_inputs(field(body, "input"), false, r);
    r.truncate = true;
    if (const json* t = field(body, "truncate")) {
      if (!t->is_boolean()) throw BadField("'truncate' must be a boolean", "truncate");
      r.truncate = t->get<bool>();
    }
    read_dimensions(body, r);
  });
}

EmbeddingParse parse_ollama_embeddings(const json& body) {
  return parse(body, [&](EmbeddingRequest& r) {
    read_ollama_common(body, r);
    if (const json* p = field(body, "prompt")) {
      if (!p->is_string()) throw BadField("'prompt' must be a string", "prompt");
      if (!p->get<std::string>().empty()) r.inputs.emplace_back(p->get<std::string>());
    }
    r.normalize = false;
    r.truncate = true;
  });
}

EmbeddingParse parse_tei_embed(const json& body) {
  return parse(body, [&](EmbeddingRequest& r) {
    read_model(body, r, false);
    read_inputs_as(body, "inputs", r);
    for (const char* key : {"normalize", "truncate"}) {
      if (const json* b = field(body, key)) {
        if (!b->is_boolean()) throw BadField(std::string("'") + key + "' must be a boolean", key);
        (std::string(key) == "normalize" ? r.normalize : r.truncate) = b->get<bool>();
      }
    }
    read_dimensions(body, r);
  });
}

EmbeddingParse parse_llamacpp_embedding(const json& body) {
  return parse(body, [&](EmbeddingRequest& r) {
    read_model(body, r, false);
    const char* key = field(body, "input") != nullptr ? "input" : "content";
    if (field(body, key) == nullptr) throw BadField("'content' (or 'input') is required", "content");
    read_inputs_as(body, key, r);
    if (const json* n = field(body, "embd_normalize")) {
      if (!n->is_number_integer() || (n->get<int64_t>() != 2 && n->get<int64_t>() != -1)) {
        throw BadField("'embd_normalize' must be 2 (Euclidean) or -1 (none); other norms are not supported",
                       "embd_normalize");
      }
      r.normalize = n->get<int64_t>() == 2;
    }
  });
}

std::vector<float> shape_embedding(std::vector<float> pooled, std::optional<int64_t> dimensions, bool normalize) {
  if (dimensions && *dimensions < static_cast<int64_t>(pooled.size())) pooled.resize(static_cast<size_t>(*dimensions));
  if (!normalize) return pooled;
  double sum = 0;
  for (const float v : pooled) sum += static_cast<double>(v) * v;
  if (sum <= 0) return pooled;
  const double inv = 1.0 / std::sqrt(sum);
  for (float& v : pooled) v = static_cast<float>(v * inv);
  return pooled;
}

std::string base64_floats(std::span<const float> values) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(values.size() * sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<size_t>(b)] = static_cast<unsigned char>(bits >> (8 * b));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = static_cast<uint32_t>(bytes[i]) << 16;
    if (n > 1) group |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (n > 2) group |= bytes[i + 2];
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

json openai_embedding_response(const std::string& model, const std::vector<std::vector<float>>& vectors, bool base64,
                               int64_t prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", base64 ? json(base64_floats(vectors[i])) : json(vectors[i])}});
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace tc::server
