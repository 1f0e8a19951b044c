// HttpServer: the HTTP layer (server/http/: connections, limits) in front
// of httplib's routing, access control (API keys, CORS, body limit), the
// lifecycle states, and the shared response helpers; the routes live in
// routes_info.cpp, routes_generate.cpp, routes_engine.cpp and routes_webui.cpp.
#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>

#include "server/access.h"
#include "server/http/http_front.h"
#include "server/http/httplib_bridge.h"
#include "server/http/memory_release.h"
#include "server/openai_responses.h"
#include "server/request_body.h"
#include "server/request_log.h"
#include "server/route_paths.h"
#include "server/server_context.h"

namespace tc::server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  // Every 503 is transient here (loading, queue full, shutting down);
  // failures that will not pass are 500s.
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(e), "application/json");
}

std::optional<ApiError> unavailable(const ServerContext& ctx, const ServingModel* serving) {
  if (!serving) {
    const std::string failure = ctx.models->single_failure();
    if (!failure.empty()) return ApiError{500, "server_error", "the model failed to load: " + failure, "", ""};
    if (ctx.models->folder_mode()) {
      return ApiError{503, "unavailable_error", "no model is loaded (a request naming one loads it)", "", ""};
    }
    return ApiError{503, "unavailable_error", "the model is loading", "", ""};
  }
  const auto state = serving->engine->state();
  if (state == runtime::EngineState::Failed) {
    return ApiError{500, "server_error", "the engine failed: " + serving->engine->stats().failure, "", ""};
  }
  if (state == runtime::EngineState::Loading) return ApiError{503, "unavailable_error", "the model is loading", "", ""};
  if (ctx.draining.load() || state == runtime::EngineState::Stopped) {
    return ApiError{503, "unavailable_error", "the server is shutting down", "", ""};
  }
  return std::nullopt;
}

namespace {

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

http::HttpLimits http_limits(const config::ServeOptions& o) {
  http::HttpLimits l;
  l.max_header_bytes = static_cast<size_t>(o.http_max_header_bytes);
  l.max_headers = static_cast<size_t>(o.http_max_headers);
  l.max_body_bytes = static_cast<uint64_t>(o.max_body_bytes);
  l.request_timeout = millis(o.http_request_timeout_s);
  l.keep_alive_timeout = millis(o.http_keep_alive_s);
  l.write_timeout = millis(o.http_write_timeout_s);
  l.max_connections = static_cast<size_t>(o.http_max_connections);
  return l;
}

}  // namespace

std::shared_ptr<ModelLease> lease_model(ServerContext& ctx, const std::string& requested, httplib::Response& res,
                                        const std::optional<config::KeepAlive>& keep_alive) {
  std::optional<ApiError> error;
  const std::string name = ctx.models->resolve(requested, error);
  std::shared_ptr<ModelLease> lease;
  if (!error) lease = ctx.models->acquire(name, keep_alive, error, http::request_client_connected, kClientCheckInterval);
  if (!lease) {
    // One-model mode keeps its old answers: the model's failure as a 500
    // "the model failed to load: ...".
    if (error && error->code == "model_load_failed" && !ctx.models->folder_mode()) {
      error = ApiError{500, "server_error", "the model failed to load: " + ctx.models->single_failure(), "", ""};
    }
    send_error(res, error.value_or(ApiError{503, "unavailable_error", "the model is not available", "", ""}));
    return nullptr;
  }
  if (auto err = unavailable(ctx, &lease->model())) {
    send_error(res, *err);
    return nullptr;
  }
  return lease;
}

struct HttpServer::Impl {
  ServerContext ctx;
  http::HttplibRouter http;
  std::unique_ptr<http::HttpFront> front;

  void add_cors_headers(const httplib::Request& req, httplib::Response& res) const {
    const std::string allow = cors_allow_origin(ctx.options.cors_origins, req.get_header_value("Origin"));
    if (allow.empty()) return;
    res.set_header("Access-Control-Allow-Origin", allow);
    if (allow != "*") res.set_header("Vary", "Origin");
  }

