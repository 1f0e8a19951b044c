// The prompt-size routes of the newer client APIs: Anthropic's POST
// /v1/messages/count_tokens ({"input_tokens"}) and OpenAI's POST
// /v1/responses/input_tokens ({"object": "response.input_tokens",
// "input_tokens"}). The body is translated as its generation route
// translates it (anthropic_schema.h, responses_schema.h; count_tokens
// needs no max_tokens) and the chat prompt rendered and tokenized as a
// generation would be (tokenize_chat), nothing generated.
#include <string>

#include "server/anthropic_schema.h"
#include "server/openai_responses.h"
#include "server/prompt_builder.h"
#include "server/responses_schema.h"
#include "server/route_paths.h"
#include "server/server_context.h"

namespace tc::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

enum class CountApi { Anthropic, Responses };

void count_tokens(CountApi api, ServerContext& ctx, ParsedBody parsed_body, httplib::Response& res) {
  const auto fail = [&](const ApiError& e) {
    if (api == CountApi::Responses) return send_error(res, e);
    res.status = e.status;
    res.set_content(dump_json(anthropic_error_body(e)), "application/json");
  };
  if (parsed_body.error) return fail(*parsed_body.error);
  ordered_json body = ordered_json::parse(parsed_body.text, nullptr, /*allow_exceptions=*/false);
  ordered_json chat;
  if (api == CountApi::Anthropic) {
    if (body.is_object() && !body.contains("max_tokens")) body["max_tokens"] = 1;  // not a field of count_tokens
    auto translated = translate_anthropic_request(body);
    if (translated.error) return fail(*translated.error);
    chat = std::move(translated.chat);
  } else {
    auto translated =
        translate_responses_request(body, [&ctx](const std::string& id) { return ctx.responses.conversation(id); });
    if (translated.error) return fail(*translated.error);
    chat = std::move(translated.chat);
  }
  chat.erase("stream");
  chat.erase("max_tokens");  // the context check is the generation's business
  const std::string requested = chat.contains("model") && chat["model"].is_string() ? chat["model"].get<std::string>()
                                                                                    : std::string();
  auto lease = lease_model(ctx, requested, res);
  if (!lease) return;
  const ServingModel& serving = lease->model();
  const auto parsed = parse_chat_request(json::parse(chat.dump()), request_limits(serving.options, serving));
  if (parsed.error) return fail(*parsed.error);
  const auto tokens = tokenize_chat(*parsed.request, serving, /*image_rows=*/false);
  if (tokens.error) return fail(*tokens.error);
  const auto n = static_cast<int64_t>(tokens.ids.size());
  send_json(res, 200,
            api == CountApi::Anthropic ? json{{"input_tokens", n}}
                                       : json{{"object", "response.input_tokens"}, {"input_tokens", n}});
}

}  // namespace

void install_token_count_routes(httplib::Server& http, ServerContext& ctx) {
  for (const auto& [path, api] : {std::pair{"messages/count_tokens", CountApi::Anthropic},
                                  std::pair{"responses/input_tokens", CountApi::Responses}}) {
    post_logged_route(http, ctx, path, [&ctx, api](const httplib::Request&, ParsedBody body, httplib::Response& res) {
      count_tokens(api, ctx, std::move(body), res);
    });
  }
}

}  // namespace tc::server
