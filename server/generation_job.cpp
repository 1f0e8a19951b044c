// serve_generation: lease the model (waiting for its load), plan, submit,
// answer (see generation_job.h).
#include "server/generation_job.h"

#include <algorithm>
#include <future>

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
    // With tools, a model's call markers reach the reply's parser (beside
    // those the plan renders already: Gemma 4's).
    if (job.tools.active() && !serving.tool_marker_ids.empty()) {
      auto& rendered = choice.request.rendered_tokens;
      rendered.insert(rendered.end(), serving.tool_marker_ids.begin(), serving.tool_marker_ids.end());
      std::sort(rendered.begin(), rendered.end());
      rendered.erase(std::unique(rendered.begin(), rendered.end()), rendered.end());
    }
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

// Waits for a plan running on its own thread, pinging the stream every
// interval while the client is there (SSE comments; an Ollama NDJSON
// stream has none and stays silent). The plan is waited for whether or not
// the client stays (it submits the choices, whose handles the job cancels
// once it is done); false when the client left.
bool await_plan(std::future<std::optional<ApiError>>& planned, const GenerationJob& job, httplib::DataSink& sink,
                std::chrono::milliseconds interval) {
  bool connected = true;
  while (planned.wait_for(interval) != std::future_status::ready) {
    if (!connected) continue;
    connected = job.wire != Wire::Ollama ? sink.write(kSsePing.data(), kSsePing.size()) : sink.is_writable();
  }
  return connected;
}

// A stream on a loaded model whose plan may take seconds (images to
// encode): the plan runs on its own thread. Done within one ping interval,
// it is answered as any other (a 4xx before the 200); otherwise the 200
// goes out now, the client gets pings until the plan is done, and its
// error, if any, is a stream event. The job is not touched again before
// the plan is done.
template <class Reject, class Respond>
void serve_slow_plan(const std::shared_ptr<GenerationJob>& job, const PlanFunction& plan,
                     std::chrono::milliseconds ping_interval, httplib::Response& res, Reject&& reject,
                     Respond respond) {
  job->stream = true;
  const char* type = content_type(*job);  // (read before the plan's thread may write the job)
  auto planned = std::make_shared<std::future<std::optional<ApiError>>>(
      std::async(std::launch::async, [job, plan] { return plan_and_submit(*job, plan); }));
  const bool quick = planned->wait_for(ping_interval) == std::future_status::ready;
  if (quick) {
    if (auto err = planned->get()) return reject(*err);
  }
  set_stream_headers(res);
  res.set_chunked_content_provider(
      type,
      [job, respond, planned, quick, ping_interval](size_t offset, httplib::DataSink& sink) {
        if (quick) return respond(offset, sink, {});
        return respond(offset, sink, [&]() {
          const bool connected = await_plan(*planned, *job, sink, ping_interval);
          const auto err = planned->get();
          if (!connected) {
            job->client_gone();
            return false;
          }
          if (err) {
            job->fail(*err, [&](const std::string& data) {
              if (!sink.write(data.data(), data.size())) job->client_gone();
              return true;
            });
            return false;
          }
          return true;
        });
      },
      [job, planned](bool success) {
        // (A client gone before the first write: the provider never waited.)
        if (planned->valid()) planned->wait();
        if (!success) job->client_gone();
      });
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
  const auto ping_interval =
      std::chrono::milliseconds(std::max<int64_t>(50, static_cast<int64_t>(ctx.options.sse_ping_s * 1000)));
  if (lease && stream && job->slow_plan) {
    job->lease = std::move(lease);
    return serve_slow_plan(job, plan, ping_interval, res, reject, respond);
  }
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
      [job, respond, c, name, keep_alive, plan, wait_start, ping_interval](size_t offset, httplib::DataSink& sink) {
        return respond(offset, sink, [&]() {
          auto write = [&sink, &job](const std::string& data) {
            if (sink.write(data.data(), data.size())) return true;
            job->client_gone();
            return false;
          };
          // SSE has comments for pings; NDJSON has none, so an Ollama stream stays silent.
          auto tick = [&]() { return job->wire != Wire::Ollama ? write(std::string(kSsePing)) : sink.is_writable(); };
          std::optional<ApiError> err;
          job->lease = c->models->acquire(name, keep_alive, err, tick, ping_interval);
          if (!job->lease) {
            if (err) job->fail(registry_error(*c, *err), write);
            else job->client_gone();
            return false;
          }
          job->ollama.load_seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
          const bool was_stream = job->stream;
          std::optional<ApiError> e;
          if (job->slow_plan) {  // images to encode: pings go on meanwhile
            auto planned = std::async(std::launch::async, [&] { return plan_and_submit(*job, plan); });
            const bool connected = await_plan(planned, *job, sink, ping_interval);
            e = planned.get();
            if (!connected) {
              job->client_gone();
              return false;
            }
          } else {
            e = plan_and_submit(*job, plan);
          }
          if (e) {
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
