// What the route handlers share: the options, the models (the registry,
// each loaded one with its engine and chat template), metrics, and the
// lifecycle state. Internal
// to server/ (http_server.cpp builds it, routes_*.cpp read it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <httplib.h>

#include "config/serve_options.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "engine/text/chat_template.h"
#include "server/image_embedder.h"
#include "server/json_post_route.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/openai_errors.h"
#include "server/response_store.h"

namespace tc::server {

// The model as served: immutable once published.
struct ServingModel {
  std::shared_ptr<const model::LoadedModel> model;
  std::shared_ptr<runtime::Engine> engine;
  std::shared_ptr<const text::ChatTemplate> chat_template;  // null: chat_template_error says why
  std::string chat_template_error;
  std::string model_id;   // what /v1/models lists and requests may name
  config::ServeOptions options;  // this model's options (the server's, with its NAME.toml applied)
  // Its vocabulary's tool-call marker tokens (tool_marker_ids), rendered in
  // replies to requests with tools; empty for most models.
  std::vector<int32_t> tool_marker_ids;
  // Its vocabulary writes OpenAI's harmony format (gpt-oss:
  // text::is_harmony_vocab): chat replies are parsed by harmony_split.h.
  bool harmony = false;
  // Gemma 4's reply markers in its vocabulary (gemma4_marker_ids), rendered
  // in chat replies of a Gemma 4 template for the reply's parser.
  std::vector<int32_t> gemma4_marker_ids;
  // Its vision projector (--mmproj) and image cache; null: text only.
  std::shared_ptr<ImageEmbedder> vision;
};

struct ServerContext {
  config::ServeOptions options;
  Metrics metrics;
  int64_t created = 0;                 // unix seconds at start, for /v1/models
  std::atomic<bool> draining{false};   // SIGTERM received: new generations get 503
  std::atomic<uint64_t> next_request{1};
  uint64_t id_salt = 0;                // random per process (std::random_device): response ids differ across replicas
  std::unique_ptr<ModelRegistry> models;  // every model served, loaded or not
  ResponseStore responses;             // the Responses API's stored responses

  // A loaded model to show without holding it (engine view, /metrics):
  // `name` (or an alias) if loaded, else the most recently used loaded one.
  std::shared_ptr<const ServingModel> serving(const std::string& name = {}) const { return models->peek(name); }
};

// Response helpers shared by the route files.
void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const ApiError& error);
// A 503 (with Retry-After) while loading or draining, a 500 when the engine
// failed; null when the model serves requests. A null `serving`: why no
// model is there (one-model mode: loading or failed).
std::optional<ApiError> unavailable(const ServerContext& ctx, const ServingModel* serving);

// The model a request names (`requested`; empty: the only one), leased for
// the request: loaded first if it is not (waiting; other models serve
// meanwhile). Null with the error sent (404 unknown, 500 failed to load,
// 503 loading at start or draining). For routes that answer once, not
// streams (routes_generate.cpp waits with pings).
std::shared_ptr<ModelLease> lease_model(ServerContext& ctx, const std::string& requested, httplib::Response& res,
                                        const std::optional<config::KeepAlive>& keep_alive = std::nullopt);

// A route's handler, timed, counted in the metrics and logged (one line per
// request, request_log.h); and the same for a POST route with a JSON body
// (json_post_route.h), timed from the body read.
httplib::Server::Handler logged_route(ServerContext& ctx, httplib::Server::Handler handler);
void post_logged_route(httplib::Server& http, ServerContext& ctx, std::string_view path, JsonPostHandler handler);

// Route registration, one file each.
void install_info_routes(httplib::Server& http, ServerContext& ctx);
void install_generation_routes(httplib::Server& http, ServerContext& ctx);
void install_ollama_routes(httplib::Server& http, ServerContext& ctx);  // /api/*: Ollama's API
void install_token_count_routes(httplib::Server& http, ServerContext& ctx);  // count_tokens, input_tokens
void install_llamacpp_routes(httplib::Server& http, ServerContext& ctx);  // /completion, /infill: llama.cpp's
void install_embedding_routes(httplib::Server& http, ServerContext& ctx);  // /v1/embeddings, /api/embed(dings)
void install_rerank_routes(httplib::Server& http, ServerContext& ctx);     // /v1/rerank, /rerank, /v1/reranking
void install_engine_routes(httplib::Server& http, ServerContext& ctx);
void install_webui_routes(httplib::Server& http, ServerContext& ctx);  // none with options.webui off
// The web page's paths (GET / and /webui/NAME), which need no API key.
bool is_webui_path(std::string_view path);

}  // namespace tc::server
