// The embedding-shaped requests' common steps (see embedding_runs.h).
#include "server/embedding_runs.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "server/http/httplib_bridge.h"
#include "server/route_paths.h"

namespace tc::server {

EmbeddingJobStart start_embedding_job(ServerContext& ctx, const httplib::Request& req, const ParsedBody& parsed,
                                      Wire wire, const std::string& id_prefix) {
  EmbeddingJobStart out;
  out.job = std::make_shared<GenerationJob>();
  out.job->ctx = &ctx;
  out.job->wire = wire;
  out.job->route = canonical_route(req.path);
  out.job->meta.id = id_prefix + random_id(ctx);
  if (ctx.draining.load()) {
    out.error = ApiError{503, "unavailable_error", "the server is shutting down", "", ""};
  } else if (parsed.error) {
    out.error = parsed.error;
  }
  return out;
}

void reject_job(GenerationJob& job, httplib::Response& res, const ApiError& e) {
  job.status = e.status;
  job.error = e.message;
  if (e.status != 499) send_job_error(job, res, e);
}

std::optional<ApiError> lease_for_job(ServerContext& ctx, GenerationJob& job, const std::string& requested,
                                      const std::optional<config::KeepAlive>& keep_alive) {
  std::optional<ApiError> error;
  const std::string name = ctx.models->resolve(requested, error);
  if (error) return error;
  job.meta.model = name;
  job.lease = ctx.models->acquire(name, keep_alive, error, http::request_client_connected, kClientCheckInterval);
  if (!job.lease) {
    const ApiError fallback{503, "unavailable_error", "the model is not available", "", ""};
    return registry_error(ctx, error.value_or(fallback));
  }
  return unavailable(ctx, &job.lease->model());
}

std::optional<ApiError> run_embedding_inputs(GenerationJob& job, const ServingModel& serving, model::Pooling pooling,
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

}  // namespace tc::server
