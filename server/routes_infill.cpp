// POST /infill: llama.cpp's code-completion route, as its editor plugins
// (llama.vim, llama.vscode) call it. The body's input_prefix and
// input_suffix (required strings), input_extra (other files: [{"filename",
// "text"}]) and prompt (text the middle starts with) make llama.cpp's
// repo-level fill-in-the-middle prompt (fill_in_middle.h); n_predict (or
// max_tokens; -1 or absent: up to the context), temperature, top_k, top_p,
// min_p, seed, stop, the penalties and stream are the completion's, with
// llama.cpp's server defaults where absent. Other fields (cache_prompt,
// samplers, t_max_*_ms, ...) are ignored. The answer is llama.cpp's native
// completion object (infill_responses.h); a model without FIM tokens is a
// 501 not_supported_error, as in llama.cpp.
#include <limits>
#include <memory>
#include <string>

#include "server/generation_job.h"
#include "server/json_post_route.h"
#include "server/ollama_schema.h"
#include "server/request_body.h"
#include "server/route_paths.h"

namespace tc::server {
namespace {

using nlohmann::json;

// A field that is missing or of the wrong shape: the 400 to answer.
struct BadField {
  ApiError error;
};

// llama.cpp's server sampling defaults, for fields the body leaves out.
const json& llamacpp_defaults() {
  static const json kDefaults = {{"temperature", 0.8}, {"top_k", 40}, {"top_p", 0.95}, {"min_p", 0.05}};
  return kDefaults;
}

// The completion fields of a /infill body, as /v1/completions reads them.
json completion_fields(const json& body) {
  json out = llamacpp_defaults();
  for (const char* key : {"model", "temperature", "top_k", "top_p", "min_p", "seed", "stop", "repeat_penalty",
                          "presence_penalty", "frequency_penalty", "stream", "ignore_eos", "max_tokens"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) out[key] = *it;
  }
  if (auto it = body.find("n_predict"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer()) throw BadField{invalid_request("'n_predict' must be an integer", "n_predict")};
    if (it->get<int64_t>() >= 0) out["max_tokens"] = *it;  // -1: up to the context
  }
  out["prompt"] = "";  // the FIM prompt is built apart
  return out;
}

std::string required_string(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) throw BadField{invalid_request(std::string("'") + key + "' is required", key)};
  if (!it->is_string()) throw BadField{invalid_request(std::string("'") + key + "' must be a string", key)};
  return it->get<std::string>();
}

FimInput read_infill_input(const json& body) {
  FimInput in;
  in.repo_level = true;
  in.prefix = required_string(body, "input_prefix");
  in.suffix = required_string(body, "input_suffix");
  if (auto it = body.find("prompt"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw BadField{invalid_request("'prompt' must be a string", "prompt")};
    in.middle_start = it->get<std::string>();
  }
  if (auto it = body.find("input_extra"); it != body.end() && !it->is_null()) {
    const char* kShape = "'input_extra' must be an array of {\"filename\": string, \"text\": string}";
    if (!it->is_array()) throw BadField{invalid_request(kShape, "input_extra")};
    for (const json& chunk : *it) {
      if (!chunk.is_object() || !chunk.contains("text") || !chunk["text"].is_string()) {
        throw BadField{invalid_request(kShape, "input_extra")};
      }
      FimFile file{"tmp", chunk["text"].get<std::string>()};
      if (auto name = chunk.find("filename"); name != chunk.end() && !name->is_null()) {
        if (!name->is_string()) throw BadField{invalid_request(kShape, "input_extra")};
        file.filename = name->get<std::string>();
      }
      in.extra.push_back(std::move(file));
    }
  }
  return in;
}

void handle_infill(ServerContext& ctx, const httplib::Request& req, ParsedBody parsed_body, httplib::Response& res) {
  auto job = std::make_shared<GenerationJob>();
  job->ctx = &ctx;
  job->wire = Wire::LlamaCpp;
  job->route = canonical_route(req.path);
  job->meta.endpoint = Endpoint::Completions;
  job->meta.id = "cmpl-" + random_id(ctx);
  auto reject = [&](const ApiError& e) { job->reject(res, e); };
  if (job->refused_early(res, parsed_body)) return;
  const json& body = parsed_body.json;
  if (!body.is_object()) return reject(invalid_request("request body must be a JSON object"));
  auto input = std::make_shared<FimInput>();
  auto fields = std::make_shared<json>();
  try {
    *input = read_infill_input(body);
    *fields = completion_fields(body);
  } catch (const BadField& e) {
    return reject(e.error);
  }
  std::optional<config::KeepAlive> keep_alive;
  if (auto err = parse_keep_alive_field(body, keep_alive)) return reject(*err);
  const std::string requested = fields->value("model", "");
  const bool stream = fields->value("stream", false);
  int64_t n_predict = -1;
  if (auto it = body.find("n_predict"); it != body.end() && it->is_number_integer()) n_predict = it->get<int64_t>();

  PlanFunction plan = [input, fields, n_predict](GenerationJob& job,
                                                 const ServingModel& serving) -> std::optional<ApiError> {
    auto parsed = parse_completion_request(*fields, request_limits(serving.options, serving));
    if (parsed.error) return parsed.error;
    const CommonRequest& common = parsed.request->common;
    bool truncated = false;
    Plan p = plan_infill(common, *input, serving, serving.options, std::numeric_limits<int32_t>::max(), truncated);
    if (p.error) return p.error;
    job.stream = common.stream;
    job.infill = {job.meta.model, truncated, serving.engine->n_ctx(), n_predict};
    job.planned = std::move(p.choices);
    return std::nullopt;
  };
  serve_generation(ctx, job, requested, keep_alive, stream, std::move(plan), res);
}

}  // namespace

void install_infill_routes(httplib::Server& http, ServerContext& ctx) {
  post_json_route(http, route_pattern("infill"), ctx.options.max_body_bytes,
                  [&ctx](const httplib::Request& req, ParsedBody body, httplib::Response& res) {
                    handle_infill(ctx, req, std::move(body), res);
                  });
}

}  // namespace tc::server
