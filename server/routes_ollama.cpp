// Ollama's API on the same port, as ollama/ollama's docs/api.md describes
// it: GET /api/version, /api/tags, /api/ps; POST /api/show, /api/generate
// and /api/chat (NDJSON streaming by default, `options` mapped onto our
// sampler, keep_alive); the model management routes (pull, push, create,
// copy, delete: models are files in the models folder) answer 501.
// /api/embed and /api/embeddings are in routes_embeddings.cpp.
// Errors are Ollama's {"error": "..."} with the HTTP status.
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "config/keep_alive.h"
#include "server/chat_history_fit.h"
#include "server/generation_job.h"
#include "server/response_schema.h"
#include "server/http/httplib_bridge.h"
#include "server/json_post_route.h"
#include "server/ollama_responses.h"
#include "server/ollama_schema.h"
#include "server/openai_schema.h"
#include "server/request_body.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

using nlohmann::json;

constexpr const char* kVersion = "0.1.0";  // thermocline's (cli/main.cpp --version)

void send_ollama_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  if (status == 503) res.set_header("Retry-After", "1");
  res.set_content(ollama_error_body(message), "application/json");
}

// "25.3M", "7.2B": Ollama's parameter_size.
std::string parameter_size(int64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e9) return fmt::format("{:.1f}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}K", v / 1e3);
  return std::to_string(n);
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

json details_json(const ModelFacts& f) {
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", f.arch},
          {"families", f.arch.empty() ? json(nullptr) : json::array({f.arch})},
          {"parameter_size", f.error.empty() ? parameter_size(f.n_params) : ""},
          {"quantization_level", upper(f.quantization)}};
}

std::string unix_rfc3339(int64_t seconds) {
  return rfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(seconds)));
}

json tag_json(const ModelInfo& m, const ModelFacts& f) {
  return {{"name", m.name},
          {"model", m.name},
          {"modified_at", unix_rfc3339(m.modified)},
          {"size", m.file_bytes},
          {"digest", m.digest},
          {"details", details_json(f)}};
}

// The model a request body names ("model", or "name" as older clients send).
std::string body_model(const json& body) {
  if (!body.is_object()) return {};
  for (const char* key : {"model", "name"}) {
    if (auto it = body.find(key); it != body.end() && it->is_string()) return it->get<std::string>();
  }
  return {};
}

// /api/generate or /api/chat.
void handle_ollama_generation(bool chat, ServerContext& ctx, const httplib::Request& req, ParsedBody parsed,
                              httplib::Response& res) {
  auto job = new_generation_job(ctx, req, Wire::Ollama, chat ? Endpoint::Chat : Endpoint::Completions, "ollama-");
  job->ollama.chat = chat;
  auto reject = [&](const ApiError& e) { job->reject(res, e); };
  if (job->refused_early(res, parsed)) return;
  auto request = std::make_shared<OllamaRequest>(chat ? translate_ollama_chat(parsed.json)
                                                      : translate_ollama_generate(parsed.json));
  // A schema in `format` is compiled from the text, in declared order.
  std::shared_ptr<const text::JsonSchema> schema;
  if (!request->error && parsed.json.is_object() && parsed.json.contains("format") &&
      parsed.json["format"].is_object()) {
    if (auto e = compile_response_schema(parsed.text, SchemaField::OllamaFormat, schema)) return reject(*e);
  }
  if (request->error) return reject(*request->error);

  if (request->load_only) {
    // No prompt: load the model (Ollama's preload), or unload it with keep_alive 0.
    std::optional<ApiError> error;
    const std::string name = ctx.models->resolve(request->model, error);
    if (error) return reject(*error);
    job->meta.model = name;
    job->ollama.model = name;
    const bool unload = request->keep_alive && !request->keep_alive->forever && request->keep_alive->duration.count() == 0;
    if (unload) {
      ctx.models->request_unload(name);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      auto lease = ctx.models->acquire(name, request->keep_alive, error, http::request_client_connected, kClientCheckInterval);
      if (!lease) {
        return reject(error.value_or(ApiError{503, "unavailable_error", "the model is not available", "", ""}));
      }
      job->ollama.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const json reply = ollama_load_reply(job->ollama, unload ? "unload" : "load");
    job->report();
    if (request->stream) {
      res.set_content(ndjson_line(reply), "application/x-ndjson");
    } else {
      res.set_content(dump_json(reply), "application/json");
    }
    res.status = 200;
    return;
  }

  job->slow_plan = !request->images.empty() || chat_body_has_images(request->openai);
  auto text = std::make_shared<const std::string>(std::move(parsed.text));  // its tools' schemas, in declared order
  PlanFunction plan = [request, schema, text](GenerationJob& job,
                                              const ServingModel& serving) -> std::optional<ApiError> {
    RequestLimits limits = request_limits(serving.options, serving);
    limits.context_shift = request->shift;  // Ollama's default (on), where the model allows it
    Plan p;
    if (request->completion) {
      auto parsed = parse_completion_request(request->openai, limits);
      if (parsed.error) return parsed.error;
      parsed.request->common.sampling.repeat_last_n = request->repeat_last_n;
      parsed.request->common.schema = schema;
      parsed.request->images = request->images;  // raw with images: their markers open the prompt
      // Ollama's num_predict -1: up to the context (with the shift on, one context's length).
      p = plan_completion(*parsed.request, serving, serving.options, std::numeric_limits<int32_t>::max());
    } else {
      auto parsed = parse_chat_request(request->openai, limits);
      if (parsed.error) return parsed.error;
      parsed.request->common.sampling.repeat_last_n = request->repeat_last_n;
      parsed.request->common.schema = schema;
      if (parsed.request->tools.active()) parsed.request->tools.grammar = tool_call_grammar(*text, parsed.request->tools);
      job.tools = parsed.request->tools;
      parsed.request->truncate = request->truncate;
      p = plan_chat_request(*parsed.request, serving, serving.options);
      job.take_reply_format(p);  // the translated body names its reasoning_format (think)
    }
    if (p.error) return p.error;
    job.stream = request->stream;
    job.planned = std::move(p.choices);
    return std::nullopt;
  };
  serve_generation(ctx, job, request->model, request->keep_alive, request->stream, std::move(plan), res);
}

json show_json(const ModelInfo& m, const ModelFacts& f, const ServingModel* serving) {
  std::string tmpl = f.chat_template;
  if (serving != nullptr && serving->chat_template) tmpl = serving->chat_template->source();
  json info = f.metadata.is_object() ? f.metadata : json::object();
  return {{"license", ""},
          {"modelfile", "# served by thermocline from " + m.path.string() + "\nFROM " + m.path.string() + "\n"},
          {"parameters", "temperature 0.8\ntop_k 40\ntop_p 0.9\nrepeat_penalty 1.1"},
          {"template", tmpl},
          {"details", details_json(f)},
          {"model_info", std::move(info)},
          {"capabilities", ollama_capabilities(f.arch, f.metadata, tmpl, f.fill_in_middle, m.vision)},
          {"modified_at", unix_rfc3339(m.modified)}};
}

}  // namespace