  // Runs before routing: CORS preflight, API keys. Returns Handled when the
  // request was answered here.
  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) {
    add_cors_headers(req, res);
    if (req.method == "OPTIONS") {
      // A preflight never carries credentials, so it is answered before the key check.
      if (!res.get_header_value("Access-Control-Allow-Origin").empty()) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        const std::string asked = req.get_header_value("Access-Control-Request-Headers");
        res.set_header("Access-Control-Allow-Headers",
                       asked.empty() ? "Authorization, Content-Type, X-Api-Key" : asked);
        res.set_header("Access-Control-Max-Age", "600");
      }
      res.status = 204;
      ctx.metrics.record({route_label(req.path), 204});
      log_request(plain_request_line(req.method, route_label(req.path), 204));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (canonical_route(req.path) == "/health") return httplib::Server::HandlerResponse::Unhandled;
    if (ctx.options.webui && req.method == "GET" && is_webui_path(req.path)) return httplib::Server::HandlerResponse::Unhandled;
    if (!api_key_accepted(ctx.options.api_keys, req.get_header_value("Authorization"),
                          req.get_header_value("X-Api-Key"))) {
      send_error(res, {401, "authentication_error", "invalid or missing API key (send 'Authorization: Bearer KEY')",
                       "invalid_api_key", ""});
      ctx.metrics.record({route_label(req.path), 401});
      log_request(plain_request_line(req.method, route_label(req.path), 401, 0, "invalid or missing API key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  // A request the HTTP layer answered itself: counted and logged like any
  // other, and readable by a page of an allowed origin.
  http::HeaderList rejected(const http::Rejection& r) {
    const std::string route = r.path.empty() ? "other" : route_label(r.path);
    ctx.metrics.record({route, r.status});
    log_request(plain_request_line(r.method.empty() ? "-" : r.method, route, r.status, 0, r.message));
    http::HeaderList extra;
    const std::string allow = cors_allow_origin(ctx.options.cors_origins, r.origin);
    if (!allow.empty()) {
      extra.emplace_back("Access-Control-Allow-Origin", allow);
      if (allow != "*") extra.emplace_back("Vary", "Origin");
    }
    return extra;
  }

  void install() {
    http.set_payload_max_length(static_cast<size_t>(ctx.options.max_body_bytes));
    // Only the Keep-Alive response header reads these; HttpFront keeps the
    // connections (any number of requests each).
    http.set_keep_alive_timeout(static_cast<time_t>(std::ceil(ctx.options.http_keep_alive_s)));
    http.set_keep_alive_max_count(100000);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return pre_route(req, res);
    });
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      // An empty body: no handler ran (no route, a body over the limit), so
      // no line was logged for this request yet.
      if (res.body.empty()) {
        ctx.metrics.record({route_label(req.path), res.status});
        log_request(plain_request_line(req.method, route_label(req.path), res.status));
      }
      if (res.status == 413) {
        send_error(res, body_too_large_error());
      } else if (res.status == 404 && res.body.empty()) {
        send_error(res, {404, "invalid_request_error", "no route " + req.method + " " + req.path, "", ""});
      } else if (res.body.empty()) {
        // httplib answered before any route: a request line, header or body
        // it could not read.
        send_error(res, {res.status, "invalid_request_error",
                         res.status == 400 ? "malformed HTTP request" : "request failed (HTTP " + std::to_string(res.status) + ")",
                         "", ""});
      }
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, {500, "server_error", what, "", ""});
    });
    install_info_routes(http, ctx);
    install_generation_routes(http, ctx);
    install_token_count_routes(http, ctx);
    install_ollama_routes(http, ctx);
    install_llamacpp_routes(http, ctx);
    install_embedding_routes(http, ctx);
    install_rerank_routes(http, ctx);
    install_engine_routes(http, ctx);
    install_webui_routes(http, ctx);
  }
};

HttpServer::HttpServer(config::ServeOptions options) : impl_(std::make_unique<Impl>()) {
  http::tune_allocator();
  impl_->ctx.options = std::move(options);
  RegistryOptions registry;
  registry.serve = impl_->ctx.options;
  impl_->ctx.models = std::make_unique<ModelRegistry>(std::move(registry));
  impl_->ctx.id_salt = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  impl_->ctx.created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  // One worker per request being answered: a streaming request holds its
  // worker, so there must be one for every slot and the whole queue (and a
  // few for quick routes), or requests would wait for a worker instead of
  // getting a 503 from a full queue. Idle and slow connections hold none.
  const auto& o = impl_->ctx.options;
  // A models folder: that for each model loaded at once (requests waiting
  // for a load hold a worker too).
  const int n_models = o.models_dir.empty() ? 1 : o.max_loaded_models;
  const int n_workers = std::max(o.http_threads, n_models * (o.parallel + o.queue_size) + 8);
  impl_->install();
  const auto write_stall = millis(o.http_write_timeout_s);
  Impl* m = impl_.get();
  http::FrontHooks hooks;
  hooks.handle = [m, write_stall](const http::ReadyRequest& r) { return m->http.serve(r, write_stall); };
  hooks.rejected = [m](const http::Rejection& r) { return m->rejected(r); };
  impl_->front = std::make_unique<http::HttpFront>(http_limits(o), static_cast<size_t>(n_workers), std::move(hooks));
}

HttpServer::~HttpServer() = default;

void HttpServer::publish(std::shared_ptr<const model::LoadedModel> model, std::shared_ptr<runtime::Engine> engine,
                         std::shared_ptr<const text::ChatTemplate> chat_template,
                         std::string chat_template_error, std::string model_id) {
  auto serving = std::make_shared<ServingModel>();
  serving->model = std::move(model);
  serving->engine = std::move(engine);
  serving->chat_template = std::move(chat_template);
  serving->chat_template_error = std::move(chat_template_error);
  serving->model_id = std::move(model_id);
  serving->options = impl_->ctx.options;
  impl_->ctx.models->publish(std::move(serving));
}

void HttpServer::set_load_error(std::string message) { impl_->ctx.models->set_load_error(std::move(message)); }

bool HttpServer::load_models() { return impl_->ctx.models->start(); }

std::vector<std::string> HttpServer::model_ids() const {
  std::vector<std::string> out;
  for (const auto& m : impl_->ctx.models->list()) out.push_back(m.name);
  return out;
}

void HttpServer::shutdown_models(std::chrono::milliseconds grace) { impl_->ctx.models->shutdown(grace); }

bool HttpServer::run(const std::function<void()>& on_ready) {
  const auto& o = impl_->ctx.options;
  if (!impl_->front->bind(o.host, o.port)) {
    error_ = "cannot listen on " + o.host + ":" + std::to_string(o.port) + " (" + impl_->front->error() + ")";
    return false;
  }
  bound_port_.store(impl_->front->port());
  if (on_ready) on_ready();
  impl_->front->run();
  return true;
}

void HttpServer::begin_drain() {
  impl_->ctx.draining.store(true);
  impl_->front->begin_drain();
}

void HttpServer::stop() { impl_->front->stop(); }

}  // namespace tc::server
