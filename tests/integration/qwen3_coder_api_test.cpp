// Qwen3-Coder's XML tool calls (Qwen 3.5's, Nemotron Nano 3's) over HTTP,
// on a generated model with the Qwen vocabulary (its <tool_call>, <think>
// user-defined tokens) and a small template in Qwen 3.5's format
// (tests/server/qwen3_coder_test_template.h; not Qwen's own, which is not
// available offline), which opens <think> at the end of the prompt. The
// reply X comes back as reasoning_content (streamed too), as content with
// reasoning_format none. Pushed by logit_bias to open calls (<tool_call>)
// with tool_choice auto, every call the model writes, the first ending
// its reasoning, is held to a declared function and its parameters (text
// parameters raw, the others JSON) and comes back as an OpenAI tool call,
// streamed or not; a forced call (the JSON form, after the reasoning) is
// a tool call too. A history with calls and results is rendered with each
// call's arguments as a mapping.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/text/json_schema.h"
#include "engine/text/qwen3_coder_call_prefix.h"
#include "engine/text/tokenizer.h"
#include "tests/integration/chat_stream.h"
#include "tests/integration/server_fixture.h"
#include "tests/server/qwen3_coder_test_template.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::ServerProcess;

namespace {

constexpr char kQuestion[] = "Why is the sky blue?";
constexpr std::string_view kCallOpen = "<tool_call>";

std::filesystem::path qwen3_coder_model() {
  static const auto dir = tc::test::scratch_dir("qwen3_coder_api");
  const auto template_path = dir / "qwen3_coder.jinja";
  std::ofstream(template_path) << tc::test::kQwen3CoderTestTemplate;
  return tc::test::make_test_model(dir, "qwen3_coder",
                                   "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 2 --n-head-kv 1 --tied-embeddings "
                                   "--seed 9 --tokenizer qwen2 --chat-template " +
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

// unit: a text parameter (an enum of strings, written raw); days: a JSON integer.
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

// The calls' grammar as the server builds it (the request's properties sorted: days before unit).
const tc::text::ToolCallGrammar& declared() {
  static const tc::text::ToolCallGrammar g(
      {"get_time", "get_weather"},
      {tc::text::JsonSchema::compile(time_parameters()), tc::text::JsonSchema::compile(weather_parameters())},
      {{"zone"}, {"unit"}});
  return g;
}

// A call's arguments fit its function's parameters.
void check_call(const std::string& name, const json& args) {
  INFO(name << " " << args.dump());
  REQUIRE((name == "get_weather" || name == "get_time"));
  if (name == "get_weather") {
    CHECK(args.size() == 2);
    CHECK((args["unit"] == "celsius" || args["unit"] == "fahrenheit"));
    REQUIRE(args["days"].is_number_integer());
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
  if (at == std::string::npos) {
    CHECK(content.find_first_not_of(" \n") == std::string::npos);
    return;
  }
  CHECK(content.find_first_not_of(" \n") == at);
  CHECK(content.find(kCallOpen, at + 1) == std::string::npos);
  tc::text::Qwen3CoderCallPrefix prefix(&declared());
  CHECK(prefix.push(std::string_view(content).substr(at + kCallOpen.size())));
  CHECK_FALSE(prefix.complete());
}

using Streamed = tc::test::StreamedChat;
using tc::test::stream_chat;

}  // namespace

TEST_CASE("qwen3-coder: a reply in the opened <think> comes back as reasoning", "[integration][qwen3_coder]") {
  ServerProcess server(qwen3_coder_model(), {"--ctx-size", "256", "--parallel", "2"},
                       tc::test::scratch_dir("qwen3_coder_api_logs"));
  auto c = server.client();
  const auto none = post_json(c, "/v1/chat/completions", chat_body({{"reasoning_format", "none"}}));
  INFO(none.raw);
  REQUIRE(none.status == 200);
  const std::string x = none.body["choices"][0]["message"]["content"].get<std::string>();
  REQUIRE_FALSE(x.empty());
  REQUIRE(x.find("</think>") == std::string::npos);  // never closed: all of it is reasoning
  REQUIRE(x.find(kCallOpen) == std::string::npos);
  const std::string prompt =
      std::string("<|im_start|>user\n") + kQuestion + "<|im_end|>\n<|im_start|>assistant\n<think>\n";
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

  // The same with tools declared (their calls then looked for, none written).
  const auto with_tools = chat_body({{"tools", tools()}});
  json none_tools = with_tools;
  none_tools["reasoning_format"] = "none";
  const std::string y = post_json(c, "/v1/chat/completions", none_tools).body["choices"][0]["message"]["content"];
  REQUIRE(y.find(kCallOpen) == std::string::npos);
  REQUIRE(y.find("</think>") == std::string::npos);
  const auto tools_split = post_json(c, "/v1/chat/completions", with_tools);
  CHECK(tools_split.body["choices"][0]["message"]["reasoning_content"] == y);
  CHECK(stream_chat(c, with_tools).reasoning == y);
}

TEST_CASE("qwen3-coder: calls the model opens are held to declared functions and come back as tool calls",
          "[integration][qwen3_coder]") {
  const auto model = qwen3_coder_model();
  const auto open_id = token_id(model, std::string(kCallOpen));
  ServerProcess server(model, {"--ctx-size", "1024", "--threads", "2"}, tc::test::scratch_dir("qwen3_coder_tools"));
  auto c = server.client();
  json request = chat_body();
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
  // The first <tool_call> ended the reasoning the prompt opened: there was none.
  CHECK((!message.contains("reasoning_content") || message["reasoning_content"] == ""));

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
  CHECK(text.find("<function=get_") == std::string::npos);

  // A forced call: the JSON form after the opened reasoning (closed at once, pushed), a tool call.
  json forced = chat_body({{"tools", tools()}, {"max_tokens", 60}});
  forced["logit_bias"] = {{std::to_string(token_id(model, "</think>")), 100}};
  forced["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  const auto f = post_json(c, "/v1/chat/completions", forced);
  INFO(f.raw);
  REQUIRE(f.status == 200);
  const json& fm = f.body["choices"][0]["message"];
  REQUIRE(fm["tool_calls"].size() == 1);
  CHECK(fm["tool_calls"][0]["function"]["name"] == "get_time");
  check_call("get_time", json::parse(fm["tool_calls"][0]["function"]["arguments"].get<std::string>()));
  CHECK((!fm.contains("reasoning_content") || fm["reasoning_content"] == ""));
}

TEST_CASE("qwen3-coder: a history's calls are rendered with their arguments as a mapping",
          "[integration][qwen3_coder]") {
  ServerProcess server(qwen3_coder_model(), {"--ctx-size", "512"}, tc::test::scratch_dir("qwen3_coder_prompt"));
  auto c = server.client();
  const json messages = json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"unit\": \"celsius\", \"days\": 2}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"t\": 21}"}
  ])");
  const auto chat = post_json(c, "/tokenize", {{"messages", messages}, {"add_generation_prompt", true}});
  INFO(chat.raw);
  REQUIRE(chat.status == 200);
  const std::string expected =
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n"
      "<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n{\"t\": 21}\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n<think>\n";
  const auto want = post_json(c, "/tokenize", {{"content", expected}});
  REQUIRE(want.status == 200);
  CHECK(chat.body["tokens"] == want.body["tokens"]);
}
