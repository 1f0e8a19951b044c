// The embedding routes' wire formats: POST /v1/embeddings (OpenAI's), and
// Ollama's /api/embed and older /api/embeddings, parsed into one request,
// and the vectors written back (normalised, cut to `dimensions`, as floats
// or base64). No HTTP here, so it is unit-tested directly.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/keep_alive.h"
#include "server/openai_errors.h"

namespace tc::server {

// Inputs per request at most (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingRequest {
  std::string model;  // as sent; empty when absent
  // One entry per input: text, or token ids (OpenAI only; not range-checked here).
  std::vector<std::variant<std::string, std::vector<int32_t>>> inputs;
  std::optional<int64_t> dimensions;  // keep the first this many values (>= 1; checked against n_embd later)
  bool base64 = false;      // OpenAI encoding_format "base64": little-endian f32 bytes, base64
  bool normalize = true;    // unit L2 norm (OpenAI, /api/embed); /api/embeddings returns the raw pool
  bool truncate = false;    // an input past the context is cut to it (Ollama's truncate) instead of a 400
  std::optional<config::KeepAlive> keep_alive;  // Ollama
};

struct EmbeddingParse {
  std::optional<EmbeddingRequest> request;
  std::optional<ApiError> error;  // a 400 naming the field
};

// OpenAI: `input` (a string, strings, token ids or arrays of them; none
// empty), `model`, `encoding_format` ("float" or "base64"), `dimensions`, `user`.
EmbeddingParse parse_openai_embedding(const nlohmann::json& body);
// Ollama /api/embed: `input` (a string or strings; absent or empty: load
// the model only), `truncate` (default true), `dimensions`, `keep_alive`,
// `options` (load-time options, ignored per request).
EmbeddingParse parse_ollama_embed(const nlohmann::json& body);
// Ollama /api/embeddings: `prompt` (absent or empty: load only), not normalised.
EmbeddingParse parse_ollama_embeddings(const nlohmann::json& body);
// Hugging Face TEI's POST /embed: `inputs` (a string, strings, token ids or
// arrays of them; none empty), `normalize` (default true), `truncate`
// (default false), `dimensions`; answered as a bare array of vectors.
EmbeddingParse parse_tei_embed(const nlohmann::json& body);
// llama-server's legacy POST /embedding: `content` (or `input`; as `input`
// above), `embd_normalize` (2: unit L2 norm, the default; -1: none; other
// norms are a 400); answered as [{"index", "embedding": [vector]}].
EmbeddingParse parse_llamacpp_embedding(const nlohmann::json& body);

// A pooled vector as the request asked: its first `dimensions` values, then
// scaled to unit L2 norm when `normalize` (a zero vector stays zero).
std::vector<float> shape_embedding(std::vector<float> pooled, std::optional<int64_t> dimensions, bool normalize);

// The floats' little-endian IEEE-754 bytes in base64 (RFC 4648, padded), as
// OpenAI's encoding_format "base64" sends them.
std::string base64_floats(std::span<const float> values);

// OpenAI's response: {"object": "list", "data": [{"object": "embedding",
// "index", "embedding"}], "model", "usage": {"prompt_tokens", "total_tokens"}}.
nlohmann::json openai_embedding_response(const std::string& model, const std::vector<std::vector<float>>& vectors,
                                         bool base64, int64_t prompt_tokens);

}  // namespace tc::server
