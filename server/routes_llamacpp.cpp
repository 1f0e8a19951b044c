// llama.cpp's own routes on the same port, for clients written for
// llama-server: POST /completion (a prompt continued as it is: SillyTavern's
// llama.cpp mode, scripts) and POST /infill (code completion: llama.vim,
// llama.vscode; llama.cpp's repo-level fill-in-the-middle prompt,
// fill_in_middle.h). Bodies are translated by llamacpp_schema.h and planned
// as /v1/completions requests; answers are llama.cpp's native objects
// (native_responses.h). /infill on a model without FIM tokens is a 501
// not_supported_error, as in llama.cpp; other errors have OpenAI's shape.
#include <limits>
#include <memory>
#include <string>

#include "server/generation_job.h"
#include "server/json_post_route.h"
#include "server/llamacpp_schema.h"
#include "server/ollama_schema.h"
#include "server/request_body.h"
#include "server/response_schema.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

using nlohmann::json;

enum class Route { Completion, Infill };

void handle(Route route, ServerContext& ctx, const httplib::Request& req, ParsedBody parsed_body,
            httplib::Response& res) {
  auto job = new_generation_job(ctx, req, Wire::LlamaCpp, Endpoint::Completions, "cmpl-");
  auto reject = [&](const ApiError& e) { job->reject(res, e); };
  if (job->refused_early(res, parsed_body)) return;
  const json& body = parsed_body.json;
  auto request = std::make_shared<LlamaCppRequest>(route == Route::Infill ? translate_llamacpp_infill(body)
                                                                          : translate_llamacpp_completion(body));
  if (request->error) return reject(*request->error);
  std::shared_ptr<const text::JsonSchema> schema;
  if (request->openai.contains("response_format")) {
    if (auto e = compile_response_schema(parsed_body.text, SchemaField::JsonSchema, schema)) return reject(*e);
  }
  std::optional<config::KeepAlive> keep_alive;
  if (auto err = parse_keep_alive_field(body, keep_alive)) return reject(*err);

  job->slow_plan = !request->images.empty();  // images to encode: a stream gets its 200 and pings meanwhile
  PlanFunction plan = [route, request, schema](GenerationJob& job,
                                               const ServingModel& serving) -> std::optional<ApiError> {
    auto parsed = parse_completion_request(request->openai, request_limits(serving.options, serving));
    if (parsed.error) return parsed.error;
    CommonRequest& common = parsed.request->common;
    common.schema = schema;
    if (request->repeat_last_n) common.sampling.repeat_last_n = *request->repeat_last_n;
    parsed.request->images = request->images;  // their markers in the prompt string
    // llama.cpp's n_predict -1, the default: up to the context.
    constexpr int64_t kUpToContext = std::numeric_limits<int32_t>::max();
    bool truncated = false;
    Plan p = route == Route::Infill
                 ? plan_infill(common, request->fim, serving, serving.options, kUpToContext, truncated)
                 : plan_completion(*parsed.request, serving, serving.options, kUpToContext);
    if (p.error) return p.error;
    job.stream = common.stream;
    job.logprobs = common.logprobs;
    job.native = {job.meta.model, truncated, serving.engine->n_ctx(), request->n_predict};
    job.planned = std::move(p.choices);
    return std::nullopt;
  };
  serve_generation(ctx, job, request->model, keep_alive, request->stream, std::move(plan), res);
}

}  // namespace

void install_llamacpp_routes(httplib::Server& http, ServerContext& ctx) {
  for (const auto& [path, route] : {std::pair{"completion", Route::Completion}, std::pair{"infill", Route::Infill}}) {
    post_json_route(http, route_pattern(path), ctx.options.max_body_bytes,
                    [&ctx, route](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                      handle(route, ctx, req, std::move(body), res);
                    });
  }
}

}  // namespace tc::server
