// HttpServer: httplib setup, access control (API keys, CORS, body limit),
// the lifecycle states, and the shared response helpers; the routes live in
// routes_info.cpp, routes_generate.cpp, routes_engine.cpp and routes_webui.cpp.
#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <random>

#include "server/access.h"
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
    const std::string failure = ctx.load_error();
    if (!failure.empty()) return ApiError{500, "server_error", "the model failed to load: " + failure, "", ""};
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

struct HttpServer::Impl {
  ServerContext ctx;
  httplib::Server http;
  // The listening socket, seen by the socket options callback before bind.
  std::atomic<int> listen_fd{-1};

  Impl() {
    // httplib's default options set SO_REUSEPORT, which lets a second
    // listener share the port and take half its connections; SO_REUSEADDR
    // is what a restart over TIME_WAIT needs.
    http.set_socket_options([this](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      listen_fd.store(sock);
    });
  }

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

  void install() {
    http.set_payload_max_length(static_cast<size_t>(ctx.options.max_body_bytes));
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
    install_engine_routes(http, ctx);
    install_webui_routes(http, ctx);
  }
};

HttpServer::HttpServer(config::ServeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->ctx.options = std::move(options);
  impl_->ctx.id_salt = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  impl_->ctx.created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  // One thread per open connection: a streaming request holds its thread, so
  // the pool must cover every slot, the whole queue and some idle keep-alives,
  // or clients would wait in httplib's backlog instead of getting a 503.
  const auto& o = impl_->ctx.options;
  const int n_threads = std::max(o.http_threads, o.parallel + o.queue_size + 8);
  impl_->http.new_task_queue = [n_threads] { return new httplib::ThreadPool(static_cast<size_t>(n_threads)); };
  impl_->install();
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
  impl_->ctx.publish(std::move(serving));
}

void HttpServer::set_load_error(std::string message) { impl_->ctx.set_load_error(std::move(message)); }

bool HttpServer::run(const std::function<void()>& on_ready) {
  auto& http = impl_->http;
  const auto& o = impl_->ctx.options;
  // Port 0 lets the kernel choose; it is never taken by another process in
  // between, unlike a port probed as free and then bound.
  const int port = o.port == 0 ? http.bind_to_any_port(o.host) : (http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) {
    error_ = "cannot listen on " + o.host + ":" + std::to_string(o.port) + " (address in use or not available)";
    return false;
  }
  bound_port_.store(port);
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled
  // into Debian's library): a burst of more clients than that connecting at
  // once overflowed the accept queue, and one of 16 concurrent test clients
  // lost its request. listen() again on the bound socket raises it.
  if (const int fd = impl_->listen_fd.load(); fd >= 0) ::listen(fd, SOMAXCONN);
  if (on_ready) on_ready();
  return http.listen_after_bind();
}

void HttpServer::begin_drain() { impl_->ctx.draining.store(true); }

void HttpServer::stop() { impl_->http.stop(); }

}  // namespace tc::server
