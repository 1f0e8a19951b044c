// Embeddings: POST /v1/embeddings (OpenAI's wire format), /api/embed and
// /api/embeddings (Ollama's). Each input is tokenized (BOS/EOS as the
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
#include "server/embedding_schema.h"
#include "server/generation_job.h"
#include "server/http/httplib_bridge.h"
#include "server/json_post_route.h"
#include "server/ollama_responses.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

using nlohmann::json;

enum class EmbeddingRoute { OpenAI, OllamaEmbed, OllamaEmbeddings };

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

// Runs every input through the engine, at most `window` queued at once.
// Fills `vectors` (pooled, not yet shaped) and the job's usage; the error
// otherwise (the client left: status 499, no body to send).
std::optional<ApiError> run_inputs(GenerationJob& job, const ServingModel& serving, model::Pooling pooling,
                                   std::vector<std::vector<text::TokenId>>& inputs,
                                   std::vector<std::vector<float>>& vectors) {
  const size_t n = inputs.size();
  const size_t window = static_cast<size_t>(std::max(1, serving.options.parallel));
  vectors.assign(n, {});
  std::vector<std::shared_ptr<runtime::RequestHandle>> running(n);
  size_t next = 0, n_done = 0;
  auto last_alive_check = runtime::Clock::now();
  runtime::StreamEvent ev;
  while (n_done < n) {
    // Keep up to `window` of this request's inputs queued or running; a
    // full queue only refuses the first (the others wait for our own).
    while (next < n && next - n_done < window) {
      runtime::GenerationRequest r;
      r.prompt = inputs[next];
      r.embedding = pooling;
      auto submitted = serving.engine->submit(std::move(r));
      if (submitted.status == runtime::SubmitStatus::QueueFull && next > n_done) break;
      if (submitted.status != runtime::SubmitStatus::Ok) return submit_error(submitted);
      inputs[next].clear();
      running[next] = submitted.handle;
      job.handles.push_back(std::move(submitted.handle));
      ++next;
    }
    if (runtime::Clock::now() - last_alive_check >= kAliveCheckInterval) {
      if (!http::request_client_connected()) {
        job.client_gone();
        return ApiError{499, "", "client disconnected", "", ""};
      }
      last_alive_check = runtime::Clock::now();
    }
    // Inputs finish in order of submission more or less; wait on the oldest.
    for (size_t i = n_done; i < next; ++i) {
      if (!running[i] || !running[i]->next(ev, i == n_done ? std::chrono::milliseconds(20)
                                                           : std::chrono::milliseconds(0))) {
        continue;
      }
      if (ev.kind == runtime::StreamEvent::Kind::Error) return ApiError{500, "server_error", ev.error, "", ""};
      if (ev.kind != runtime::StreamEvent::Kind::Finished) continue;
      if (ev.finish != runtime::FinishReason::Stop) {
        const bool cancelled = ev.finish == runtime::FinishReason::Cancelled;
        return ApiError{cancelled ? 503 : 500, cancelled ? "unavailable_error" : "server_error",
                        cancelled ? "the request was cancelled (server shutting down)" : "the embedding failed", "",
                        ""};
      }
      vectors[i] = std::move(ev.embedding);
      running[i].reset();
      job.usage.prompt_tokens += ev.usage.prompt_tokens;
      job.usage.cached_tokens += ev.usage.cached_tokens;
      job.record.generated = true;
      job.record.queue_seconds = std::max(job.record.queue_seconds, ev.queue_seconds);
      job.record.total_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - job.arrived).count();
    }
    while (n_done < next && !running[n_done]) ++n_done;
  }
  return std::nullopt;
}

void handle_embeddings(EmbeddingRoute route, ServerContext& ctx, const httplib::Request& req, ParsedBody parsed,
                       httplib::Response& res) {
  auto job = std::make_shared<GenerationJob>();
  job->ctx = &ctx;
  job->wire = route == EmbeddingRoute::OpenAI ? Wire::OpenAI : Wire::Ollama;
  job->route = canonical_route(req.path);
  job->meta.id = "embd-" + random_id(ctx);
  auto reject = [&](const ApiError& e) {
    job->status = e.status;
    job->error = e.message;
    if (e.status != 499) send_job_error(*job, res, e);
  };
  if (ctx.draining.load()) return reject({503, "unavailable_error", "the server is shutting down", "", ""});
  if (parsed.error) return reject(*parsed.error);
  const EmbeddingParse parse = route == EmbeddingRoute::OpenAI        ? parse_openai_embedding(parsed.json)
                               : route == EmbeddingRoute::OllamaEmbed ? parse_ollama_embed(parsed.json)
                                                                       : parse_ollama_embeddings(parsed.json);
  if (parse.error) return reject(*parse.error);
  const EmbeddingRequest& request = *parse.request;
  if (route != EmbeddingRoute::OpenAI && request.model.empty()) {
    return reject({400, "invalid_request_error", "model is required", "", "model"});
  }

  std::optional<ApiError> error;
  const std::string name = ctx.models->resolve(request.model, error);
  if (error) return reject(*error);
  job->meta.model = name;
  const auto wait_start = std::chrono::steady_clock::now();
  job->lease = ctx.models->acquire(name, request.keep_alive, error, http::request_client_connected,
                                   kClientCheckInterval);
  if (!job->lease) {
    return reject(registry_error(ctx, error.value_or(ApiError{503, "unavailable_error", "the model is not available", "", ""})));
  }
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  const ServingModel& serving = job->lease->model();
  if (auto err = unavailable(ctx, &serving)) return reject(*err);
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
  if (auto err = run_inputs(*job, serving, model_pooling(serving), inputs, vectors)) return reject(*err);
  for (auto& v : vectors) v = shape_embedding(std::move(v), request.dimensions, request.normalize);

  job->report();
  if (route == EmbeddingRoute::OpenAI) {
    return send_json(res, 200, openai_embedding_response(name, vectors, request.base64, job->usage.prompt_tokens));
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
                                    std::pair{"api/embeddings", EmbeddingRoute::OllamaEmbeddings}}) {
    post_json_route(http, route_pattern(path), ctx.options.max_body_bytes,
                    [&ctx, route](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                      handle_embeddings(route, ctx, req, std::move(body), res);
                    });
  }
}

}  // namespace tc::server
