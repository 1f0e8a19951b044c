// gpt-oss's harmony format over HTTP, on a generated model whose vocabulary
// has the o200k_harmony markers (seven of its tokens renamed to them, all
// control, as a converted gpt-oss file has them). The model is random, so
// its chat template ends the prompt inside the message under test (the
// `reply_header` template variable, analysis by default), as
// reasoning_api_test.cpp's opens <think>: the reply X continues an analysis
// message (reasoning_content, Ollama's thinking; the content as written
// with reasoning_format none), a final one (content), or a call's
// arguments, where a JSON schema makes the reply a given object (a tool
// call). /v1/completions returns the reply unparsed. The vocabulary's
// rules show through logit_bias: <|end|> and <|channel|> come out as text
// and do not stop, <|call|> and <|return|> stop at once.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "tests/engine/gguf_edit.h"
#include "tests/integration/ollama_think_checks.h"
#include "tests/integration/chat_stream.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;
using tc::test::post_json;
using tc::test::ServerProcess;

namespace {

constexpr char kTemplate[] =
    "{%- for message in messages -%}<|start|>{{ message.role }}<|message|>{{ message.content }}<|end|>"
    "{%- endfor -%}{%- if add_generation_prompt -%}<|start|>assistant"
    "{%- if reply_header is defined -%}{{ reply_header }}{%- else -%}<|channel|>analysis<|message|>{%- endif -%}"
    "{%- endif -%}";

// The markers, in the order the model's last seven ids take them.
const std::vector<std::string> kMarkers = {"<|start|>",   "<|end|>",    "<|message|>", "<|channel|>",
                                           "<|constrain|>", "<|return|>", "<|call|>"};
constexpr int kVocab = 1024;

int marker_id(const std::string& marker) {
  for (size_t i = 0; i < kMarkers.size(); ++i) {
    if (kMarkers[i] == marker) return kVocab - static_cast<int>(kMarkers.size()) + static_cast<int>(i);
  }
  FAIL("no marker " << marker);
  return -1;
}

std::filesystem::path harmony_model() {
  static const auto dir = tc::test::scratch_dir("harmony_api");
  const auto path = dir / "harmony.gguf";
  if (std::filesystem::exists(path)) return path;
  const auto template_path = dir / "harmony.jinja";
  std::ofstream(template_path) << kTemplate;
  const auto base = tc::test::make_test_model(
      dir, "harmony-base",
      "--n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab " + std::to_string(kVocab) +
          " --seed 29 --chat-template " + tc::test::shell_quote(template_path.string()));
  auto edit = tc::test::GgufEdit::from(base);
  const auto file = tc::gguf::GgufFile::open(base);
  auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  auto types = file.get_i32_array("tokenizer.ggml.token_type");
  REQUIRE(tokens.size() == static_cast<size_t>(kVocab));
  for (const auto& m : kMarkers) {
    const auto id = static_cast<size_t>(marker_id(m));
    tokens[id] = m;
    types[id] = 3;  // control
  }
  edit.set("tokenizer.ggml.tokens", tc::gguf::Value::string_array(tokens));
  edit.set("tokenizer.ggml.token_type", tc::gguf::Value::i32_array(types));
  edit.write(path);
  return path;
}

constexpr char kQuestion[] = "Why is the sky blue?";

json chat_body(const json& extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", kQuestion}}}}, {"max_tokens", 12}, {"temperature", 0}};
  body.update(extra);
  return body;
}

json reply_header(const std::string& header) { return {{"chat_template_kwargs", {{"reply_header", header}}}}; }

const std::string kCallHeader = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>";

json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "The weather in a place"},
            {"parameters", {{"type", "object"}, {"properties", {{"location", {{"type", "string"}}}}}}}}}};
}

using Streamed = tc::test::StreamedChat;
using tc::test::stream_chat;

}  // namespace

TEST_CASE("harmony: analysis comes back as reasoning and final as content", "[integration][harmony]") {
  ServerProcess server(harmony_model(), {"--ctx-size", "256", "--parallel", "2"},
                       tc::test::scratch_dir("harmony_api_logs"));
  auto c = server.client();

  // The reply as written: reasoning_format none, and /v1/completions of the same prompt.
  const auto none = post_json(c, "/v1/chat/completions", chat_body({{"reasoning_format", "none"}}));
  INFO(none.raw);
  REQUIRE(none.status == 200);
  CHECK_FALSE(none.body["choices"][0]["message"].contains("reasoning_content"));
  const std::string x = none.body["choices"][0]["message"]["content"].get<std::string>();
  REQUIRE_FALSE(x.empty());
  REQUIRE(x.find("<|") == std::string::npos);  // no marker: all of it is the analysis
  const std::string prompt = std::string("<|start|>user<|message|>") + kQuestion +
                             "<|end|><|start|>assistant<|channel|>analysis<|message|>";
  const auto raw = post_json(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}});
  REQUIRE(raw.status == 200);
  CHECK(raw.body["choices"][0]["text"] == x);

  const auto split = post_json(c, "/v1/chat/completions", chat_body());
  INFO(split.raw);
  REQUIRE(split.status == 200);
  CHECK(split.body["choices"][0]["message"]["reasoning_content"] == x);
  CHECK(split.body["choices"][0]["message"]["content"] == "");
  CHECK(split.body["choices"][0]["finish_reason"] == none.body["choices"][0]["finish_reason"]);
  const Streamed streamed = stream_chat(c, chat_body());
  CHECK(streamed.reasoning == x);
  CHECK(streamed.content.empty());

  // A final message: content, the same with reasoning_format none.
  const auto final_reply = post_json(c, "/v1/chat/completions", chat_body(reply_header("<|channel|>final<|message|>")));
  INFO(final_reply.raw);
  REQUIRE(final_reply.status == 200);
  const json& message = final_reply.body["choices"][0]["message"];
  CHECK_FALSE(message.contains("reasoning_content"));
  const std::string y = message["content"].get<std::string>();
  REQUIRE_FALSE(y.empty());
  json final_none = chat_body(reply_header("<|channel|>final<|message|>"));
  final_none["reasoning_format"] = "none";
  CHECK(post_json(c, "/v1/chat/completions", final_none).body["choices"][0]["message"]["content"] == y);
  const Streamed final_streamed = stream_chat(c, chat_body(reply_header("<|channel|>final<|message|>")));
  CHECK(final_streamed.content == y);
  CHECK(final_streamed.reasoning.empty());

  // Ollama: think true returns the analysis as thinking; think unset leaves it in the content.
  tc::test::check_ollama_think(server, "harmony", kQuestion, x);
}

