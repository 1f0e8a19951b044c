// What the route handlers share: the options, the model once loaded (with
// its engine and chat template), metrics, and the lifecycle state. Internal
// to server/ (http_server.cpp builds it, routes_*.cpp read it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <httplib.h>

#include "config/serve_options.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "engine/text/chat_template.h"
#include "server/metrics.h"
#include "server/openai_errors.h"

namespace tc::server {

// The model as served: immutable once published.
struct ServingModel {
  std::shared_ptr<const model::LoadedModel> model;
  std::shared_ptr<runtime::Engine> engine;
  std::shared_ptr<const text::ChatTemplate> chat_template;  // null: chat_template_error says why
  std::string chat_template_error;
  std::string model_id;   // what /v1/models lists and requests may name
};

struct ServerContext {
  config::ServeOptions options;
  Metrics metrics;
  int64_t created = 0;                 // unix seconds at start, for /v1/models
  std::atomic<bool> draining{false};   // SIGTERM received: new generations get 503
  std::atomic<uint64_t> next_request{1};
  uint64_t id_salt = 0;                // random per process (std::random_device): response ids differ across replicas

  // The model, null while loading. Readers take a shared_ptr copy.
  std::shared_ptr<const ServingModel> serving() const {
    std::lock_guard lock(mutex_);
    return serving_;
  }
  void publish(std::shared_ptr<const ServingModel> s) {
    std::lock_guard lock(mutex_);
    serving_ = std::move(s);
  }
  // Load failure: /health says 503 with this message.
  void set_load_error(std::string message) {
    std::lock_guard lock(mutex_);
    load_error_ = std::move(message);
  }
  std::string load_error() const {
    std::lock_guard lock(mutex_);
    return load_error_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const ServingModel> serving_;
  std::string load_error_;
};

// Response helpers shared by the route files.
void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const ApiError& error);
// A 503 (with Retry-After) while loading or draining, a 500 when the engine
// failed; null when the model serves requests.
std::optional<ApiError> unavailable(const ServerContext& ctx, const ServingModel* serving);

// Route registration, one file each.
void install_info_routes(httplib::Server& http, ServerContext& ctx);
void install_generation_routes(httplib::Server& http, ServerContext& ctx);
void install_engine_routes(httplib::Server& http, ServerContext& ctx);
void install_webui_routes(httplib::Server& http, ServerContext& ctx);  // none with options.webui off
// The web page's paths (GET / and /webui/NAME), which need no API key.
bool is_webui_path(std::string_view path);

}  // namespace tc::server
