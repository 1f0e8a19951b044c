// Gemma 4's chat format over HTTP, on a generated model with the
// Gemma-4-like vocabulary (make-model --tokenizer gemma4: its markers
// user-defined tokens, <|turn> control) and a small template in Gemma 4's
// turn format (tests/server/gemma4_test_template.h; not Google's own, which
// is not tested here). The model is random, so the template ends the
// prompt inside a thought (<|channel>thought\n), as reasoning_api_test.cpp's
// opens <think>: the reply X comes back as reasoning_content (streamed
// too, Ollama's thinking), as content with reasoning_format none, and
// /v1/completions of the same prompt gives X unparsed. Pushed by
// logit_bias to open calls (<|tool_call>) with tool_choice auto, every call
// the model writes is held to a declared function and its parameters in
// Gemma's syntax and comes back as an OpenAI tool call, streamed or not.
// A history with calls, results and an answer is rendered as one model
// turn, and the model's next turn is opened for it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/text/gemma4_call_prefix.h"
#include "engine/text/json_schema.h"
#include "engine/text/tokenizer.h"
#include "tests/integration/ollama_think_checks.h"
#include "tests/integration/chat_stream.h"
#include "tests/integration/server_fixture.h"
#include "tests/server/gemma4_test_template.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::ServerProcess;

