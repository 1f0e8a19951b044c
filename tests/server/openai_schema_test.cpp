// Request parsing: every field's type and range checks, nulls as absent,
// unknown fields ignored, the malformed `messages` matrix of openai-api.md.
#include <catch2/catch.hpp>

#include "server/openai_schema.h"

using nlohmann::json;
using namespace tc::server;

namespace {

RequestLimits limits() {
  RequestLimits l;
  l.max_tokens_cap = 1000;
  l.max_n = 4;
  l.max_stop = 3;
  l.max_stop_bytes = 8;
  l.max_top_logprobs = 5;
  l.n_vocab = 100;
  return l;
}

json chat(json extra = json::object()) {
  json body = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

// The param the 400 names, or "ok".
std::string chat_error_param(const json& body) {
  auto p = parse_chat_request(body, limits());
  if (!p.error) return "ok";
  CHECK(p.error->status == 400);
  CHECK(p.error->type == "invalid_request_error");
  CHECK_FALSE(p.error->message.empty());
  return p.error->param;
}

std::string completion_error_param(const json& body) {
  auto p = parse_completion_request(body, limits());
  if (!p.error) return "ok";
  CHECK(p.error->status == 400);
  return p.error->param;
}

}  // namespace

TEST_CASE("chat request: fields parse into sampling params", "[server][schema]") {
  auto p = parse_chat_request(chat({{"temperature", 0.5},
                                    {"top_p", 0.9},
                                    {"top_k", 7},
                                    {"min_p", 0.1},
                                    {"xtc_probability", 0.5},
                                    {"xtc_threshold", 0.2},
                                    {"top_n_sigma", 1.5},
                                    {"dynatemp_range", 0.3},
                                    {"dynatemp_exponent", 2.0},
                                    {"typical_p", 0.9},
                                    {"mirostat", 2},
                                    {"mirostat_tau", 4.0},
                                    {"mirostat_eta", 0.2},
                                    {"dry_multiplier", 0.8},
                                    {"dry_base", 1.5},
                                    {"dry_allowed_length", 3},
                                    {"dry_penalty_last_n", 256},
                                    {"dry_sequence_breakers", {"\n", "###"}},
                                    {"presence_penalty", 0.5},
                                    {"frequency_penalty", -0.5},
                                    {"repeat_penalty", 1.1},
                                    {"seed", 42},
                                    {"n", 2},
                                    {"max_tokens", 20},
                                    {"stop", "END"},
                                    {"logit_bias", {{"5", -100}, {"7", 2.5}}},
                                    {"logprobs", true},
                                    {"top_logprobs", 3},
                                    {"stream", true},
                                    {"stream_options", {{"include_usage", true}}},
                                    {"some_unknown_field", {1, 2, 3}}}),
                              limits());
  REQUIRE_FALSE(p.error);
  const auto& c = p.request->common;
  CHECK(c.sampling.temperature == Approx(0.5));
  CHECK(c.sampling.top_p == Approx(0.9));
  CHECK(c.sampling.top_k == 7);
  CHECK(c.sampling.min_p == Approx(0.1));
  CHECK(c.sampling.xtc_probability == Approx(0.5));
  CHECK(c.sampling.xtc_threshold == Approx(0.2));
  CHECK(c.sampling.top_n_sigma == Approx(1.5));
  CHECK(c.sampling.dynatemp_range == Approx(0.3));
  CHECK(c.sampling.dynatemp_exponent == Approx(2.0));
  CHECK(c.sampling.typical_p == Approx(0.9));
  CHECK(c.sampling.mirostat == 2);
  CHECK(c.sampling.mirostat_tau == Approx(4.0));
  CHECK(c.sampling.mirostat_eta == Approx(0.2));
  CHECK(c.sampling.dry_multiplier == Approx(0.8));
  CHECK(c.sampling.dry_base == Approx(1.5));
  CHECK(c.sampling.dry_allowed_length == 3);
  CHECK(c.sampling.dry_penalty_last_n == 256);
  CHECK(c.sampling.dry_sequence_breakers == std::vector<std::string>{"\n", "###"});
  CHECK(c.sampling.presence_penalty == Approx(0.5));
  CHECK(c.sampling.frequency_penalty == Approx(-0.5));
  CHECK(c.sampling.repeat_penalty == Approx(1.1));
  CHECK(c.has_seed);
  CHECK(c.sampling.seed == 42);
  CHECK(c.n == 2);
  CHECK(c.max_tokens == 20);
  CHECK(c.stop == std::vector<std::string>{"END"});
  CHECK(c.sampling.logit_bias.at(5) == -100);
  CHECK(c.sampling.logit_bias.at(7) == Approx(2.5));
  CHECK(c.logprobs);
  CHECK(c.sampling.n_probs == 3);
  CHECK(c.stream);
  CHECK(c.include_usage);
  CHECK(p.request->messages.size() == 1);
}

TEST_CASE("chat request: null means absent, max_completion_tokens wins", "[server][schema]") {
  auto p = parse_chat_request(chat({{"temperature", nullptr},
                                    {"top_p", nullptr},
                                    {"stop", nullptr},
                                    {"seed", nullptr},
                                    {"n", nullptr},
                                    {"max_tokens", 10},
                                    {"max_completion_tokens", 30},
                                    {"stream_options", nullptr},
                                    {"logprobs", nullptr}}),
                              limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->common.sampling.temperature == 1.0f);
  CHECK_FALSE(p.request->common.has_seed);
  CHECK(p.request->common.n == 1);
  CHECK(p.request->common.max_tokens == 30);
  CHECK(p.request->common.stop.empty());
}

TEST_CASE("chat request: truncate (an extension) is off unless asked for", "[server][schema]") {
  CHECK_FALSE(parse_chat_request(chat(), limits()).request->truncate);
  CHECK(parse_chat_request(chat({{"truncate", true}}), limits()).request->truncate);
}

TEST_CASE("context_shift and n_keep (extensions): the server's default, models that cannot shift, the cap while shifting",
          "[server][schema][context_shift]") {
  RequestLimits l = limits();
  l.max_tokens_cap_shifting = 5000;
  auto parse = [&](const json& extra) { return parse_chat_request(chat(extra), l); };
  CHECK_FALSE(parse({}).request->common.context_shift);
  CHECK(parse({}).request->common.n_keep == 4);
  CHECK(parse({{"context_shift", true}}).request->common.context_shift);
  CHECK(parse({{"n_keep", -1}}).request->common.n_keep == -1);
  CHECK(parse({{"n_keep", 0}}).request->common.n_keep == 0);
  // Shifting, the context no longer bounds max_tokens: the shifting cap does.
  CHECK(parse({{"max_tokens", 3000}}).error->param == "max_tokens");
  CHECK_FALSE(parse({{"max_tokens", 3000}, {"context_shift", true}}).error);
  CHECK(parse({{"max_tokens", 6000}, {"context_shift", true}}).error->param == "max_tokens");
  l.context_shift = true;  // the server's default
  CHECK(parse({}).request->common.context_shift);
  CHECK_FALSE(parse({{"context_shift", false}}).request->common.context_shift);
  l.context_shift_refusal = "this model cannot";
  // A model that cannot shift: requests run without it, and a max_tokens
  // that would need it is a 400 saying why.
  CHECK_FALSE(parse({}).request->common.context_shift);
  CHECK_FALSE(parse({{"context_shift", true}}).request->common.context_shift);
  const auto refused = parse({{"context_shift", true}, {"max_tokens", 3000}});
  REQUIRE(refused.error);
  CHECK(refused.error->param == "max_tokens");
  CHECK_THAT(refused.error->message, Catch::Contains("this model cannot"));
  CHECK_THAT(parse({{"max_tokens", 3000}, {"context_shift", false}}).error->message,
             !Catch::Contains("this model cannot"));
  CHECK(parse({{"context_shift", "yes"}}).error->param == "context_shift");
  CHECK(parse({{"n_keep", -2}}).error->param == "n_keep");
  CHECK(parse({{"n_keep", 1.5}}).error->param == "n_keep");
}

TEST_CASE("draft_max (an extension): absent is the server's default, 0..256, else a 400 naming it",
          "[server][schema][lookup_draft]") {
  auto parse = [&](const json& extra) { return parse_chat_request(chat(extra), limits()); };
  CHECK(parse({}).request->common.draft_max == -1);
  CHECK(parse({{"draft_max", 0}}).request->common.draft_max == 0);
  CHECK(parse({{"draft_max", 16}}).request->common.draft_max == 16);
  CHECK(parse({{"draft_max", 256}}).request->common.draft_max == 256);
  CHECK(parse({{"draft_max", nullptr}}).request->common.draft_max == -1);
  CHECK(parse({{"draft_max", -1}}).error->param == "draft_max");
  CHECK(parse({{"draft_max", 257}}).error->param == "draft_max");
  CHECK(parse({{"draft_max", "8"}}).error->param == "draft_max");
  CHECK(parse({{"draft_max", 2.5}}).error->param == "draft_max");
  const auto c = parse_completion_request({{"prompt", "x"}, {"draft_max", 4}}, limits());
  REQUIRE_FALSE(c.error);
  CHECK(c.request->common.draft_max == 4);
}

TEST_CASE("chat request: wrong types and bad values name the field", "[server][schema]") {
  CHECK(chat_error_param(chat({{"temperature", "hot"}})) == "temperature");
  CHECK(chat_error_param(chat({{"temperature", 2.5}})) == "temperature");
  CHECK(chat_error_param(chat({{"top_p", 0}})) == "top_p");
  CHECK(chat_error_param(chat({{"top_k", 1.5}})) == "top_k");
  CHECK(chat_error_param(chat({{"n", 0}})) == "n");
  CHECK(chat_error_param(chat({{"n", 5}})) == "n");  // over the cap
  CHECK(chat_error_param(chat({{"max_tokens", 0}})) == "max_tokens");
  CHECK(chat_error_param(chat({{"max_tokens", 1001}})) == "max_tokens");
  CHECK(chat_error_param(chat({{"max_tokens", 1e300}})) == "max_tokens");
  CHECK(chat_error_param(chat({{"max_tokens", 18446744073709551615ull}})) == "max_tokens");
  CHECK(chat_error_param(chat({{"stop", 5}})) == "stop");
  CHECK(chat_error_param(chat({{"stop", {"a", 1}}})) == "stop");
  CHECK(chat_error_param(chat({{"stop", {"a", "b", "c", "d"}}})) == "stop");
  CHECK(chat_error_param(chat({{"stop", "123456789"}})) == "stop");
  CHECK(chat_error_param(chat({{"logit_bias", {{"abc", 1}}}})) == "logit_bias");
  CHECK(chat_error_param(chat({{"logit_bias", {{"100", 1}}}})) == "logit_bias");
  CHECK(chat_error_param(chat({{"logit_bias", {{"3", 101}}}})) == "logit_bias");
  CHECK(chat_error_param(chat({{"stream", "yes"}})) == "stream");
  CHECK(chat_error_param(chat({{"stream_options", {{"include_usage", true}}}})) == "stream_options");
  CHECK(chat_error_param(chat({{"logprobs", 1}})) == "logprobs");
  CHECK(chat_error_param(chat({{"top_logprobs", 2}})) == "top_logprobs");  // without logprobs
  CHECK(chat_error_param(chat({{"logprobs", true}, {"top_logprobs", 6}})) == "top_logprobs");
  CHECK(chat_error_param(chat({{"seed", "1"}})) == "seed");
  CHECK(chat_error_param(chat({{"model", 3}})) == "model");
  CHECK(chat_error_param(chat({{"user", 3}})) == "user");
  CHECK(chat_error_param(chat({{"truncate", "yes"}})) == "truncate");
  // Integral floats are integers (JavaScript clients).
  CHECK(chat_error_param(chat({{"max_tokens", 12.0}})) == "ok");
  CHECK(chat_error_param(chat({{"logprobs", true}, {"top_logprobs", 0}})) == "ok");
}

TEST_CASE("chat request: the malformed messages matrix", "[server][schema]") {
  auto with_messages = [](json messages) {
    json body = {{"model", "m"}};
    body["messages"] = std::move(messages);
    return body;
  };
  CHECK(chat_error_param(json{{"model", "m"}}) == "messages");
  CHECK(chat_error_param(with_messages(nullptr)) == "messages");
  CHECK(chat_error_param(with_messages("hello")) == "messages");
  CHECK(chat_error_param(with_messages(json::array())) == "messages");
  CHECK(chat_error_param(with_messages({123})) == "messages");
  CHECK(chat_error_param(with_messages({json::object()})) == "messages");
  CHECK(chat_error_param(with_messages({{{"role", 123}, {"content", "x"}}})) == "messages");
  CHECK(chat_error_param(with_messages({{{"role", "user"}, {"content", 123}}})) == "messages");
  CHECK(chat_error_param(with_messages({{{"role", "wizard"}, {"content", "x"}}})) == "messages");
  CHECK(chat_error_param(with_messages({{{"role", "user"}}})) == "messages");
  CHECK(chat_error_param(with_messages({{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}})) == "messages");
  CHECK(chat_error_param(chat({{"messages", 5}})) == "messages");
  CHECK(chat_error_param(json::array()) == "");  // not an object at all
}

TEST_CASE("chat request: content parts join, tool-call messages may have null content", "[server][schema]") {
  json messages = {{{"role", "system"}, {"content", "be brief"}},
                   {{"role", "user"},
                    {"content", {{{"type", "text"}, {"text", "one"}}, {{"type", "text"}, {"text", "two"}}}}},
                   {{"role", "assistant"},
                    {"content", nullptr},
                    {"tool_calls",
                     json::array({{{"id", "c1"},
                                   {"type", "function"},
                                   {"function", {{"name", "f"}, {"arguments", "{\"x\": 1}"}}}}})}},
                   {{"role", "tool"}, {"content", "42"}, {"tool_call_id", "c1"}}};
  auto p = parse_chat_request({{"messages", messages}}, limits());
  REQUIRE_FALSE(p.error);
  const auto& m = p.request->messages;
  CHECK(m[1]["content"] == "one\ntwo");
  CHECK(m[2]["content"].is_null());
  CHECK(m[2]["tool_calls"][0]["function"]["arguments"] == json{{"x", 1}});  // the string's object, for templates
  CHECK(m[3]["tool_call_id"] == "c1");
}

TEST_CASE("completion request: prompt shapes", "[server][schema]") {
  auto p = parse_completion_request({{"prompt", "hello"}}, limits());
  REQUIRE_FALSE(p.error);
  REQUIRE(p.request->prompts.size() == 1);
  CHECK(std::get<std::string>(p.request->prompts[0]) == "hello");

  p = parse_completion_request({{"prompt", {1, 2, 3}}}, limits());
  REQUIRE_FALSE(p.error);
  CHECK(std::get<std::vector<int32_t>>(p.request->prompts[0]) == std::vector<int32_t>{1, 2, 3});

  p = parse_completion_request({{"prompt", {"a", "b"}}}, limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->prompts.size() == 2);

  p = parse_completion_request({{"prompt", {{1, 2}, {3}}}}, limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->prompts.size() == 2);

  CHECK(completion_error_param(json{{"max_tokens", 3}}) == "prompt");
  CHECK(completion_error_param({{"prompt", 5}}) == "prompt");
  CHECK(completion_error_param({{"prompt", json::array()}}) == "prompt");
  CHECK(completion_error_param({{"prompt", {1, 100}}}) == "prompt");  // id out of the vocab
  CHECK(completion_error_param({{"prompt", {1, -1}}}) == "prompt");
  CHECK(completion_error_param({{"prompt", {{1}, json::array()}}}) == "prompt");
  CHECK(completion_error_param({{"prompt", {"a", 1.5}}}) == "prompt");
  // Prompts times n over the cap.
  CHECK(completion_error_param({{"prompt", {"a", "b", "c"}}, {"n", 2}}) == "n");
}

TEST_CASE("completion request: legacy logprobs and echo", "[server][schema]") {
  auto p = parse_completion_request({{"prompt", "x"}, {"logprobs", 2}}, limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->common.logprobs);
  CHECK(p.request->common.sampling.n_probs == 2);
  p = parse_completion_request({{"prompt", "x"}, {"logprobs", 0}}, limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->common.logprobs);
  CHECK(p.request->common.sampling.n_probs == 0);
  p = parse_completion_request({{"prompt", "x"}, {"logprobs", nullptr}, {"echo", true}}, limits());
  REQUIRE_FALSE(p.error);
  CHECK_FALSE(p.request->common.logprobs);
  CHECK(p.request->echo);
  CHECK(completion_error_param({{"prompt", "x"}, {"logprobs", 6}}) == "logprobs");
  CHECK(completion_error_param({{"prompt", "x"}, {"logprobs", true}}) == "logprobs");
  CHECK(completion_error_param({{"prompt", "x"}, {"echo", "yes"}}) == "echo");
  // A suffix is read (fill in the middle; whether the model can is the plan's
  // question); not with echo, and only as a string.
  p = parse_completion_request({{"prompt", "x"}, {"suffix", "tail"}}, limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->suffix == "tail");
  CHECK(completion_error_param({{"prompt", "x"}, {"suffix", "tail"}, {"echo", true}}) == "echo");
  CHECK(completion_error_param({{"prompt", "x"}, {"suffix", 3}}) == "suffix");
  CHECK(completion_error_param({{"prompt", "x"}, {"dry_base", 0.5}}) == "dry_base");
  CHECK(completion_error_param({{"prompt", "x"}, {"mirostat", 3}}) == "mirostat");
  CHECK(completion_error_param({{"prompt", "x"}, {"typical_p", 0}}) == "typical_p");
  CHECK(completion_error_param({{"prompt", "x"}, {"dry_sequence_breakers", "\n"}}) == "dry_sequence_breakers");
  CHECK(completion_error_param({{"prompt", "x"}, {"dry_sequence_breakers", {1}}}) == "dry_sequence_breakers");
  CHECK(completion_error_param({{"prompt", "x"}, {"dry_penalty_last_n", -2}}) == "dry_penalty_last_n");
}

TEST_CASE("response_format: json_object turns on JSON mode, json_schema asks for a schema, bad shapes are 400s",
          "[server][schema]") {
  auto mode = [](const json& extra) {
    auto p = parse_chat_request(chat(extra), limits());
    REQUIRE(p.request);
    return p.request->common.json_object;
  };
  CHECK_FALSE(mode(json::object()));
  CHECK_FALSE(mode({{"response_format", nullptr}}));
  CHECK_FALSE(mode({{"response_format", {{"type", "text"}}}}));
  CHECK(mode({{"response_format", {{"type", "json_object"}}}}));
  auto completion = parse_completion_request({{"prompt", "x"}, {"response_format", {{"type", "json_object"}}}}, limits());
  REQUIRE(completion.request);
  CHECK(completion.request->common.json_object);
  CHECK(chat_error_param(chat({{"response_format", "json"}})) == "response_format");
  CHECK(chat_error_param(chat({{"response_format", json::object()}})) == "response_format");
  CHECK(chat_error_param(chat({{"response_format", {{"type", "xml"}}}})) == "response_format");
  const json schema = {{"type", "json_schema"},
                       {"json_schema", {{"name", "a"}, {"strict", true}, {"schema", {{"type", "object"}}}}}};
  auto asked = parse_chat_request(chat({{"response_format", schema}}), limits());
  REQUIRE(asked.request);
  CHECK(asked.request->common.json_schema);
  CHECK_FALSE(asked.request->common.json_object);
  for (const json& bad : {json{{"type", "json_schema"}},
                          json{{"type", "json_schema"}, {"json_schema", {{"name", "a"}}}},
                          json{{"type", "json_schema"}, {"json_schema", {{"schema", "object"}}}},
                          json{{"type", "json_schema"}, {"json_schema", {{"name", 5}, {"schema", json::object()}}}}}) {
    CAPTURE(bad);
    CHECK(chat_error_param(chat({{"response_format", bad}})) == "response_format");
  }
}

TEST_CASE("samplers (llama-server's extension): the stage order by names or characters, what it leaves out off",
          "[server][schema]") {
  using tc::runtime::SamplerStage;
  auto p = parse_chat_request(chat({{"samplers", {"penalties", "top-k", "temp", "minp", "nonsense"}},
                                    {"repeat_penalty", 1.2},
                                    {"dry_multiplier", 0.8},
                                    {"top_k", 5}}),
                              limits());
  REQUIRE_FALSE(p.error);
  const auto& s = p.request->common.sampling;
  CHECK(s.stage_order == std::vector<SamplerStage>{SamplerStage::TopK, SamplerStage::Temperature, SamplerStage::MinP});
  CHECK(s.repeat_penalty == 1.2f);  // listed
  CHECK(s.dry_multiplier == 0.0f);  // not listed: off
  CHECK(s.top_k == 5);

  p = parse_chat_request(chat({{"samplers", "tkyx"}, {"presence_penalty", 0.5}}), limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->common.sampling.stage_order ==
        std::vector<SamplerStage>{SamplerStage::Temperature, SamplerStage::TopK, SamplerStage::Typical,
                                  SamplerStage::Xtc});
  CHECK(p.request->common.sampling.presence_penalty == 0.0f);

  // Nothing listed: the plain distribution at the request's temperature 1 (greedy stays greedy).
  p = parse_chat_request(chat({{"samplers", json::array()}, {"top_p", 0.5}, {"temperature", 0.7}}), limits());
  REQUIRE_FALSE(p.error);
  CHECK(p.request->common.sampling.top_p == 1.0f);
  CHECK(p.request->common.sampling.temperature == 1.0f);
  p = parse_chat_request(chat({{"samplers", json::array()}, {"temperature", 0}}), limits());
  CHECK(p.request->common.sampling.temperature == 0.0f);

  CHECK(chat_error_param(chat({{"samplers", 3}})) == "samplers");
  CHECK(chat_error_param(chat({{"samplers", {"top_k", 1}}})) == "samplers");
  CHECK(completion_error_param({{"prompt", "x"}, {"samplers", json::object()}}) == "samplers");
}
