// Function calling, the reply side: calls found in the forms open models
// write (Hermes tags, bare JSON, arrays, fences, OpenAI's own shape),
// lookalikes left as text; the stream filter shows text at once, holds a
// call whole, and gives, for every way of cutting a reply into pieces,
// what parsing the whole reply gives; and the response shapes with calls
// (OpenAI's and Ollama's).
#include <catch2/catch.hpp>

#include <random>

#include <nlohmann/json.hpp>

#include "server/ollama_responses.h"
#include "server/openai_responses.h"
#include "server/tool_call_parser.h"

using nlohmann::json;
using namespace tc::server;

namespace {

const std::vector<std::string>& names() {
  static const std::vector<std::string> n = {"get_time", "get_weather"};
  return n;
}

// "name(arguments)" per call, for compact checks.
std::vector<std::string> summary(const ToolCallReply& r) {
  std::vector<std::string> out;
  for (const auto& c : r.calls) out.push_back(c.name + c.arguments);
  return out;
}

using Calls = std::vector<std::string>;

}  // namespace

TEST_CASE("tool calls: the forms models write are found", "[server][tools]") {
  struct Case {
    std::string text;
    std::string content;
    Calls calls;
  };
  const std::vector<Case> cases = {
      // Hermes / Qwen tags, with text before, two calls, a missing last closing tag.
      {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "",
       {"get_weather{\"city\":\"Paris\"}"}},
      {"Let me look.\n<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>\n<tool_call>\n"
       "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}",
       "Let me look.\n", {"get_time{}", "get_weather{\"city\":\"Oslo\"}"}},
      // Bare JSON: Llama 3.x's "parameters", a string of arguments, no arguments.
      {"  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}", "", {"get_weather{\"city\":\"Rome\"}"}},
      {"{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Rome\\\"}\"}", "",
       {"get_weather{\"city\":\"Rome\"}"}},
      {"{\"type\": \"function\", \"name\": \"get_time\"}", "", {"get_time{}"}},
      // Several: ';'-separated, an array (Mistral), {"tool_calls": [...]}, OpenAI's shape.
      {"{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"get_weather\", \"parameters\": {\"city\": \"A\"}}", "",
       {"get_time{}", "get_weather{\"city\":\"A\"}"}},
      {"[{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}]", "",
       {"get_time{}", "get_weather{\"city\":\"B\"}"}},
      {"{\"tool_calls\": [{\"id\": \"x\", \"type\": \"function\", \"function\": {\"name\": \"get_time\", \"arguments\": "
       "\"{}\"}}]}",
       "", {"get_time{}"}},
      // A fence, and brackets inside strings.
      {"```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"} ] {\"}}\n```\n", "",
       {"get_weather{\"city\":\"} ] {\"}"}},
      // Mistral with its control tokens rendered: v11 names and [ARGS], a
      // [CALL_ID], two calls after text, and v3's JSON array.
      {"[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}", "", {"get_weather{\"city\":\"Paris\"}"}},
      {"I will check.[TOOL_CALLS]get_time[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{\"city\":\"Oslo\"}\n",
       "I will check.", {"get_time{}", "get_weather{\"city\":\"Oslo\"}"}},
      {"[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Rome\"}", "", {"get_weather{\"city\":\"Rome\"}"}},
      {"[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}, \"id\": \"abc123xyz\"}]", "", {"get_time{}"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const auto r = parse_tool_calls(c.text, names());
    CHECK(r.content == c.content);
    CHECK(summary(r) == c.calls);
  }
}

TEST_CASE("tool calls: lookalikes stay text, whole", "[server][tools]") {
  const std::vector<std::string> texts = {
      "Paris is sunny today.",
      "{\"name\": \"send_mail\", \"arguments\": {}}",                  // not a declared function
      "{\"name\": \"get_time\", \"arguments\": [1]}",                  // arguments not an object
      "{\"name\": \"get_time\", \"arguments\": {}",                    // cut off
      "{\"name\": \"get_time\", \"arguments\": {}} and then some text",  // text after the call
      "{\"city\": \"Paris\"}",                                         // JSON, but not a call
      "[]",
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"a\": }}\n</tool_call>",
      "<tool_call>\n{\"name\": \"nope\"}\n</tool_call>",
      "The tag <tool_call> is how calls are written.",
      "```python\nprint(1)\n```",
      "[TOOL_CALLS]send_mail[ARGS]{}",                 // not a declared function
      "[TOOL_CALLS]get_time[ARGS]{} and more",         // text after the call
      "[TOOL_CALLS]get_time{}",                        // no [ARGS]
      "[TOOL_CALLS]get_time[ARGS]{\"a\": ",            // cut off
      "[TOOL_CALLS]get_time[ARGS][1]",                 // arguments not an object
      "Write [TOOL_CALLS] before a call.",
  };
  for (const auto& text : texts) {
    CAPTURE(text);
    const auto r = parse_tool_calls(text, names());
    CHECK(r.calls.empty());
    CHECK(r.content == text);
  }
}

TEST_CASE("tool calls: the stream shows text at once and holds calls", "[server][tools]") {
  {
    ToolCallStream s;
    CHECK(s.push("Hello") == "Hello");
    CHECK(s.push(" wor") == " wor");
    CHECK(s.push("ld <tool") == "ld ");  // a tail that could begin the tag waits
    CHECK(s.push("_call>{\"name\": \"get_time\"}") == "");
    const auto r = s.finish(names());
    CHECK(r.content.empty());
    CHECK(summary(r) == Calls{"get_time{}"});
  }
  {
    ToolCallStream s;
    CHECK(s.push("\n ") == "");  // leading blanks wait to see what follows
    CHECK(s.push("{\"name\"") == "");
    CHECK(s.push(": \"get_weather\", \"arguments\": {\"city\": \"X\"}}") == "");
    const auto r = s.finish(names());
    CHECK(r.content.empty());
    CHECK(summary(r) == Calls{"get_weather{\"city\":\"X\"}"});
  }
  {
    ToolCallStream s;
    CHECK(s.push("<to") == "");
    CHECK(s.push("day>") == "<today>");  // not the tag after all
    CHECK(s.push("{\"x\": 1}") == "{\"x\": 1}");  // JSON after text is text
    const auto r = s.finish(names());
    CHECK(r.calls.empty());
    CHECK(r.content.empty());
  }
  {
    ToolCallStream s;
    CHECK(s.push("{\"answer\": 42}") == "");  // held: it might have been a call
    const auto r = s.finish(names());
    CHECK(r.calls.empty());
    CHECK(r.content == "{\"answer\": 42}");  // shown at the end, whole
  }
  {
    ToolCallStream forced(/*hold_all=*/true);
    CHECK(forced.push("Sure") == "");
    CHECK(forced.finish(names()).content == "Sure");
  }
}

TEST_CASE("tool calls: any cut of a reply into stream pieces gives what parsing it whole gives", "[server][tools]") {
  const std::vector<std::string> replies = {
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
      "{\"name\": \"get_time\", \"arguments\": {}}",
      "  [{\"name\": \"get_time\", \"arguments\": {}}]",
      "Plain text with < and <tool and {braces}.",
      "{\"not\": \"a call\"}",
      "``` not a fence",
      "<tool_call>{\"name\": \"unknown\"}</tool_call> tail",
      "\n\n<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>\n",
      "Let me check.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
      "[TOOL_CALLS]get_time[ARGS]{}",
      "Brackets [TOOL and [TOOL_CALL and [ stay text.",
  };
  std::mt19937 rng(3);
  for (const auto& reply : replies) {
    const auto whole = parse_tool_calls(reply, names());
    for (int trial = 0; trial < 200; ++trial) {
      ToolCallStream s;
      std::string shown;
      size_t at = 0;
      while (at < reply.size()) {
        const size_t n = std::min<size_t>(reply.size() - at, 1 + rng() % 6);
        shown += s.push(std::string_view(reply).substr(at, n));
        at += n;
      }
      const auto r = s.finish(names());
      CAPTURE(reply, shown);
      CHECK(shown + r.content == whole.content);
      CHECK(summary(r) == summary(whole));
    }
  }
}

TEST_CASE("tool calls: chat bodies and chunks carry them in OpenAI's shape", "[server][tools]") {
  ResponseMeta m;
  m.endpoint = Endpoint::Chat;
  m.id = "chatcmpl-1";
  ChoiceResult c;
  c.text = "";
  c.tool_calls = {{"get_time", "{}", "call_a"}, {"get_weather", "{\"city\":\"X\"}", "call_b"}};
  const json body = response_body(m, {c}, {}, false);
  const json& choice = body["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"].is_null());
  CHECK(choice["message"]["tool_calls"][1] ==
        json{{"id", "call_b"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"X\"}"}}}});
  c.text = "Checking.";
  CHECK(response_body(m, {c}, {}, false)["choices"][0]["message"]["content"] == "Checking.");

  const json chunk = tool_calls_chunk(m, 0, c.tool_calls, nullptr);
  CHECK(chunk["choices"][0]["delta"]["tool_calls"][1]["index"] == 1);
  CHECK(chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "get_time");
  CHECK(chunk["choices"][0]["finish_reason"].is_null());
  CHECK(finish_chunk(m, 0, tc::runtime::FinishReason::Stop, true)["choices"][0]["finish_reason"] == "tool_calls");
  CHECK(finish_chunk(m, 0, tc::runtime::FinishReason::Stop)["choices"][0]["finish_reason"] == "stop");
}

