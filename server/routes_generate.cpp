// POST /v1/completions and /v1/chat/completions: validate, plan (template,
// tokenize, context check), submit to the engine, then stream SSE chunks or
// write one JSON body. Everything that can fail with a 4xx happens before
// the 200; a client that goes away cancels its choices within one step.
#include <chrono>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "server/json_post_route.h"
#include "server/openai_responses.h"
#include "server/prompt_builder.h"
#include "server/request_body.h"
#include "server/request_log.h"
#include "server/route_paths.h"
#include "server/server_context.h"

namespace tc::server {
namespace {

using nlohmann::json;
using runtime::StreamEvent;

constexpr auto kAliveCheckInterval = std::chrono::milliseconds(50);

// One accepted request being answered: its handles, what was produced so far
// and the bookkeeping for the log line and the metrics.
struct GenerationJob {
  ServerContext* ctx = nullptr;
  std::shared_ptr<const ServingModel> serving;  // keeps the engine alive
  ResponseMeta meta;
  std::string route;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  std::vector<PlannedChoice> planned;
  std::vector<std::shared_ptr<runtime::RequestHandle>> handles;
  std::vector<ChoiceResult> results;
  std::vector<size_t> text_bytes;  // per choice, for legacy logprobs text_offset
  runtime::Usage usage;
  RequestRecord record;
  int status = 200;
  std::string error;
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();

  bool reported = false;

  ~GenerationJob() {
    for (auto& h : handles) h->cancel();  // no-op for finished ones
    report();
  }

  // Counts the request in the metrics and writes its log line, once. run()
  // calls it before its last write: a client that has the whole response
  // then finds the request in /metrics and the log (the job itself is freed
  // only after httplib has sent the response). Requests that end otherwise
  // (rejected, client gone) are reported when the job is freed.
  void report() {
    if (reported) return;
    reported = true;
    record.route = route;
    record.status = status;
    ctx->metrics.record(record);
    RequestLogLine line;
    line.id = meta.id;
    line.method = "POST";
    line.route = route;
    line.status = status;
    line.prompt_tokens = usage.prompt_tokens;
    line.completion_tokens = usage.completion_tokens;
    line.cached_tokens = usage.cached_tokens;
    if (record.generated) {
      line.queue_s = record.queue_seconds;
      line.ttft_s = record.queue_seconds + record.first_token_seconds;
    }
    // Engine timings for a request that ran; handler time for one rejected before.
    line.total_s = record.generated
                       ? record.total_seconds
                       : std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
    line.error = error;
    log_request(line);
  }

  void cancel_all() {
    for (auto& h : handles) h->cancel();
  }

  // The client went away: cancel, and log 499 (nginx's "client closed request").
  void client_gone() {
    cancel_all();
    if (status == 200) {
      status = 499;
      error = "client disconnected";
    }
  }

  // Folds a finished choice's usage and timings in (prompt tokens once per prompt).
  void account(size_t choice, const StreamEvent& ev, std::vector<bool>& group_counted) {
    const int group = planned[choice].prompt_group;
    if (!group_counted[static_cast<size_t>(group)]) {
      group_counted[static_cast<size_t>(group)] = true;
      usage.prompt_tokens += ev.usage.prompt_tokens;
      usage.cached_tokens += ev.usage.cached_tokens;
    }
    usage.completion_tokens += ev.usage.completion_tokens;
    record.generated = true;
    record.completion_tokens += ev.usage.completion_tokens;
    record.queue_seconds = std::max(record.queue_seconds, ev.queue_seconds);
    if (record.first_token_seconds == 0 || ev.first_token_seconds < record.first_token_seconds) {
      record.first_token_seconds = ev.first_token_seconds;
    }
    record.total_seconds = std::max(record.total_seconds, ev.total_seconds);
  }

