// A model's own tool calls held to the declared functions over HTTP:
// Qwen-vocab models with random weights, pushed by logit_bias to open
// calls, with tool_choice "auto". With Qwen 2.5's chat template (which
// writes <tool_call>) whatever follows each <tool_call> is a call to a
// declared function whose arguments fit its parameters (without the lazy
// form the random model writes noise there); with Llama 3.1's (which asks
// for the reply to be the call's JSON) a reply of braces stays text.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/text/json_schema.h"
#include "engine/text/tokenizer.h"
#include "engine/text/tool_call_prefix.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

constexpr std::string_view kOpen = "<tool_call>";

const json& weather_parameters() {
  static const json p = json::parse(R"({"type": "object",
    "properties": {"unit": {"enum": ["celsius", "fahrenheit"]},
                   "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["unit", "days"], "additionalProperties": false})");
  return p;
}

json tools() {
  return json::array(
      {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", weather_parameters()}}}},
       {{"type", "function"},
        {"function",
         {{"name", "get_time"},
          {"parameters",
           {{"type", "object"},
            {"properties", {{"zone", {{"enum", {"utc", "local"}}}}}},
            {"required", {"zone"}},
            {"additionalProperties", false}}}}}}});
}

// The calls a reply holds: those the server found, and those left in its
// text (a reply cut by max_tokens, or calls one after another without
// closing tags, stays text whole). Each text segment after a <tool_call>
// but the last must be a whole call; the last may be cut, but never broken.
std::vector<json> calls_of(const json& message, const tc::text::ToolCallGrammar& grammar) {
  std::vector<json> calls;
  if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
    for (const auto& c : message["tool_calls"]) {
      calls.push_back(
          {{"name", c["function"]["name"]}, {"arguments", json::parse(c["function"]["arguments"].get<std::string>())}});
    }
  }
  const std::string text = message["content"].is_string() ? message["content"].get<std::string>() : "";
  for (size_t at = text.find(kOpen); at != std::string::npos;) {
    const size_t body = at + kOpen.size();
    const size_t next = text.find(kOpen, body);
    const std::string segment = text.substr(body, next == std::string::npos ? std::string::npos : next - body);
    INFO("segment " << segment);
    tc::text::ToolCallPrefix prefix(&grammar);
    size_t n = 0;
    while (n < segment.size() && !prefix.complete() && prefix.push(static_cast<uint8_t>(segment[n]))) ++n;
    if (prefix.complete()) {
      calls.push_back(json::parse(segment.substr(0, n)));
    } else {
      REQUIRE(next == std::string::npos);  // only the last call may be unfinished...
      REQUIRE(n == segment.size());        // ...and only by being cut off
    }
    at = next;
  }
  return calls;
}

std::filesystem::path template_path(const std::string& stem) {
  return tc::test::source_dir() / "tests" / "data" / "chat_templates" / "templates" / (stem + ".jinja");
}

// A 1-layer model with the Qwen 2 vocab and `stem`'s chat template; the id of `piece` in its vocab.
std::filesystem::path qwen_vocab_model(const std::filesystem::path& dir, const std::string& stem) {
  return tc::test::make_test_model(dir, stem,
                                   "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 2 --n-head-kv 1 --tied-embeddings"
                                   " --seed 9 --tokenizer qwen2 --chat-template " +
                                       tc::test::shell_quote(template_path(stem).string()));
}
int64_t token_id(const std::filesystem::path& model, const std::string& piece) {
  const auto file = tc::gguf::GgufFile::open(model);
  const auto tokenizer = tc::text::Tokenizer::create(tc::text::read_vocab(file));
  const auto& pieces = tokenizer->vocab().tokens;
  const auto id = std::find(pieces.begin(), pieces.end(), piece) - pieces.begin();
  REQUIRE(id < tokenizer->n_vocab());
  return id;
}