TEST_CASE("harmony: a message to a declared function is a tool call", "[integration][harmony]") {
  ServerProcess server(harmony_model(), {"--ctx-size", "512"}, tc::test::scratch_dir("harmony_api_tools_logs"));
  auto c = server.client();
  // The prompt opens the call; the schema makes the reply its arguments.
  json body = chat_body(reply_header(kCallHeader));
  body["tools"] = {weather_tool()};
  body["max_tokens"] = 40;
  body["response_format"] = {
      {"type", "json_schema"},
      {"json_schema", {{"name", "args"}, {"schema", {{"const", {{"location", "Paris"}}}}}}}};
  const auto r = post_json(c, "/v1/chat/completions", body);
  INFO(r.raw);
  REQUIRE(r.status == 200);
  const json& choice = r.body["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"].is_null());
  CHECK_FALSE(choice["message"].contains("reasoning_content"));
  REQUIRE(choice["message"]["tool_calls"].size() == 1);
  const json& call = choice["message"]["tool_calls"][0];
  CHECK(call["type"] == "function");
  CHECK(call["id"].get<std::string>().starts_with("call_"));
  CHECK(call["function"]["name"] == "get_weather");
  CHECK(json::parse(call["function"]["arguments"].get<std::string>()) == json{{"location", "Paris"}});

  const Streamed s = stream_chat(c, body);
  CHECK(s.finish == "tool_calls");
  CHECK(s.content.empty());
  REQUIRE(s.calls.size() == 1);
  CHECK(s.calls[0]["index"] == 0);
  CHECK(s.calls[0]["function"]["name"] == "get_weather");
  CHECK(json::parse(s.calls[0]["function"]["arguments"].get<std::string>()) == json{{"location", "Paris"}});

  // Without tools the same message is no call, and is dropped (an "unsolicited" call).
  json no_tools = body;
  no_tools.erase("tools");
  const auto dropped = post_json(c, "/v1/chat/completions", no_tools);
  REQUIRE(dropped.status == 200);
  CHECK(dropped.body["choices"][0]["finish_reason"] == "stop");
  CHECK(dropped.body["choices"][0]["message"]["content"] == "");
  CHECK_FALSE(dropped.body["choices"][0]["message"].contains("tool_calls"));
}

TEST_CASE("harmony: <|end|> and the markers are text while <|call|> and <|return|> end", "[integration][harmony]") {
  ServerProcess server(harmony_model(), {"--ctx-size", "256"}, tc::test::scratch_dir("harmony_api_vocab_logs"));
  auto c = server.client();
  const std::string prompt = "<|start|>user<|message|>hi<|end|><|start|>assistant";
  const auto complete = [&](const std::string& marker, int max_tokens) {
    const json body = {{"prompt", prompt},
                       {"max_tokens", max_tokens},
                       {"temperature", 0},
                       {"logit_bias", {{std::to_string(marker_id(marker)), 100}}}};
    const auto r = post_json(c, "/v1/completions", body);
    INFO(r.raw);
    REQUIRE(r.status == 200);
    return r.body["choices"][0];
  };
  json choice = complete("<|end|>", 3);
  CHECK(choice["text"] == "<|end|><|end|><|end|>");
  CHECK(choice["finish_reason"] == "length");
  choice = complete("<|channel|>", 2);
  CHECK(choice["text"] == "<|channel|><|channel|>");
  CHECK(choice["finish_reason"] == "length");
  for (const char* end : {"<|call|>", "<|return|>"}) {
    INFO(end);
    choice = complete(end, 3);
    CHECK(choice["text"] == "");
    CHECK(choice["finish_reason"] == "stop");
  }
  // The prompt's markers are the marker tokens.
  const auto tokens = post_json(c, "/tokenize", {{"content", "<|channel|>final<|message|>"}, {"add_special", false}});
  REQUIRE(tokens.status == 200);
  CHECK(tokens.body["tokens"].front() == marker_id("<|channel|>"));
  CHECK(tokens.body["tokens"].back() == marker_id("<|message|>"));
}
