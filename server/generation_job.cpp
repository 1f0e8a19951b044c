// serve_generation: lease the model (waiting for its load), plan, submit,
// answer (see generation_job.h).
#include "server/generation_job.h"

#include <fmt/format.h>

#include "server/http/httplib_bridge.h"
#include "server/route_paths.h"

namespace tc::server {

ApiError submit_error(const runtime::SubmitResult& r) {
  switch (r.status) {
    case runtime::SubmitStatus::QueueFull:
      return {503, "unavailable_error", "the server is busy (request queue full); retry shortly", "", ""};
    case runtime::SubmitStatus::ContextExceeded:
      return {400, "invalid_request_error", r.message, "context_length_exceeded", "messages"};
    case runtime::SubmitStatus::NotReady:
      return {503, "unavailable_error", "the server is not accepting requests: " + r.message, "", ""};
    case runtime::SubmitStatus::InvalidRequest:
    case runtime::SubmitStatus::Ok:
      break;
  }
  return {400, "invalid_request_error", r.message, "", ""};
}

// One-model mode keeps its answer for a model that failed to load: a 500
// "the model failed to load: <reason>".
ApiError registry_error(const ServerContext& ctx, const ApiError& e) {
  if (e.code == "model_load_failed" && !ctx.models->folder_mode()) {
    return {500, "server_error", "the model failed to load: " + ctx.models->single_failure(), "", ""};
  }
  return e;
}

namespace {

// Plans on the leased model and submits every choice; the error otherwise.
std::optional<ApiError> plan_and_submit(GenerationJob& job, const PlanFunction& plan) {
  const ServingModel& serving = job.lease->model();
  if (auto err = unavailable(*job.ctx, &serving)) return err;
  if (auto err = plan(job, serving)) return err;
  for (auto& choice : job.planned) {
    // With tools, a model's call markers reach the reply's parser.
    if (job.tools.active()) choice.request.rendered_tokens = serving.tool_marker_ids;
    auto submitted = serving.engine->submit(choice.request);
    if (submitted.status != runtime::SubmitStatus::Ok) return submit_error(submitted);
    job.handles.push_back(std::move(submitted.handle));
  }
  return std::nullopt;
}

const char* content_type(const GenerationJob& job) {
  if (!job.stream) return "application/json";
  return job.wire == Wire::Ollama ? "application/x-ndjson" : "text/event-stream";
}

void set_stream_headers(httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
}

}  // namespace

void send_job_error(const GenerationJob& job, httplib::Response& res, const ApiError& error) {
  if (job.wire == Wire::Anthropic) {
    res.status = error.status;
    if (error.status == 503) res.set_header("Retry-After", "1");
    res.set_content(dump_json(anthropic_error_body(error)), "application/json");
    return;
  }
  if (job.wire != Wire::Ollama) return send_error(res, error);  // llama.cpp's errors have OpenAI's shape
  res.status = error.status;
  if (error.status == 503) res.set_header("Retry-After", "1");
  res.set_content(ollama_error_body(error.message), "application/json");
}

std::shared_ptr<GenerationJob> new_generation_job(ServerContext& ctx, const httplib::Request& req, Wire wire,
                                                  Endpoint endpoint, const std::string& id_prefix) {
  auto job = std::make_shared<GenerationJob>();
  job->ctx = &ctx;
  job->wire = wire;
  job->route = canonical_route(req.path);
  job->meta.endpoint = endpoint;
  job->meta.id = id_prefix + random_id(ctx);
  return job;
}

void GenerationJob::reject(httplib::Response& res, const ApiError& e) {
  status = e.status;
  error = e.message;
  send_job_error(*this, res, e);
}

bool GenerationJob::refused_early(httplib::Response& res, const ParsedBody& body) {
  if (ctx->draining.load()) {
    reject(res, {503, "unavailable_error", "the server is shutting down", "", ""});
    return true;
  }
  if (body.error) {
    reject(res, *body.error);
    return true;
  }
  return false;
}

std::string random_id(ServerContext& ctx) {
  uint64_t z = ctx.id_salt + ctx.next_request.fetch_add(1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return fmt::format("{:08x}{:016x}", static_cast<uint32_t>(ctx.created), z);
}

void serve_generation(ServerContext& ctx, const std::shared_ptr<GenerationJob>& job, const std::string& requested,
                      const std::optional<config::KeepAlive>& keep_alive, bool stream, PlanFunction plan,
                      httplib::Response& res) {
  auto reject = [&](const ApiError& e) {
    job->status = e.status;
    job->error = e.message;
    send_job_error(*job, res, e);
  };
  std::optional<ApiError> error;
  const std::string name = ctx.models->resolve(requested, error);
  if (error) return reject(*error);
  job->meta.model = name;
  job->ollama.model = name;
  const auto wait_start = std::chrono::steady_clock::now();
  auto lease = ctx.models->try_acquire(name, keep_alive, error);
  if (error) return reject(registry_error(ctx, *error));
  if (!lease && !stream) {
    lease = ctx.models->acquire(name, keep_alive, error, http::request_client_connected, kClientCheckInterval);
    if (!lease) return reject(registry_error(ctx, error.value_or(ApiError{503, "unavailable_error", "the model is not available", "", ""})));
    job->ollama.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  }
  auto respond = [job](size_t, httplib::DataSink& sink, const std::function<bool()>& before) {
    auto write = [&sink, &job](const std::string& data) {
      if (sink.write(data.data(), data.size())) return true;
      job->client_gone();
      return false;
    };
    auto alive = [&sink] { return sink.is_writable(); };
    if (!before || before()) job->run(write, alive);
    sink.done();
    return true;
  };
  if (lease) {
    // Loaded: every 4xx is still answered before the 200.
    job->lease = std::move(lease);
    if (auto err = plan_and_submit(*job, plan)) return reject(*err);
    if (job->stream) set_stream_headers(res);
    res.set_chunked_content_provider(
        content_type(*job), [job, respond](size_t offset, httplib::DataSink& sink) { return respond(offset, sink, {}); },
        [job](bool success) {
          if (!success) job->client_gone();
        });
    return;
  }
  // A stream whose model is loading: 200 now, pings while it loads, then
  // plan and submit; an error from here on is a stream event.
  job->stream = true;
  set_stream_headers(res);
  ServerContext* c = &ctx;
  res.set_chunked_content_provider(
      content_type(*job),
      [job, respond, c, name, keep_alive, plan, wait_start](size_t offset, httplib::DataSink& sink) {
        return respond(offset, sink, [&]() {
          auto write = [&sink, &job](const std::string& data) {
            if (sink.write(data.data(), data.size())) return true;
            job->client_gone();
            return false;
          };
          // SSE has comments for pings; NDJSON has none, so an Ollama stream stays silent.
          auto tick = [&]() { return job->wire != Wire::Ollama ? write(std::string(kSsePing)) : sink.is_writable(); };
          std::optional<ApiError> err;
          const auto interval = std::chrono::milliseconds(
              std::max<int64_t>(50, static_cast<int64_t>(c->options.sse_ping_s * 1000)));
          job->lease = c->models->acquire(name, keep_alive, err, tick, interval);
          if (!job->lease) {
            if (err) job->fail(registry_error(*c, *err), write);
            else job->client_gone();
            return false;
          }
          job->ollama.load_seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
          const bool was_stream = job->stream;
          if (auto e = plan_and_submit(*job, plan)) {
            job->stream = was_stream;
            job->fail(*e, write);
            return false;
          }
          // The stream began already: the request's own `stream` cannot turn it into one body.
          job->stream = true;
          return true;
        });
      },
      [job](bool success) {
        if (!success) job->client_gone();
      });
}

}  // namespace tc::server