  json logprobs_of(size_t choice, const std::vector<runtime::TokenInfo>& tokens) const {
    if (!logprobs) return nullptr;
    if (meta.endpoint == Endpoint::Chat) return chat_logprobs_json(tokens);
    return completion_logprobs_json(tokens, text_bytes[choice]);
  }

  // Runs until every choice finished, the client left or an error. Writes
  // through `write`; `alive` says whether the client is still there.
  template <class Write, class Alive>
  void run(Write&& write, Alive&& alive) {
    const size_t n = handles.size();
    results.assign(n, {});
    text_bytes.assign(n, 0);
    std::vector<bool> done(n, false);
    std::vector<bool> group_counted(n, false);
    size_t n_done = 0;
    if (stream) {
      for (size_t i = 0; i < n; ++i) {
        if (meta.endpoint == Endpoint::Chat && !write(sse_event(chat_role_chunk(meta, static_cast<int>(i))))) return;
        if (!planned[i].echo_text.empty() &&
            !write(sse_event(content_chunk(meta, static_cast<int>(i), planned[i].echo_text, nullptr)))) {
          return;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      results[i].text = planned[i].echo_text;
      text_bytes[i] = planned[i].echo_text.size();
    }
    const auto wait = n == 1 ? std::chrono::milliseconds(50) : std::chrono::milliseconds(5);
    auto last_write = runtime::Clock::now();
    const auto ping_interval = std::chrono::duration<double>(ctx->options.sse_ping_s);
    StreamEvent ev;
    auto last_alive_check = runtime::Clock::now();
    while (n_done < n) {
      // Polled whether or not events flow: a non-streamed response writes
      // nothing until the end, so only this notices a client that left.
      if (runtime::Clock::now() - last_alive_check >= kAliveCheckInterval) {
        if (!alive()) {
          client_gone();
          return;
        }
        last_alive_check = runtime::Clock::now();
      }
      bool any = false;
      for (size_t i = 0; i < n; ++i) {
        if (done[i] || !handles[i]->next(ev, wait)) continue;
        any = true;
        if (ev.kind == StreamEvent::Kind::Error) {
          fail(ev.error, write);
          return;
        }
        auto& r = results[i];
        if (!ev.text.empty() || !ev.tokens.empty()) {
          if (stream) {
            if (!write(sse_event(content_chunk(meta, static_cast<int>(i), ev.text, logprobs_of(i, ev.tokens))))) return;
            last_write = runtime::Clock::now();
          }
          r.text += ev.text;
          text_bytes[i] += ev.text.size();
          if (logprobs) r.tokens.insert(r.tokens.end(), ev.tokens.begin(), ev.tokens.end());
        }
        if (ev.kind == StreamEvent::Kind::Finished) {
          if (ev.finish == runtime::FinishReason::Cancelled || ev.finish == runtime::FinishReason::Error) {
            // The tokens generated before the cut still count (log line, usage).
            account(i, ev, group_counted);
            fail(ev.finish == runtime::FinishReason::Cancelled ? "the request was cancelled (server shutting down)"
                                                               : ev.error,
                 write);
            return;
          }
          r.finish = ev.finish;
          account(i, ev, group_counted);
          done[i] = true;
          ++n_done;
          if (stream && !write(sse_event(finish_chunk(meta, static_cast<int>(i), ev.finish)))) return;
        }
      }
      if (any) continue;
      if (stream && runtime::Clock::now() - last_write >= ping_interval) {
        if (!write(std::string(kSsePing))) return;
        last_write = runtime::Clock::now();
      }
    }
    report();
    if (stream) {
      if (include_usage && !write(sse_event(usage_chunk(meta, usage)))) return;
      write(std::string(kSseDone));
    } else {
      write(dump_json(response_body(meta, results, usage, logprobs)));
    }
  }

  // An error after the 200: an SSE error event then [DONE], or an error body.
  template <class Write>
  void fail(const std::string& message, Write&& write) {
    status = 500;
    error = message;
    cancel_all();
    const std::string body = error_body({500, "server_error", message, "", ""});
    report();
    if (stream) {
      if (write("data: " + body + "\n\n")) write(std::string(kSseDone));
    } else {
      write(body);
    }
  }
};

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

ApiError model_not_found(const std::string& asked, const std::string& served) {
  return {404, "invalid_request_error", "the model '" + asked + "' does not exist; this server serves '" + served + "'",
          "model_not_found", "model"};
}

// 24 hex digits: unique within the process (a serial), unpredictable across
// processes (mixed with the per-process random salt by splitmix64's finalizer).
std::string random_id(ServerContext& ctx) {
  uint64_t z = ctx.id_salt + ctx.next_request.fetch_add(1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return fmt::format("{:08x}{:016x}", static_cast<uint32_t>(ctx.created), z);
}

void handle_generation(Endpoint endpoint, ServerContext& ctx, const httplib::Request& req, ParsedBody parsed_body,
                       httplib::Response& res) {
  auto job = std::make_shared<GenerationJob>();
  job->ctx = &ctx;
  job->route = canonical_route(req.path);
  job->meta.endpoint = endpoint;
  job->meta.id = (endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + random_id(ctx);
  job->meta.created = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto reject = [&](const ApiError& e) {
    job->status = e.status;
    job->error = e.message;
    send_error(res, e);
  };

  job->serving = ctx.serving();
  if (auto err = unavailable(ctx, job->serving.get())) return reject(*err);
  const ServingModel& serving = *job->serving;
  job->meta.model = serving.model_id;
  job->meta.system_fingerprint = "thermocline";

  if (parsed_body.error) return reject(*parsed_body.error);
  const json body = std::move(parsed_body.json);
  const RequestLimits limits = request_limits(ctx.options, serving);

  Plan plan;
  CommonRequest common;
  if (endpoint == Endpoint::Chat) {
    auto parsed = parse_chat_request(body, limits);
    if (parsed.error) return reject(*parsed.error);
    common = parsed.request->common;
    if (!common.model.empty() && common.model != serving.model_id) {
      return reject(model_not_found(common.model, serving.model_id));
    }
    plan = plan_chat(*parsed.request, serving, ctx.options);
  } else {
    auto parsed = parse_completion_request(body, limits);
    if (parsed.error) return reject(*parsed.error);
    common = parsed.request->common;
    if (!common.model.empty() && common.model != serving.model_id) {
      return reject(model_not_found(common.model, serving.model_id));
    }
    plan = plan_completion(*parsed.request, serving, ctx.options);
  }
  if (plan.error) return reject(*plan.error);
  job->stream = common.stream;
  job->include_usage = common.include_usage;
  job->logprobs = common.logprobs;

  for (auto& choice : plan.choices) {
    auto submitted = serving.engine->submit(choice.request);
    if (submitted.status != runtime::SubmitStatus::Ok) return reject(submit_error(submitted));
    job->handles.push_back(std::move(submitted.handle));
  }
  job->planned = std::move(plan.choices);

  if (job->stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
  }
  res.set_chunked_content_provider(
      job->stream ? "text/event-stream" : "application/json",
      [job](size_t, httplib::DataSink& sink) {
        auto write = [&sink, &job](const std::string& data) {
          if (sink.write(data.data(), data.size())) return true;
          job->client_gone();
          return false;
        };
        auto alive = [&sink] { return sink.is_writable(); };
        job->run(write, alive);
        sink.done();
        return true;
      },
      [job](bool success) {
        if (!success) job->client_gone();
      });
}

}  // namespace

void install_generation_routes(httplib::Server& http, ServerContext& ctx) {
  for (const auto& [path, endpoint] : {std::pair{"chat/completions", Endpoint::Chat},
                                       std::pair{"completions", Endpoint::Completions}}) {
    post_json_route(http, route_pattern(path), ctx.options.max_body_bytes,
                    [&ctx, endpoint](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                      handle_generation(endpoint, ctx, req, std::move(body), res);
                    });
  }
}

}  // namespace tc::server
