// Held replies after an opened reasoning over HTTP: a model whose template
// ends the prompt with "<think>\n" (DeepSeek-R1's distills) asked for JSON
// (response_format json_object or json_schema) or a forced tool call
// reasons first, free up to its </think> (it may not stop before), and the
// form holds the answer after it: the answer comes back as the content (or
// the tool call), the reasoning apart. The generated model has the Qwen
// vocabulary, whose </think> is one token: logit_bias pushes it to close
// its reasoning at once. Without the push it never closes, and its
// reasoning is the free reply. With reasoning_format none, or a grammar,
// the form holds from the first token and none of the reply is reasoning.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/text/json_prefix.h"
#include "engine/text/tokenizer.h"
#include "tests/integration/chat_stream.h"
#include "tests/integration/opened_think_template.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::ServerProcess;

namespace {

std::filesystem::path thinking_model() {
  static const auto dir = tc::test::scratch_dir("reasoning_form_api");
  const auto template_path = dir / "thinking.jinja";
  std::ofstream(template_path) << tc::test::kOpenedThinkTemplate;
  return tc::test::make_test_model(dir, "thinking",
                                   "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 2 --n-head-kv 1 --tied-embeddings "
                                   "--seed 31 --tokenizer qwen2 --chat-template " +
                                       tc::test::shell_quote(template_path.string()));
}

int64_t think_close_id(const std::filesystem::path& model) {
  const auto file = tc::gguf::GgufFile::open(model);
  const auto tokenizer = tc::text::Tokenizer::create(tc::text::read_vocab(file));
  const auto& pieces = tokenizer->vocab().tokens;
  const auto id = std::find(pieces.begin(), pieces.end(), "</think>") - pieces.begin();
  REQUIRE(id < tokenizer->n_vocab());
  return id;
}

json chat_body(const json& extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Name a colour as JSON."}}}},
               {"max_tokens", 120},
               {"temperature", 0}};
  body.update(extra);
  return body;
}

// The reply's message; requires a 200 and the finish reason.
json message_of(httplib::Client& c, const json& body, const std::string& finish) {
  const auto r = post_json(c, "/v1/chat/completions", body);
  INFO(r.raw);
  REQUIRE(r.status == 200);
  CHECK(r.body["choices"][0]["finish_reason"] == finish);
  return r.body["choices"][0]["message"];
}

// A schema whose instances a random model closes: a colour and a digit.
json colour_format() {
  const json schema = json::parse(R"({"type": "object", "properties": {"colour": {"enum": ["red", "green"]},
    "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["colour", "n"],
    "additionalProperties": false})");
  return {{"type", "json_schema"}, {"json_schema", {{"name", "colour"}, {"schema", schema}}}};
}

void check_colour(const json& value) {
  INFO(value.dump());
  CHECK(value.size() == 2);
  CHECK((value["colour"] == "red" || value["colour"] == "green"));
  REQUIRE(value["n"].is_number_integer());
  CHECK((value["n"].get<int>() >= 0 && value["n"].get<int>() <= 9));
}

// A text cut short of its end that is still the start of one JSON object.
void check_object_prefix(const std::string& text) {
  INFO(text);
  CHECK(text.find_first_not_of(" \n") == text.find('{'));
  tc::text::JsonPrefix prefix;
  CHECK(prefix.push(text));
  CHECK_FALSE(prefix.complete());
}

std::string reasoning_of(const json& message) {
  return message.contains("reasoning_content") ? message["reasoning_content"].get<std::string>() : "";
}

}  // namespace

TEST_CASE("JSON and forced calls after an opened <think> come after the reasoning",
          "[integration][reasoning]") {
  const auto model = thinking_model();
  const json close_now = {{std::to_string(think_close_id(model)), 100}};
  ServerProcess server(model, {"--ctx-size", "512"}, tc::test::scratch_dir("reasoning_form_api_logs"));
  auto c = server.client();

  SECTION("the reasoning is free and runs on when it never closes") {
    const json plain = message_of(c, chat_body({{"max_tokens", 12}, {"reasoning_format", "none"}}), "length");
    const std::string x = plain["content"];
    REQUIRE(x.find("</think>") == std::string::npos);
    const json held = message_of(c, chat_body({{"max_tokens", 12}, {"response_format", {{"type", "json_object"}}}}),
                                 "length");
    CHECK(reasoning_of(held) == x);
    CHECK(held["content"] == "");
  }
  SECTION("a JSON Schema's instance after </think> is the content") {
    const json body = chat_body({{"logit_bias", close_now}, {"response_format", colour_format()}});
    const json m = message_of(c, body, "stop");
    INFO(m.dump());
    CHECK(reasoning_of(m) == "");
    const std::string content = m["content"];
    check_colour(json::parse(content));
    const auto streamed = tc::test::stream_chat(c, body);
    CHECK(streamed.content == content);
    CHECK(streamed.reasoning == "");
  }
  SECTION("JSON mode: the object after </think> is the content (cut by max_tokens: a prefix of one)") {
    const json m = message_of(c, chat_body({{"logit_bias", close_now}, {"response_format", {{"type", "json_object"}}}}),
                              "length");
    INFO(m.dump());
    CHECK(reasoning_of(m) == "");
    check_object_prefix(m["content"]);
  }
  SECTION("a forced call after </think> is a tool call") {
    const json tool = json::parse(R"({"type": "function", "function": {"name": "pick", "parameters":
      {"type": "object", "properties": {"colour": {"enum": ["red", "green"]}}, "required": ["colour"]}}})");
    const json m = message_of(c, chat_body({{"logit_bias", close_now}, {"tools", {tool}}, {"tool_choice", "required"}}),
                              "tool_calls");
    INFO(m.dump());
    REQUIRE(m["tool_calls"].size() == 1);
    CHECK(m["tool_calls"][0]["function"]["name"] == "pick");
    const json args = json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>());
    CHECK((args["colour"] == "red" || args["colour"] == "green"));
    CHECK(reasoning_of(m) == "");
  }
  SECTION("without the split, or with a grammar, the form holds from the first token") {
    const json none = message_of(c, chat_body({{"reasoning_format", "none"}, {"response_format", colour_format()}}),
                                 "stop");
    check_colour(json::parse(none["content"].get<std::string>()));
    const json json_mode = {{"type", "json_object"}};
    const json object =
        message_of(c, chat_body({{"reasoning_format", "none"}, {"response_format", json_mode}}), "length");
    check_object_prefix(object["content"]);
    const json yes_no = message_of(c, chat_body({{"grammar", "root ::= \"yes\" | \"no\""}}), "stop");
    CHECK((yes_no["content"] == "yes" || yes_no["content"] == "no"));
    CHECK(reasoning_of(yes_no) == "");
  }
}
