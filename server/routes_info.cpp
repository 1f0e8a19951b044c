// Routes that do not generate: /health, /metrics, /v1/models, /props,
// /tokenize, /detokenize (each also with or without /v1, `//` collapsed).
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "engine/text/unicode.h"
#include "server/json_post_route.h"
#include "server/ollama_responses.h"
#include "server/openai_responses.h"
#include "server/prompt_builder.h"
#include "server/request_body.h"
#include "server/request_log.h"
#include "server/server_context.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

using nlohmann::json;

// The body as a JSON object, or sends the 400 (413) and returns false.
bool parse_object(ParsedBody parsed, httplib::Response& res, json& out) {
  if (parsed.error) {
    send_error(res, *parsed.error);
    return false;
  }
  out = std::move(parsed.json);
  if (!out.is_object()) {
    send_error(res, {400, "invalid_request_error", "request body must be a JSON object", "", ""});
    return false;
  }
  return true;
}

// An optional boolean field; null or absent gives the fallback.
bool optional_bool(const json& body, const char* key, bool fallback, bool& ok, httplib::Response& res) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    send_error(res, {400, "invalid_request_error", std::string("'") + key + "' must be a boolean", "", key});
    ok = false;
    return fallback;
  }
  return it->get<bool>();
}

// The model a request names (body "model", or ?model=), leased; null with
// the error sent.
std::shared_ptr<ModelLease> require_model(ServerContext& ctx, const httplib::Request& req, const json* body,
                                          httplib::Response& res) {
  std::string requested = req.get_param_value("model");
  if (body != nullptr && body->is_object()) {
    if (auto it = body->find("model"); it != body->end() && !it->is_null()) {
      if (!it->is_string()) {
        send_error(res, {400, "invalid_request_error", "'model' must be a string", "", "model"});
        return nullptr;
      }
      requested = it->get<std::string>();
    }
  }
  return lease_model(ctx, requested, res);
}

// One-model mode: why the model cannot serve (loading at start, failed, its
// engine failed or stopping); nullopt when it serves or would load on demand
// (unloaded after its keep_alive).
std::optional<ApiError> one_model_unavailable(const ServerContext& ctx) {
  if (const auto serving = ctx.serving()) return unavailable(ctx, serving.get());
  if (ctx.models->starting() || !ctx.models->single_failure().empty()) return unavailable(ctx, nullptr);
  if (ctx.draining.load()) return ApiError{503, "unavailable_error", "the server is shutting down", "", ""};
  return std::nullopt;
}

// One model of /v1/models (and /v1/models/ID).
json model_entry(const ServerContext& ctx, const ModelInfo& m) {
  json entry = {{"id", m.name}, {"object", "model"}, {"created", m.modified ? m.modified : ctx.created},
                {"owned_by", "thermocline"}};
  entry["status"] = {{"value", model_state_name(m.state)}};
  if (m.state == ModelState::Failed) entry["status"]["failure"] = m.failure;
  entry["loaded"] = m.state == ModelState::Loaded;
  entry["vision"] = m.vision;
  // What it serves, as Ollama's /api/show says ("completion", "embedding",
  // "rerank", ...), from the file's header (read once per file change).
  if (const ModelFacts f = ctx.models->facts(m.name); f.error.empty()) {
    std::string tmpl = f.chat_template;
    if (m.serving != nullptr && m.serving->chat_template) tmpl = m.serving->chat_template->source();
    entry["capabilities"] = ollama_capabilities(f.arch, f.metadata, tmpl, f.fill_in_middle, m.vision);
  }
  if (!m.aliases.empty()) entry["aliases"] = m.aliases;
  return entry;
}

// /v1/models in one-model mode: as before, 503 while it loads and 500 once
// it failed; a models folder lists every model, loaded or not.
json models_list(const ServerContext& ctx) {
  json data = json::array();
  for (const auto& m : ctx.models->list()) data.push_back(model_entry(ctx, m));
  return {{"object", "list"}, {"data", std::move(data)}};
}

}  // namespace

// The handler, timed, counted and logged (one line per request, request_log.h).
static void log_handled(ServerContext& ctx, const httplib::Request& req, const httplib::Response& res,
                 std::chrono::steady_clock::time_point start) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string route = route_label(req.path);
  // A handler that set a body but no status answers 200: httplib fills the
  // status in only when it writes the response, after this.
  const int status = res.status == -1 ? 200 : res.status;
  ctx.metrics.record({route, status});
  log_request(plain_request_line(req.method, route, status, seconds));
}
httplib::Server::Handler logged_route(ServerContext& ctx, httplib::Server::Handler handler) {
  return [&ctx, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    const auto start = std::chrono::steady_clock::now();
    handler(req, res);
    log_handled(ctx, req, res, start);
  };
}
// ... and a POST route with a JSON body (json_post_route.h). The time counts
// from the body read.
void post_logged_route(httplib::Server& http, ServerContext& ctx, std::string_view path, JsonPostHandler handler) {
  post_json_route(http, route_pattern(path), ctx.options.max_body_bytes,
                  [&ctx, handler = std::move(handler)](const httplib::Request& req, ParsedBody body,
                                                        httplib::Response& res) {
                    const auto start = std::chrono::steady_clock::now();
                    handler(req, std::move(body), res);
                    log_handled(ctx, req, res, start);
                  });
}