void install_ollama_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get(route_pattern("api/version"), logged_route(ctx, [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"version", kVersion}});
  }));
  http.Get(route_pattern("api/tags"), logged_route(ctx, [&ctx](const httplib::Request&, httplib::Response& res) {
    json models = json::array();
    for (const auto& m : ctx.models->list()) models.push_back(tag_json(m, ctx.models->facts(m.name)));
    send_json(res, 200, {{"models", std::move(models)}});
  }));
  http.Get(route_pattern("api/ps"), logged_route(ctx, [&ctx](const httplib::Request&, httplib::Response& res) {
    json models = json::array();
    for (const auto& m : ctx.models->list()) {
      if (m.state != ModelState::Loaded || !m.serving) continue;
      json entry = tag_json(m, ctx.models->facts(m.name));
      entry.erase("modified_at");
      entry["size"] = m.host_bytes + m.gpu_bytes;
      entry["size_vram"] = m.gpu_bytes;
      entry["context_length"] = m.serving->engine->n_ctx();
      // Kept for ever: a date far ahead, as Ollama shows keep_alive -1.
      entry["expires_at"] = m.expires_at ? rfc3339(*m.expires_at) : std::string("2318-11-17T00:00:00.000000000Z");
      models.push_back(std::move(entry));
    }
    send_json(res, 200, {{"models", std::move(models)}});
  }));
  post_logged_route(http, ctx, "api/show", [&ctx](const httplib::Request&, ParsedBody parsed, httplib::Response& res) {
    if (parsed.error) return send_ollama_error(res, parsed.error->status, parsed.error->message);
    const std::string requested = body_model(parsed.json);
    if (requested.empty()) return send_ollama_error(res, 400, "model is required");
    std::optional<ApiError> error;
    const std::string name = ctx.models->resolve(requested, error);
    if (error) return send_ollama_error(res, error->status, error->message);
    const auto info = ctx.models->info(name);
    if (!info) return send_ollama_error(res, 404, "model '" + requested + "' not found");
    const ModelFacts facts = ctx.models->facts(name);
    if (!facts.error.empty()) {
      return send_ollama_error(res, 500, "cannot read the model '" + name + "': " + facts.error);
    }
    send_json(res, 200, show_json(*info, facts, info->serving.get()));
  });
  for (const auto& [path, chat] : {std::pair{"api/generate", false}, std::pair{"api/chat", true}}) {
    post_json_route(http, route_pattern(path), ctx.options.max_body_bytes,
                    [&ctx, chat](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                      handle_ollama_generation(chat, ctx, req, std::move(body), res);
                    });
  }
  http.Delete(route_pattern("api/delete"), logged_route(ctx, [](const httplib::Request&, httplib::Response& res) {
    send_ollama_error(res, 501, "/api/delete is not supported: remove the model's .gguf file from the models folder");
  }));
  for (const char* path : {"api/pull", "api/push", "api/create", "api/copy"}) {
    post_logged_route(http, ctx, path, [&ctx](const httplib::Request& req, ParsedBody, httplib::Response& res) {
      send_ollama_error(res, 501,
                        canonical_route(req.path) +
                            " is not supported: models are the .gguf files of the models folder (" +
                            (ctx.options.models_dir.empty() ? std::string("serve --models-dir DIR")
                                                            : ctx.options.models_dir.string()) +
                            "); add, replace or remove files there");
    });
  }
}

}  // namespace tc::server