namespace {

constexpr char kQuestion[] = "Why is the sky blue?";
constexpr std::string_view kCallOpen = "<|tool_call>";

std::filesystem::path gemma4_model() {
  static const auto dir = tc::test::scratch_dir("gemma4_api");
  const auto template_path = dir / "gemma4.jinja";
  std::ofstream(template_path) << tc::test::kGemma4TestTemplate;
  return tc::test::make_test_model(dir, "gemma4",
                                   "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 2 --n-head-kv 1 --tied-embeddings "
                                   "--seed 9 --tokenizer gemma4 --chat-template " +
                                       tc::test::shell_quote(template_path.string()));
}

int64_t token_id(const std::filesystem::path& model, const std::string& piece) {
  const auto file = tc::gguf::GgufFile::open(model);
  const auto tokenizer = tc::text::Tokenizer::create(tc::text::read_vocab(file));
  const auto& pieces = tokenizer->vocab().tokens;
  const auto id = std::find(pieces.begin(), pieces.end(), piece) - pieces.begin();
  REQUIRE(id < tokenizer->n_vocab());
  return id;
}

json chat_body(const json& extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", kQuestion}}}}, {"max_tokens", 12}, {"temperature", 0}};
  body.update(extra);
  return body;
}

json no_thought() { return {{"chat_template_kwargs", {{"reply_prefix", ""}}}}; }

const json& weather_parameters() {
  static const json p = json::parse(R"({"type": "object",
    "properties": {"unit": {"enum": ["celsius", "fahrenheit"]},
                   "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["unit", "days"], "additionalProperties": false})");
  return p;
}
const json& time_parameters() {
  static const json p = json::parse(R"({"type": "object", "properties": {"zone": {"enum": ["utc", "local"]}},
    "required": ["zone"], "additionalProperties": false})");
  return p;
}

json tools() {
  return json::array(
      {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", weather_parameters()}}}},
       {{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", time_parameters()}}}}});
}

const tc::text::ToolCallGrammar& declared() {
  static const tc::text::ToolCallGrammar g(
      {"get_time", "get_weather"},
      {tc::text::JsonSchema::compile(time_parameters()), tc::text::JsonSchema::compile(weather_parameters())});
  return g;
}

// A call's arguments fit its function's parameters.
void check_call(const std::string& name, const json& args) {
  INFO(name << " " << args.dump());
  REQUIRE((name == "get_weather" || name == "get_time"));
  if (name == "get_weather") {
    CHECK(args.size() == 2);
    CHECK((args["unit"] == "celsius" || args["unit"] == "fahrenheit"));
    CHECK((args["days"].get<int>() >= 1 && args["days"].get<int>() <= 7));
  } else {
    CHECK(args.size() == 1);
    CHECK((args["zone"] == "utc" || args["zone"] == "local"));
  }
}

// What a content holds after its calls: only the last call, cut off by
// max_tokens, which must be a prefix of a call the constraint allows.
void check_cut_call(const std::string& content) {
  INFO("content: " << content);
  const size_t at = content.find(kCallOpen);
  if (at == std::string::npos) return;
  CHECK(content.find(kCallOpen, at + 1) == std::string::npos);
  tc::text::Gemma4CallPrefix prefix(&declared());
  CHECK(prefix.push(std::string_view(content).substr(at + kCallOpen.size())));
  CHECK_FALSE(prefix.complete());
}

using Streamed = tc::test::StreamedChat;
using tc::test::stream_chat;

}  // namespace

TEST_CASE("gemma4: a thought comes back as reasoning and the answer as content", "[integration][gemma4]") {
  ServerProcess server(gemma4_model(), {"--ctx-size", "256", "--parallel", "2"},
                       tc::test::scratch_dir("gemma4_api_logs"));
  auto c = server.client();

  // The reply as written: reasoning_format none, and /v1/completions of the same prompt.
  const auto none = post_json(c, "/v1/chat/completions", chat_body({{"reasoning_format", "none"}}));
  INFO(none.raw);
  REQUIRE(none.status == 200);
  CHECK_FALSE(none.body["choices"][0]["message"].contains("reasoning_content"));
  const std::string x = none.body["choices"][0]["message"]["content"].get<std::string>();
  REQUIRE_FALSE(x.empty());
  REQUIRE(x.find("<|") == std::string::npos);  // no marker: all of it is the thought
  REQUIRE(x.find("|>") == std::string::npos);
  REQUIRE(x.find_first_of(" \n\t\r") != 0);  // (blanks opening a thought are left out of the reasoning)
  const std::string prompt = std::string("<|turn>user\n") + kQuestion + "<turn|>\n<|turn>model\n<|channel>thought\n";
  const auto raw = post_json(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}});
  REQUIRE(raw.status == 200);
  CHECK(raw.body["choices"][0]["text"] == x);

  const auto split = post_json(c, "/v1/chat/completions", chat_body());
  INFO(split.raw);
  REQUIRE(split.status == 200);
  CHECK(split.body["choices"][0]["message"]["reasoning_content"] == x);
  CHECK(split.body["choices"][0]["message"]["content"] == "");
  const Streamed streamed = stream_chat(c, chat_body());
  CHECK(streamed.reasoning == x);
  CHECK(streamed.content.empty());

  // No thought opened: the reply is the answer, the same with reasoning_format none.
  const auto answer = post_json(c, "/v1/chat/completions", chat_body(no_thought()));
  INFO(answer.raw);
  REQUIRE(answer.status == 200);
  const json& message = answer.body["choices"][0]["message"];
  CHECK_FALSE(message.contains("reasoning_content"));
  const std::string y = message["content"].get<std::string>();
  REQUIRE_FALSE(y.empty());
  json answer_none = chat_body(no_thought());
  answer_none["reasoning_format"] = "none";
  CHECK(post_json(c, "/v1/chat/completions", answer_none).body["choices"][0]["message"]["content"] == y);
  const Streamed answer_streamed = stream_chat(c, chat_body(no_thought()));
  CHECK(answer_streamed.content == y);
  CHECK(answer_streamed.reasoning.empty());

  // Ollama: think true returns the thought as thinking; think unset leaves it in the content.
  tc::test::check_ollama_think(server, "gemma4", kQuestion, x);
}

TEST_CASE("gemma4: calls the model opens are held to declared functions and come back as tool calls",
          "[integration][gemma4]") {
  const auto model = gemma4_model();
  const auto open_id = token_id(model, std::string(kCallOpen));
  ServerProcess server(model, {"--ctx-size", "1024", "--threads", "2"}, tc::test::scratch_dir("gemma4_api_tools"));
  auto c = server.client();
  json request = chat_body(no_thought());
  request["messages"][0]["content"] = "What is the weather in Paris this week?";
  request["tools"] = tools();
  request["max_tokens"] = 120;
  request["logit_bias"] = {{std::to_string(open_id), 100}};  // the model opens a call wherever it may
  const auto r = post_json(c, "/v1/chat/completions", request);
  INFO(r.raw);
  REQUIRE(r.status == 200);
  const json& message = r.body["choices"][0]["message"];
  REQUIRE(message["tool_calls"].is_array());
  const json& calls = message["tool_calls"];
  REQUIRE(calls.size() >= 2);
  for (const json& call : calls) {
    CHECK(call["type"] == "function");
    CHECK(call["id"].get<std::string>().starts_with("call_"));
    check_call(call["function"]["name"], json::parse(call["function"]["arguments"].get<std::string>()));
  }
  const std::string content = message["content"].is_string() ? message["content"].get<std::string>() : "";
  check_cut_call(content);

  // Streamed: the same calls, the same content.
  const Streamed s = stream_chat(c, request);
  REQUIRE(s.calls.size() == calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    CHECK(s.calls[i]["index"] == i);
    CHECK(s.calls[i]["function"]["name"] == calls[i]["function"]["name"]);
    CHECK(s.calls[i]["function"]["arguments"] == calls[i]["function"]["arguments"]);
  }
  CHECK(s.content == content);

  // tool_choice none: no calls, the markers stay text and the model writes noise after them.
  json no_tools = request;
  no_tools["tool_choice"] = "none";
  const auto free = post_json(c, "/v1/chat/completions", no_tools);
  REQUIRE(free.status == 200);
  CHECK_FALSE(free.body["choices"][0]["message"].contains("tool_calls"));
  const std::string text = free.body["choices"][0]["message"]["content"].get<std::string>();
  INFO(text);
  CHECK(text.find(kCallOpen) != std::string::npos);
  CHECK(text.find("call:get_") == std::string::npos);
}

TEST_CASE("gemma4: a call, its result and the answer are one model turn, and the next turn is opened",
          "[integration][gemma4]") {
  ServerProcess server(gemma4_model(), {"--ctx-size", "256"}, tc::test::scratch_dir("gemma4_api_prompt"));
  auto c = server.client();
  const json messages = json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"unit\": \"celsius\", \"days\": 2}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"t\": 21}"},
    {"role": "assistant", "content": "It is 21 C."}
  ])");
  const auto chat = post_json(c, "/tokenize", {{"messages", messages}, {"add_generation_prompt", true}});
  INFO(chat.raw);
  REQUIRE(chat.status == 200);
  const std::string expected =
      "<bos><|turn>user\nWeather in Paris?<turn|>\n<|turn>model\n"
      "<|tool_call>call:get_weather{days:2,unit:<|\"|>celsius<|\"|>}<tool_call|>"
      "<|tool_response>response:get_weather{value:{t:21}}<tool_response|>It is 21 C.<turn|>\n<|turn>model\n";
  const auto want = post_json(c, "/tokenize", {{"content", expected}});
  REQUIRE(want.status == 200);
  CHECK(chat.body["tokens"] == want.body["tokens"]);
}
