// The embedding-shaped requests' common steps (POST /v1/embeddings,
// Ollama's embed routes, /v1/rerank): the job, its model's lease, and the
// token inputs run as engine embedding requests, batched with whatever else
// runs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "engine/text/vocab.h"
#include "config/keep_alive.h"
#include "server/generation_job.h"
#include "server/request_body.h"
#include "server/openai_errors.h"

namespace tc::server {

// A job for `req` (its wire format, route and an id of `id_prefix` and
// random_id), or the error to answer: the server is shutting down, or the
// body did not parse.
struct EmbeddingJobStart {
  std::shared_ptr<GenerationJob> job;
  std::optional<ApiError> error;
};
EmbeddingJobStart start_embedding_job(ServerContext& ctx, const httplib::Request& req, const ParsedBody& parsed,
                                      Wire wire, const std::string& id_prefix);

// Records `e` on the job and answers it in the job's wire format (a 499:
// the client left, nothing to send).
void reject_job(GenerationJob& job, httplib::Response& res, const ApiError& e);

// Leases `requested` (resolved by the registry, loaded on demand; waits
// while the client stays) into job.lease and names it in job.meta; the
// error to answer otherwise.
std::optional<ApiError> lease_for_job(ServerContext& ctx, GenerationJob& job, const std::string& requested,
                                      const std::optional<config::KeepAlive>& keep_alive);

// Runs every input through the engine with `pooling`, at most the model's
// slot count queued at once (so a request of 2048 inputs never fills the
// engine's queue; a full queue only refuses the first). Fills `vectors`
// (pooled, not yet shaped; a reranker's scores under Rank) and the job's
// usage; the error otherwise (the client left: status 499, no body to
// send; a cancelled request: 503). `inputs` are consumed.
std::optional<ApiError> run_embedding_inputs(GenerationJob& job, const ServingModel& serving, model::Pooling pooling,
                                             std::vector<std::vector<text::TokenId>>& inputs,
                                             std::vector<std::vector<float>>& vectors);

}  // namespace tc::server
