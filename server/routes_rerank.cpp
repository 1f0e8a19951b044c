// Reranking: POST /v1/rerank (also /rerank, /v1/reranking, /reranking), as
// llama-server serves it: each (query, document) pair runs through a
// reranker (rank pooling with a classification head: a BERT cross-encoder,
// or Qwen3-Reranker with its rerank prompt template) as one engine request,
// the pairs batched with whatever else runs; the documents come back best
// first with their scores (the head's first output: a cross-encoder's
// logit, Qwen3-Reranker's P(yes)), cut to top_n. A model without such a head is a 400 naming
// it. Every 4xx comes before the work starts; a client that leaves cancels
// what is queued.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/embedding_runs.h"
#include "server/generation_job.h"
#include "server/http/httplib_bridge.h"
#include "server/json_post_route.h"
#include "server/rerank_schema.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

void handle_rerank(ServerContext& ctx, const httplib::Request& req, ParsedBody parsed, httplib::Response& res) {
  const EmbeddingJobStart start = start_embedding_job(ctx, req, parsed, Wire::OpenAI, "rerank-");
  const auto& job = start.job;
  auto reject = [&](const ApiError& e) { reject_job(*job, res, e); };
  if (start.error) return reject(*start.error);
  const RerankParse parse = parse_rerank(parsed.json);
  if (parse.error) return reject(*parse.error);
  const RerankRequest& request = *parse.request;
  if (auto err = lease_for_job(ctx, *job, request.model, request.keep_alive)) return reject(*err);
  const std::string& name = job->meta.model;
  const ServingModel& serving = job->lease->model();
  const model::ModelSpec& spec = serving.model->spec;
  if (spec.pooling != model::Pooling::Rank || spec.n_cls_out == 0) {
    return reject({400, "invalid_request_error",
                   "model '" + name + "' (" + spec.arch +
                       ") is not a reranker: it has no classification head (a cross-encoder file with rank pooling "
                       "ranks documents)",
                   "model_not_reranker", "model"});
  }
  std::vector<std::vector<text::TokenId>> inputs;
  const int64_t n_ctx = serving.engine->n_ctx();
  const std::string rerank_template = serving.model->file.get_string("tokenizer.chat_template.rerank", "");
  for (size_t i = 0; i < request.documents.size(); ++i) {
    auto ids = rerank_pair_tokens(*serving.model->tokenizer, request.query, request.documents[i], rerank_template);
    if (static_cast<int64_t>(ids.size()) > n_ctx) {
      const char* key = request.tei ? "texts" : "documents";
      return reject({400, "invalid_request_error",
                     "the query with document " + std::to_string(i) + " is " + std::to_string(ids.size()) +
                         " tokens; this model's context is " + std::to_string(n_ctx) + " tokens",
                     "context_length_exceeded", key});
    }
    inputs.push_back(std::move(ids));
  }
  std::vector<std::vector<float>> outputs;
  if (auto err = run_embedding_inputs(*job, serving, model::Pooling::Rank, inputs, outputs)) return reject(*err);
  std::vector<float> scores;
  for (const auto& o : outputs) scores.push_back(o.empty() ? 0.0f : o[0]);
  job->report();
  send_json(res, 200, rerank_response(request, name, scores, job->usage.prompt_tokens));
}

}  // namespace

void install_rerank_routes(httplib::Server& http, ServerContext& ctx) {
  for (const char* path : {"rerank", "reranking"}) {
    post_json_route(http, route_pattern(path), ctx.options.max_body_bytes,
                    [&ctx](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                      handle_rerank(ctx, req, std::move(body), res);
                    });
  }
}

}  // namespace tc::server
