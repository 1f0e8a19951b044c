// The embedding-shaped requests' engine work (POST /v1/embeddings, Ollama's
// embed routes, /v1/rerank): token inputs run as engine embedding
// requests, batched with whatever else runs.
#pragma once

#include <optional>
#include <vector>

#include "engine/model/model_spec.h"
#include "engine/text/vocab.h"
#include "server/generation_job.h"
#include "server/openai_errors.h"

namespace tc::server {

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
