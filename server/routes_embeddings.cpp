// Embeddings: POST /v1/embeddings (OpenAI's wire format), /api/embed and
// /api/embeddings (Ollama's), /embed (Hugging Face TEI's), /embedding
// (llama-server's legacy form). Each input is tokenized (BOS/EOS as the
// vocabulary says, special-token texts parsed) and runs through the leased
// model as an engine embedding request, batched with whatever else runs;
// the output-normed hidden states are pooled (the model's `pooling` option:
// last, mean or cls), cut to `dimensions` and normalised. At most the
// model's slot count of one request's inputs are queued at once, so a
// request of 2048 inputs never fills the engine's queue. Every 4xx comes
// before the work starts; a client that leaves cancels what is queued.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"
#include "server/embedding_runs.h"
#include "server/embedding_schema.h"
#include "server/generation_job.h"
#include "server/http/httplib_bridge.h"
#include "server/json_post_route.h"
#include "server/ollama_responses.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

using nlohmann::json;

enum class EmbeddingRoute { OpenAI, OllamaEmbed, OllamaEmbeddings, Tei, LlamaCpp };

// The pooling a model's embeddings use: its `pooling` option, or the file's.
model::Pooling model_pooling(const ServingModel& serving) {
  model::Pooling p = serving.model->spec.pooling;
  if (serving.options.pooling != "auto") model::parse_pooling(serving.options.pooling, p);
  return p == model::Pooling::Rank ? model::Pooling::Cls : p;  // a reranker's embedding: its first token's row
}

// Each input's token ids, checked against the model: the 400 otherwise.
std::optional<ApiError> tokenize_inputs(const EmbeddingRequest& request, const ServingModel& serving,
                                        std::vector<std::vector<text::TokenId>>& out) {
  const auto& tokenizer = *serving.model->tokenizer;
  const auto n_vocab = serving.model->spec.n_vocab;
  const int64_t n_ctx = serving.engine->n_ctx();
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    std::vector<text::TokenId> ids;
    if (const auto* text = std::get_if<std::string>(&request.inputs[i])) {
      text::EncodeOptions encode;
      encode.parse_special = true;
      ids = tokenizer.encode(*text, encode);
    } else {
      const auto& given = std::get<std::vector<int32_t>>(request.inputs[i]);
      ids.assign(given.begin(), given.end());
      for (const auto id : ids) {
        if (id >= n_vocab) {
          return ApiError{400, "invalid_request_error",
                          "input " + std::to_string(i) + " holds token id " + std::to_string(id) +
                              ", out of range [0, " + std::to_string(n_vocab) + ")",
                          "", "input"};
        }
      }
    }
    if (ids.empty()) {
      return ApiError{400, "invalid_request_error", "input " + std::to_string(i) + " has no tokens", "", "input"};
    }
    if (static_cast<int64_t>(ids.size()) > n_ctx) {
      if (!request.truncate) {
        return ApiError{400, "invalid_request_error",
                        "input " + std::to_string(i) + " has " + std::to_string(ids.size()) +
                            " tokens; this model's context is " + std::to_string(n_ctx) + " tokens",
                        "context_length_exceeded", "input"};
      }
      ids.resize(static_cast<size_t>(n_ctx));
    }
    out.push_back(std::move(ids));
  }
  return std::nullopt;
}

void handle_embeddings(EmbeddingRoute route, ServerContext& ctx, const httplib::Request& req, ParsedBody parsed,
                       httplib::Response& res) {
  const bool ollama = route == EmbeddingRoute::OllamaEmbed || route == EmbeddingRoute::OllamaEmbeddings;
  const EmbeddingJobStart start = start_embedding_job(ctx, req, parsed, ollama ? Wire::Ollama : Wire::OpenAI, "embd-");
  const auto& job = start.job;
  auto reject = [&](const ApiError& e) { reject_job(*job, res, e); };
  if (start.error) return reject(*start.error);
  const EmbeddingParse parse = route == EmbeddingRoute::OpenAI        ? parse_openai_embedding(parsed.json)
                               : route == EmbeddingRoute::Tei         ? parse_tei_embed(parsed.json)
                               : route == EmbeddingRoute::LlamaCpp    ? parse_llamacpp_embedding(parsed.json)
                               : route == EmbeddingRoute::OllamaEmbed ? parse_ollama_embed(parsed.json)
                                                                       : parse_ollama_embeddings(parsed.json);
  if (parse.error) return reject(*parse.error);
  const EmbeddingRequest& request = *parse.request;
  if (ollama && request.model.empty()) {
    return reject({400, "invalid_request_error", "model is required", "", "model"});
  }

  const auto wait_start = std::chrono::steady_clock::now();
  if (auto err = lease_for_job(ctx, *job, request.model, request.keep_alive)) return reject(*err);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  const std::string& name = job->meta.model;
  const ServingModel& serving = job->lease->model();
  const int64_t n_embd = serving.model->spec.n_embd;
  if (request.dimensions && *request.dimensions > n_embd) {
    return reject({400, "invalid_request_error",
                   "'dimensions' is " + std::to_string(*request.dimensions) + "; this model's embeddings have " +
                       std::to_string(n_embd),
                   "", "dimensions"});
  }
  std::vector<std::vector<text::TokenId>> inputs;
  if (auto err = tokenize_inputs(request, serving, inputs)) return reject(*err);
  std::vector<std::vector<float>> vectors;
  if (auto err = run_embedding_inputs(*job, serving, model_pooling(serving), inputs, vectors)) return reject(*err);
  for (auto& v : vectors) v = shape_embedding(std::move(v), request.dimensions, request.normalize);

  job->report();
  if (route == EmbeddingRoute::OpenAI) {
    return send_json(res, 200, openai_embedding_response(name, vectors, request.base64, job->usage.prompt_tokens));
  }
  if (route == EmbeddingRoute::Tei) return send_json(res, 200, json(vectors));
  if (route == EmbeddingRoute::LlamaCpp) {  // each input's pooled vector, as a list of one (llama-server's shape)
    json out = json::array();
    for (size_t i = 0; i < vectors.size(); ++i) out.push_back({{"index", i}, {"embedding", json::array({vectors[i]})}});
    return send_json(res, 200, out);
  }
  if (route == EmbeddingRoute::OllamaEmbeddings) {
    return send_json(res, 200, {{"embedding", vectors.empty() ? json::array() : json(vectors[0])}});
  }
  const auto to_ns = [](double s) { return static_cast<int64_t>(s * 1e9); };
  send_json(res, 200,
            {{"model", name},
             {"embeddings", vectors.empty() ? json::array() : json(vectors)},
             {"total_duration", to_ns(std::chrono::duration<double>(std::chrono::steady_clock::now() - job->arrived).count())},
             {"load_duration", to_ns(load_seconds)},
             {"prompt_eval_count", job->usage.prompt_tokens}});
}

}  // namespace

void install_embedding_routes(httplib::Server& http, ServerContext& ctx) {
  for (const auto& [path, route] : {std::pair{"embeddings", EmbeddingRoute::OpenAI},
                                    std::pair{"api/embed", EmbeddingRoute::OllamaEmbed},
                                    std::pair{"api/embeddings", EmbeddingRoute::OllamaEmbeddings},
                                    std::pair{"embed", EmbeddingRoute::Tei},
                                    std::pair{"embedding", EmbeddingRoute::LlamaCpp}}) {
    post_json_route(http, route_pattern(path), ctx.options.max_body_bytes,
                    [&ctx, route](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                      handle_embeddings(route, ctx, req, std::move(body), res);
                    });
  }
}

}  // namespace tc::server