const tc::text::ToolCallGrammar& declared() {
  static const tc::text::ToolCallGrammar g({"get_time", "get_weather"},
                                           {tc::text::JsonSchema::compile(tools()[1]["function"]["parameters"]),
                                            tc::text::JsonSchema::compile(weather_parameters())});
  return g;
}

// A call's arguments fit its function's parameters.
void check_call(const json& call) {
  INFO(call.dump());
  const std::string name = call["name"];
  REQUIRE((name == "get_weather" || name == "get_time"));
  const json& args = call.contains("arguments") ? call["arguments"] : call["parameters"];
  if (name == "get_weather") {
    CHECK(args.size() == 2);
    CHECK((args["unit"] == "celsius" || args["unit"] == "fahrenheit"));
    CHECK((args["days"].get<int>() >= 1 && args["days"].get<int>() <= 7));
  } else {
    CHECK(args.size() == 1);
    CHECK((args["zone"] == "utc" || args["zone"] == "local"));
  }
}

}  // namespace

TEST_CASE("tool calls a model opens with <tool_call> are held to a declared function and its parameters",
          "[integration][tools]") {
  const auto dir = tc::test::scratch_dir("lazy_tool_call");
  const auto model = qwen_vocab_model(dir, "qwen2_5");
  const auto open_id = token_id(model, std::string(kOpen));
  tc::test::ServerProcess server(model, {"--ctx-size", "1024", "--threads", "2"}, dir);
  auto client = server.client();
  const json request = {
      {"messages", json::array({{{"role", "user"}, {"content", "What is the weather in Paris this week?"}}})},
      {"tools", tools()},
      {"max_tokens", 160},
      {"temperature", 0},
      {"logit_bias", {{std::to_string(open_id), 100}}}};  // the model opens a call wherever it may
  const auto r = tc::test::post_json(client, "/v1/chat/completions", request);
  INFO(r.raw);
  REQUIRE(r.status == 200);

  const auto calls = calls_of(r.body["choices"][0]["message"], declared());
  REQUIRE(calls.size() >= 2);
  for (const auto& call : calls) check_call(call);

  SECTION("with tool_choice none the same push gives no such calls") {
    json no_tools = request;
    no_tools["tool_choice"] = "none";
    const auto free = tc::test::post_json(client, "/v1/chat/completions", no_tools);
    REQUIRE(free.status == 200);
    const std::string text = free.body["choices"][0]["message"]["content"].get<std::string>();
    INFO(text);
    // The random model after its <tool_call>s: noise, not calls.
    CHECK(text.find(kOpen) != std::string::npos);
    CHECK(text.find("{\"name\": \"get_") == std::string::npos);
  }
}

TEST_CASE("Llama 3.x's template: a reply that opens with a brace but not a call's opening stays free",
          "[integration][tools]") {
  // The lazy form for these models turns on only once a reply opens with
  // `{"name": "` (llama.cpp's trigger; tests/engine/text has the held
  // call): a random model pushed to braces writes braces, and they stay
  // text, not forced into a call.
  const auto dir = tc::test::scratch_dir("lazy_tool_call_llama3");
  const auto model = qwen_vocab_model(dir, "llama3_1");
  const auto brace = token_id(model, "{");
  tc::test::ServerProcess server(model, {"--ctx-size", "1024", "--threads", "2"}, dir);
  auto client = server.client();
  const json request = {{"messages", json::array({{{"role", "user"}, {"content", "What time is it in UTC?"}}})},
                        {"tools", tools()},
                        {"max_tokens", 12},
                        {"temperature", 0},
                        {"logit_bias", {{std::to_string(brace), 100}}}};
  const auto r = tc::test::post_json(client, "/v1/chat/completions", request);
  INFO(r.raw);
  REQUIRE(r.status == 200);
  const json& message = r.body["choices"][0]["message"];
  CHECK_FALSE((message.contains("tool_calls") && message["tool_calls"].is_array()));
  CHECK(message["content"].get<std::string>() == std::string(12, '{'));
  CHECK(r.body["choices"][0]["finish_reason"] == "length");
}