void install_info_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get(route_pattern("health"), logged_route(ctx, [&ctx](const httplib::Request&, httplib::Response& res) {
    std::optional<ApiError> err;
    if (ctx.models->folder_mode()) {
      // 200 while any model can be served: loaded, or loadable and not failed.
      if (ctx.draining.load()) {
        err = ApiError{503, "unavailable_error", "the server is shutting down", "", ""};
      } else if (const std::string why = ctx.models->unservable_reason(); !why.empty()) {
        err = ApiError{500, "server_error", why, "", ""};
      }
    } else {
      err = one_model_unavailable(ctx);
    }
    if (err) {
      // /health reports failure as 503 too: load balancers only read the
      // status. A failure (500 elsewhere) will not pass: no Retry-After.
      send_error(res, {503, "unavailable_error", err->message, "", ""});
      if (err->status != 503) res.headers.erase("Retry-After");
      return;
    }
    send_json(res, 200, {{"status", "ok"}});
  }));
  http.Get(route_pattern("metrics"), logged_route(ctx, [&ctx](const httplib::Request&, httplib::Response& res) {
    ModelTotals totals;
    const std::string per_model = ctx.models->render_metrics(totals);
    runtime::EngineStats stats;
    if (const auto serving = ctx.serving(); !ctx.models->folder_mode() && serving) {
      stats = serving->engine->stats();
    } else {
      // Over every model: ready when one is.
      stats.state = totals.n_ready > 0 ? runtime::EngineState::Ready : runtime::EngineState::Loading;
      stats.requests_running = totals.requests_running;
      stats.requests_waiting = totals.requests_waiting;
      stats.prompt_tokens_total = totals.prompt_tokens_total;
      stats.cached_tokens_total = totals.cached_tokens_total;
      stats.generated_tokens_total = totals.generated_tokens_total;
      stats.steps_total = totals.steps_total;
      stats.context_shifts_total = totals.context_shifts_total;
      stats.draft_tokens_total = totals.draft_tokens_total;
      stats.draft_tokens_accepted_total = totals.draft_tokens_accepted_total;
      stats.kv_tokens_used = totals.kv_tokens_used;
      stats.kv_tokens_capacity = totals.kv_tokens_capacity;
    }
    res.set_content(ctx.metrics.render(stats, per_model), "text/plain; version=0.0.4");
  }));
  http.Get(route_pattern("models"), logged_route(ctx, [&ctx](const httplib::Request&, httplib::Response& res) {
    if (!ctx.models->folder_mode()) {
      // As before: 503 while the model loads at start, 500 once it failed.
      if (!ctx.serving()) {
        if (auto err = one_model_unavailable(ctx)) return send_error(res, *err);
      }
    }
    send_json(res, 200, models_list(ctx));
  }));
  // GET /v1/models/ID (the SDKs' models.retrieve): one model, by name or
  // alias; an unknown one is the 404 a request naming it gets.
  http.Get(route_pattern("models") + "/+([^?]+?)/*", logged_route(ctx, [&ctx](const httplib::Request& req,
                                                                             httplib::Response& res) {
    if (!ctx.models->folder_mode() && !ctx.serving()) {
      if (auto err = one_model_unavailable(ctx)) return send_error(res, *err);
    }
    std::optional<ApiError> error;
    const std::string name = ctx.models->resolve(req.matches[1].str(), error);
    if (error) return send_error(res, *error);
    for (const auto& m : ctx.models->list()) {
      if (m.name == name) return send_json(res, 200, model_entry(ctx, m));
    }
    send_error(res, {404, "invalid_request_error", "model '" + req.matches[1].str() + "' does not exist",
                     "model_not_found", "model"});
  }));
  http.Get(route_pattern("props"), logged_route(ctx, [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto lease = require_model(ctx, req, nullptr, res);
    if (!lease) return;
    const ServingModel* serving = &lease->model();
    const auto& m = *serving->model;
    const auto& s = m.spec;
    const auto& v = m.tokenizer->vocab();
    const auto& engine_options = serving->engine->options();
    send_json(res, 200,
              {{"model", serving->model_id},
               {"model_path", m.file.path()},
               {"n_ctx", serving->engine->n_ctx()},
               {"n_ctx_train", s.n_ctx_train},
               {"n_parallel", engine_options.n_parallel},
               {"n_vocab", s.n_vocab},
               {"n_embd", s.n_embd},
               {"n_layer", s.n_layer},
               {"ffn_form", model::ffn_form_name(s.ffn_form)},
               {"modalities", {{"vision", serving->vision != nullptr}, {"audio", false}}},
               {"chat_template", serving->chat_template ? json(serving->chat_template->source()) : json(nullptr)},
               {"bos_token", v.bos_id >= 0 ? json(m.tokenizer->token_to_piece(v.bos_id, true)) : json(nullptr)},
               {"eos_token", v.eos_id >= 0 ? json(m.tokenizer->token_to_piece(v.eos_id, true)) : json(nullptr)}});
  }));
  // llama.cpp's /tokenize ({"content", "add_special", "parse_special",
  // "with_pieces"} -> {"tokens"}) and vLLM's ({"prompt", "add_special_tokens"}
  // or {"messages", "add_generation_prompt"} -> {"tokens", "count",
  // "max_model_len"}); every answer carries all three fields.
  post_logged_route(http, ctx, "tokenize", [&ctx](const httplib::Request& req, ParsedBody parsed, httplib::Response& res) {
    json body;
    if (!parse_object(std::move(parsed), res, body)) return;
    auto lease = require_model(ctx, req, &body, res);
    if (!lease) return;
    const ServingModel* serving = &lease->model();
    const text::Tokenizer& tokenizer = *serving->model->tokenizer;
    bool ok = true;
    const bool with_pieces = optional_bool(body, "with_pieces", false, ok, res);
    if (!ok) return;
    std::vector<text::TokenId> ids;
    if (body.contains("messages") && !body.contains("content") && !body.contains("prompt")) {
      auto parsed = parse_chat_request(body, request_limits(serving->options, *serving));
      if (parsed.error) return send_error(res, *parsed.error);
      auto chat = tokenize_chat(*parsed.request, *serving, /*image_rows=*/false);
      if (chat.error) return send_error(res, *chat.error);
      ids = std::move(chat.ids);
    } else {
      const bool vllm = !body.contains("content");
      const char* field = vllm ? "prompt" : "content";
      auto it = body.find(field);
      if (it == body.end() || !it->is_string()) {
        send_error(res, {400, "invalid_request_error",
                         "'content' (or 'prompt', or 'messages') must be a string (an array of messages)", "", field});
        return;
      }
      text::EncodeOptions opt;
      // vLLM adds BOS unless told not to; llama.cpp only when asked.
      opt.add_special = vllm ? optional_bool(body, "add_special_tokens", true, ok, res)
                             : optional_bool(body, "add_special", false, ok, res);
      if (ok) opt.parse_special = optional_bool(body, "parse_special", true, ok, res);
      if (!ok) return;
      ids = tokenizer.encode(it->get_ref<const std::string&>(), opt);
    }
    json tokens = json(ids);
    if (with_pieces) {
      // llama.cpp's shape: each token with its piece, a string when the piece
      // is valid UTF-8 on its own, else its byte values.
      tokens = json::array();
      for (const auto id : ids) {
        const std::string piece = tokenizer.token_to_piece(id, true);
        json piece_json =
            text::utf8_is_valid(piece) ? json(piece) : json(std::vector<uint8_t>(piece.begin(), piece.end()));
        tokens.push_back({{"id", id}, {"piece", std::move(piece_json)}});
      }
    }
    send_json(res, 200, {{"tokens", std::move(tokens)},
                         {"count", ids.size()},
                         {"max_model_len", serving->engine->n_ctx()}});
  });
  post_logged_route(http, ctx, "detokenize", [&ctx](const httplib::Request& req, ParsedBody parsed, httplib::Response& res) {
    json body;
    if (!parse_object(std::move(parsed), res, body)) return;
    auto lease = require_model(ctx, req, &body, res);
    if (!lease) return;
    const ServingModel* serving = &lease->model();
    auto it = body.find("tokens");
    const int64_t n_vocab = serving->model->spec.n_vocab;
    if (it == body.end() || !it->is_array()) {
      send_error(res, {400, "invalid_request_error", "'tokens' must be an array of token ids", "", "tokens"});
      return;
    }
    std::vector<text::TokenId> ids;
    ids.reserve(it->size());
    for (const auto& t : *it) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab) {
        send_error(res, {400, "invalid_request_error",
                         "'tokens' must hold integers in [0, " + std::to_string(n_vocab) + ")", "", "tokens"});
        return;
      }
      ids.push_back(static_cast<text::TokenId>(t.get<int64_t>()));
    }
    // "content": llama.cpp's field; "prompt": vLLM's.
    const std::string text = serving->model->tokenizer->decode(ids);
    send_json(res, 200, {{"content", text}, {"prompt", text}});
  });
}

}  // namespace tc::server