TEST_CASE("tool calls: Ollama's chat lines carry them with arguments as objects", "[server][tools][ollama]") {
  OllamaMeta m;
  m.chat = true;
  m.model = "tiny";
  const std::vector<ToolCall> calls = {{"get_weather", "{\"city\":\"X\"}", "call_a"}};
  const json line = ollama_chunk(m, "", calls);
  CHECK(line["done"] == false);
  CHECK(line["message"]["tool_calls"] == json::array({{{"function", {{"name", "get_weather"}, {"arguments", {{"city", "X"}}}}}}}));
  CHECK_FALSE(ollama_chunk(m, "hi")["message"].contains("tool_calls"));
}

TEST_CASE("tool calls: Mistral's marker tokens are found in a vocabulary", "[server][tools]") {
  const std::vector<std::string> pieces = {"a", "[TOOL_CALLS]", "b", "[ARGS]", "[CALL_ID]", "[TOOL_CALLS", "ARGS"};
  CHECK(tool_marker_ids(pieces) == std::vector<int32_t>{1, 3, 4});
  CHECK(tool_marker_ids({"<s>", "</s>"}).empty());
}

TEST_CASE("tool calls: Ollama's /api/show lists tools for every model, embedding for embedders", "[server][tools][ollama]") {
  CHECK(ollama_capabilities("llama", json{{"llama.block_count", 2}}) == json::array({"completion", "tools"}));
  CHECK(ollama_capabilities("qwen3", json{{"qwen3.pooling_type", 3}}) == json::array({"embedding"}));
  CHECK(ollama_capabilities("gemma3", json::object(), "", false, true) ==
        json::array({"completion", "tools", "vision"}));
  CHECK(ollama_capabilities("qwen3", json{{"qwen3.pooling_type", 0}}) == json::array({"completion", "tools"}));
  CHECK(ollama_capabilities("qwen3", json{{"llama.pooling_type", 1}}) == json::array({"completion", "tools"}));
  CHECK(ollama_capabilities("llama", nullptr) == json::array({"completion", "tools"}));
  // Thinking models: templates that write <think> or read enable_thinking.
  CHECK(ollama_capabilities("qwen3", nullptr, "{% if enable_thinking is false %}<think>\n\n</think>{% endif %}") ==
        json::array({"completion", "tools", "thinking"}));
  CHECK(ollama_capabilities("qwen2", nullptr, "{{ '<|Assistant|><think>\n' }}") ==
        json::array({"completion", "tools", "thinking"}));
  CHECK(ollama_capabilities("llama", nullptr, "{{ '<|im_start|>assistant\n' }}") == json::array({"completion", "tools"}));
}
