// POST /v1/completions, /v1/chat/completions, /v1/responses (OpenAI's
// Responses API, translated into a chat request by responses_schema.h and
// answered by responses_stream.h) and /v1/messages (Anthropic's Messages
// API: anthropic_schema.h, anthropic_stream.h): validate, lease the model
// the request names (loading it if needed), plan (template, tokenize,
// context check), submit to the engine, then stream SSE chunks or write one
// JSON body. Everything that can fail with a 4xx happens before the 200
// (except for a stream whose model is still loading: its errors are stream
// events); a client that goes away cancels its choices within one step.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/anthropic_schema.h"
#include "server/chat_history_fit.h"
#include "server/generation_job.h"
#include "server/json_post_route.h"
#include "server/ollama_schema.h"
#include "server/openai_schema.h"
#include "server/request_body.h"
#include "server/response_schema.h"
#include "server/responses_schema.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

using nlohmann::json;

void handle_generation(Endpoint endpoint, Wire wire, ServerContext& ctx, const httplib::Request& req,
                       ParsedBody parsed_body, httplib::Response& res) {
  const char* id_prefix = wire == Wire::Responses   ? "resp_"
                          : wire == Wire::Anthropic ? "msg_"
                          : endpoint == Endpoint::Chat ? "chatcmpl-"
                                                       : "cmpl-";
  auto job = new_generation_job(ctx, req, wire, endpoint, id_prefix);
  job->meta.created = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  job->meta.system_fingerprint = "thermocline";
  auto reject = [&](const ApiError& e) { job->reject(res, e); };
  if (job->refused_early(res, parsed_body)) return;
  if (wire == Wire::Responses) {
    // From here on the request is the chat request it means.
    const auto ordered = nlohmann::ordered_json::parse(parsed_body.text, nullptr, /*allow_exceptions=*/false);
    auto translated =
        translate_responses_request(ordered, [&ctx](const std::string& id) { return ctx.responses.conversation(id); });
    if (translated.error) return reject(*translated.error);
    job->responses_meta = {job->meta.id, job->meta.created, "", std::move(translated.echo),
                           std::move(translated.conversation), translated.store};
    parsed_body.text = translated.chat.dump();
    parsed_body.json = json::parse(parsed_body.text);
  } else if (wire == Wire::Anthropic) {
    const auto ordered = nlohmann::ordered_json::parse(parsed_body.text, nullptr, /*allow_exceptions=*/false);
    auto translated = translate_anthropic_request(ordered);
    if (translated.error) return reject(*translated.error);
    parsed_body.text = translated.chat.dump();
    parsed_body.json = json::parse(parsed_body.text);
  }
  auto body = std::make_shared<const json>(std::move(parsed_body.json));
  if (!body->is_object()) return reject(invalid_request("request body must be a JSON object"));
  // A response schema is compiled from the text, in declared order.
  std::shared_ptr<const text::JsonSchema> schema;
  if (auto rf = body->find("response_format");
      rf != body->end() && rf->is_object() && rf->value("type", "") == "json_schema") {
    if (auto e = compile_response_schema(parsed_body.text, SchemaField::ResponseFormat, schema)) return reject(*e);
  }

  // Which model, and for how long it stays loaded (keep_alive: an Ollama
  // extension), before anything that needs the model.
  std::string requested;
  if (auto it = body->find("model"); it != body->end() && !it->is_null()) {
    if (!it->is_string()) return reject(invalid_request("'model' must be a string", "model"));
    requested = it->get<std::string>();
  }
  std::optional<config::KeepAlive> keep_alive;
  if (auto err = parse_keep_alive_field(*body, keep_alive)) return reject(*err);
  const auto stream_it = body->find("stream");
  const bool stream = stream_it != body->end() && stream_it->is_boolean() && stream_it->get<bool>();

  job->slow_plan = endpoint == Endpoint::Chat && chat_body_has_images(*body);
  auto text = std::make_shared<const std::string>(std::move(parsed_body.text));
  PlanFunction plan = [endpoint, body, schema, text](GenerationJob& job,
                                                     const ServingModel& serving) -> std::optional<ApiError> {
    const RequestLimits limits = request_limits(serving.options, serving);
    Plan p;
    CommonRequest common;
    if (endpoint == Endpoint::Chat) {
      auto parsed = parse_chat_request(*body, limits);
      if (parsed.error) return parsed.error;
      parsed.request->common.schema = schema;
      // The calls' grammar, with each function's parameters: forced calls,
      // and a model's own calls when it may call tools (a lazy form).
      if (parsed.request->tools.active()) parsed.request->tools.grammar = tool_call_grammar(*text, parsed.request->tools);
      common = parsed.request->common;
      job.tools = parsed.request->tools;
      p = plan_chat_request(*parsed.request, serving, serving.options);
      job.take_reply_format(p);
    } else {
      auto parsed = parse_completion_request(*body, limits);
      if (parsed.error) return parsed.error;
      parsed.request->common.schema = schema;
      common = parsed.request->common;
      p = plan_completion(*parsed.request, serving, serving.options);
    }
    if (p.error) return p.error;
    job.stream = common.stream;
    job.include_usage = common.include_usage;
    job.logprobs = common.logprobs;
    job.planned = std::move(p.choices);
    return std::nullopt;
  };
  serve_generation(ctx, job, requested, keep_alive, stream, std::move(plan), res);
}

}  // namespace

void install_generation_routes(httplib::Server& http, ServerContext& ctx) {
  struct Route {
    const char* path;
    Endpoint endpoint;
    Wire wire;
  };
  for (const Route& r : {Route{"chat/completions", Endpoint::Chat, Wire::OpenAI},
                         Route{"completions", Endpoint::Completions, Wire::OpenAI},
                         Route{"responses", Endpoint::Chat, Wire::Responses},
                         Route{"messages", Endpoint::Chat, Wire::Anthropic}}) {
    post_json_route(http, route_pattern(r.path), ctx.options.max_body_bytes,
                    [&ctx, r](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                      handle_generation(r.endpoint, r.wire, ctx, req, std::move(body), res);
                    });
  }
  // A stored response (response_store.h): GET gives it, DELETE forgets it.
  const std::string stored = route_pattern("responses") + "/+([^/?]+)/*";
  const auto not_found = [](const std::string& id) {
    return ApiError{404, "invalid_request_error",
                    "response '" + id + "' was not found (responses are kept in memory until the server stops)",
                    "not_found", "response_id"};
  };
  http.Get(stored, logged_route(ctx, [&ctx, not_found](const httplib::Request& req, httplib::Response& res) {
    const auto entry = ctx.responses.get(req.matches[1].str());
    if (!entry) return send_error(res, not_found(req.matches[1].str()));
    send_json(res, 200, entry->response);
  }));
  http.Delete(stored, logged_route(ctx, [&ctx, not_found](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1].str();
    if (!ctx.responses.erase(id)) return send_error(res, not_found(id));
    send_json(res, 200, {{"id", id}, {"object", "response"}, {"deleted", true}});
  }));
}

}  // namespace tc::server
