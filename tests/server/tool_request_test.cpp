// Function calling, the request side: tools / tool_choice /
// parallel_tool_calls validated with the field named in each 400; assistant
// tool_calls' argument strings turned into objects; and what templates
// without function calling get instead (the tools and the call format as
// text, calls in the content, results as user turns), rendered by the real
// ChatML and Qwen2.5 templates.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "engine/text/chat_template.h"
#include "server/chat_prompt_variables.h"
#include "server/ollama_schema.h"
#include "server/openai_schema.h"
#include "server/prompt_builder.h"
#include "server/tool_request.h"
#include "tests/test_util.h"

using nlohmann::json;
using namespace tc::server;

namespace {

json tool(const std::string& name) {
  return {{"type", "function"},
          {"function",
           {{"name", name},
            {"description", "d"},
            {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}};
}

json body(json extra) {
  json b = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

// The param the 400 names, or "ok".
std::string error_param(const json& b) {
  ToolRequest r;
  auto e = read_tool_request(b, r);
  if (!e) return "ok";
  CHECK(e->status == 400);
  CHECK_FALSE(e->message.empty());
  return e->param;
}

std::string read_template(const std::string& name) {
  std::ifstream in(tc::test::source_dir() / "tests/data/chat_templates/templates" / (name + ".jinja"));
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

TEST_CASE("tools: choice defaults, names sorted, forced names", "[server][tools]") {
  ToolRequest r;
  REQUIRE_FALSE(read_tool_request(body({{"tools", {tool("zeta"), tool("alpha")}}}), r));
  CHECK(r.names == std::vector<std::string>{"alpha", "zeta"});
  CHECK(r.choice == ToolRequest::Choice::Auto);
  CHECK(r.active());
  CHECK_FALSE(r.forced());
  CHECK(r.parallel);

  REQUIRE_FALSE(read_tool_request(body({{"tools", {tool("zeta"), tool("alpha")}}, {"tool_choice", "required"}}), r));
  CHECK(r.forced());
  CHECK(r.forced_names() == std::vector<std::string>{"alpha", "zeta"});

  REQUIRE_FALSE(read_tool_request(
      body({{"tools", {tool("zeta"), tool("alpha")}},
            {"tool_choice", {{"type", "function"}, {"function", {{"name", "zeta"}}}}},
            {"parallel_tool_calls", false}}),
      r));
  CHECK(r.choice == ToolRequest::Choice::Named);
  CHECK(r.forced_names() == std::vector<std::string>{"zeta"});
  CHECK_FALSE(r.parallel);

  REQUIRE_FALSE(read_tool_request(body({{"tools", {tool("a")}}, {"tool_choice", "none"}}), r));
  CHECK_FALSE(r.active());
  REQUIRE_FALSE(read_tool_request(body({{"tools", json::array()}}), r));  // an empty list: no tools
  CHECK_FALSE(r.active());
  CHECK(r.tools.is_null());
  REQUIRE_FALSE(read_tool_request(body({{"tools", nullptr}, {"tool_choice", "none"}}), r));
  CHECK_FALSE(r.active());
}

TEST_CASE("tools: malformed tools and tool_choice are 400s naming the field", "[server][tools]") {
  CHECK(error_param(body({{"tools", "x"}})) == "tools");
  CHECK(error_param(body({{"tools", {5}}})) == "tools");
  CHECK(error_param(body({{"tools", {{{"type", "retrieval"}}}}})) == "tools");
  CHECK(error_param(body({{"tools", {{{"type", "function"}}}}})) == "tools");
  CHECK(error_param(body({{"tools", {tool("has space")}}})) == "tools");
  CHECK(error_param(body({{"tools", {tool("quote\"")}}})) == "tools");
  CHECK(error_param(body({{"tools", {tool(std::string(65, 'a'))}}})) == "tools");
  CHECK(error_param(body({{"tools", {tool(std::string(64, 'a'))}}})) == "ok");
  CHECK(error_param(body({{"tools", {tool("ns.get:v-1_x")}}})) == "ok");
  CHECK(error_param(body({{"tools", {tool("f"), tool("f")}}})) == "tools");
  json bad_params = tool("f");
  bad_params["function"]["parameters"] = "object";
  CHECK(error_param(body({{"tools", {bad_params}}})) == "tools");
  json too_many = json::array();
  for (int i = 0; i <= static_cast<int>(ToolRequest::kMaxTools); ++i) {
    std::string name = "f";
    name.append(std::to_string(i));
    too_many.push_back(tool(name));
  }
  CHECK(error_param(body({{"tools", too_many}})) == "tools");

  CHECK(error_param(body({{"tool_choice", "auto"}})) == "tool_choice");  // no tools
  CHECK(error_param(body({{"tool_choice", "none"}})) == "ok");
  CHECK(error_param(body({{"tools", {tool("f")}}, {"tool_choice", "sometimes"}})) == "tool_choice");
  CHECK(error_param(body({{"tools", {tool("f")}}, {"tool_choice", 1}})) == "tool_choice");
  CHECK(error_param(body({{"tools", {tool("f")}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}})) ==
        "tool_choice");
  CHECK(error_param(body({{"tools", {tool("f")}}, {"parallel_tool_calls", "yes"}})) == "parallel_tool_calls");

  // Through the chat parser, with JSON mode a forced call is a conflict.
  RequestLimits limits;
  auto p = parse_chat_request(
      body({{"tools", {tool("f")}}, {"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}),
      limits);
  REQUIRE(p.error);
  CHECK(p.error->param == "tool_choice");
  CHECK_FALSE(parse_chat_request(body({{"tools", {tool("f")}}, {"response_format", {{"type", "json_object"}}}}), limits)
                  .error);
}

TEST_CASE("tools: assistant tool_calls get their arguments as objects, malformed ones are 400s", "[server][tools]") {
  auto message = [](json arguments) {
    return json{{"role", "assistant"},
                {"content", nullptr},
                {"tool_calls", {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", arguments}}}}}}};
  };
  json m = message("{\"a\": [1, 2]}");
  REQUIRE_FALSE(normalise_message_tool_calls(m, 0));
  CHECK(m["tool_calls"][0]["function"]["arguments"] == json{{"a", {1, 2}}});
  m = message(json{{"b", true}});
  REQUIRE_FALSE(normalise_message_tool_calls(m, 0));
  CHECK(m["tool_calls"][0]["function"]["arguments"] == json{{"b", true}});
  m = message(nullptr);
  REQUIRE_FALSE(normalise_message_tool_calls(m, 0));
  CHECK(m["tool_calls"][0]["function"]["arguments"] == json::object());
  for (const json& bad : {json("not json"), json("[1]"), json(5)}) {
    m = message(bad);
    const auto e = normalise_message_tool_calls(m, 3);
    REQUIRE(e);
    CHECK(e->param == "messages");
    CHECK(e->message.find("messages[3].tool_calls[0]") != std::string::npos);
  }
  json no_function = {{"role", "assistant"}, {"tool_calls", {{{"id", "c"}}}}};
  CHECK(normalise_message_tool_calls(no_function, 0));
  json not_array = {{"role", "assistant"}, {"tool_calls", "x"}};
  CHECK(normalise_message_tool_calls(not_array, 0));
}

TEST_CASE("tools: templates without function calling get the tools and the calls as text", "[server][tools]") {
  CHECK_FALSE(TemplateToolSupport::of(read_template("chatml")).tools);
  CHECK_FALSE(TemplateToolSupport::of(read_template("chatml")).tool_calls);
  CHECK(TemplateToolSupport::of(read_template("qwen2_5")).tools);
  CHECK(TemplateToolSupport::of(read_template("qwen2_5")).tool_calls);

  const json messages = {
      {{"role", "user"}, {"content", "Weather in Paris?"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "c"}, {"content", "{\"t\": 21}"}},
  };
  RequestLimits limits;
  auto p = parse_chat_request(body({{"messages", messages}, {"tools", {tool("get_weather")}}}), limits);
  REQUIRE_FALSE(p.error);

  const tc::text::ChatTemplate chatml(read_template("chatml"));
  // Rendered as sent, ChatML fails on the null content; rewritten, it renders.
  CHECK_THROWS_AS(chatml.render(chat_prompt_variables(*p.request, "", "")), tc::text::ChatTemplateError);
  const std::string text =
      chatml.render(chat_prompt_variables(*p.request, "", "", TemplateToolSupport::of(chatml.source())));
  CAPTURE(text);
  CHECK(text.find("<|im_start|>user\nYou can call functions.") == 0);  // no system message: before the user's text
  CHECK(text.find("{\"description\":\"d\",\"name\":\"get_weather\"") != std::string::npos);
  CHECK(text.find("Weather in Paris?<|im_end|>") != std::string::npos);
  CHECK(text.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n"
                  "</tool_call><|im_end|>") != std::string::npos);
  CHECK(text.find("<|im_start|>user\n<tool_response>\n{\"t\": 21}\n</tool_response><|im_end|>") != std::string::npos);

  // With a system message the tools go there; tool_choice "none" drops them.
  json with_system = messages;
  const json system_message = {{"role", "system"}, {"content", "Be brief."}};
  with_system.insert(with_system.begin(), system_message);
  p = parse_chat_request(body({{"messages", with_system}, {"tools", {tool("get_weather")}}}), limits);
  REQUIRE_FALSE(p.error);
  const std::string sys = chatml.render(chat_prompt_variables(*p.request, "", "", TemplateToolSupport::of(chatml.source())));
  CHECK(sys.find("<|im_start|>system\nBe brief.\n\nYou can call functions.") == 0);
  p = parse_chat_request(body({{"messages", with_system}, {"tools", {tool("get_weather")}}, {"tool_choice", "none"}}),
                         limits);
  REQUIRE_FALSE(p.error);
  const std::string none =
      chatml.render(chat_prompt_variables(*p.request, "", "", TemplateToolSupport::of(chatml.source())));
  CHECK(none.find("You can call functions") == std::string::npos);
  CHECK(none.find("<tool_call>") != std::string::npos);  // the history still shows the earlier call

  // A template that knows tools renders them itself, calls from the message.
  const tc::text::ChatTemplate qwen(read_template("qwen2_5"));
  p = parse_chat_request(body({{"messages", messages}, {"tools", {tool("get_weather")}}}), limits);
  REQUIRE_FALSE(p.error);
  const std::string q = qwen.render(chat_prompt_variables(*p.request, "", "", TemplateToolSupport::of(qwen.source())));
  CAPTURE(q);
  CHECK(q.find("You can call functions") == std::string::npos);
  CHECK(q.find("<tools>") != std::string::npos);
  CHECK(q.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>") !=
        std::string::npos);
}

TEST_CASE("tools: Mistral's template gets 9-character call ids, the same in a call and its result", "[server][tools]") {
  CHECK(nine_char_call_id("abcDEF123") == "abcDEF123");
  const std::string a = nine_char_call_id("call_6b0915fb6d155726cfcd8afb");
  const std::string b = nine_char_call_id("call_6b0915fb6d155726cfcd8afc");
  CHECK(a.size() == 9);
  CHECK(std::all_of(a.begin(), a.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }));
  CHECK(a == nine_char_call_id("call_6b0915fb6d155726cfcd8afb"));
  CHECK(a != b);
  CHECK(nine_char_call_id("abc-DEF12") != "abc-DEF12");

  const tc::text::ChatTemplate mistral(read_template("mistral_v03"));
  const auto support = TemplateToolSupport::of(mistral.source());
  CHECK(support.nine_char_ids);
  CHECK_FALSE(TemplateToolSupport::of(read_template("qwen2_5")).nine_char_ids);
  const std::string id = "call_6b0915fb6d155726cfcd8afb";
  const json messages = {
      {{"role", "user"}, {"content", "Weather in Paris?"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", {{{"id", id}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", id}, {"content", "{\"t\": 21}"}},
  };
  RequestLimits limits;
  auto p = parse_chat_request(body({{"messages", messages}, {"tools", {tool("get_weather")}}}), limits);
  REQUIRE_FALSE(p.error);
  // As sent, the template refuses the id; mapped, it renders the call and its result under one id.
  CHECK_THROWS_AS(mistral.render(chat_prompt_variables(*p.request, "<s>", "</s>")), tc::text::ChatTemplateError);
  const std::string text = mistral.render(chat_prompt_variables(*p.request, "<s>", "</s>", support));
  CAPTURE(text);
  CHECK(text.find("[TOOL_CALLS]") != std::string::npos);
  CHECK(text.find("[TOOL_RESULTS]") != std::string::npos);
  const size_t first = text.find(a);
  REQUIRE(first != std::string::npos);
  CHECK(text.find(a, first + 1) != std::string::npos);
  CHECK(text.find(id) == std::string::npos);
}

TEST_CASE("reasoning_effort reaches the template as a variable unless chat_template_kwargs sets one", "[server][schema]") {
  const tc::text::ChatTemplate effort_template("Reasoning: {{ reasoning_effort | default('medium') }}");
  const json messages = {{{"role", "user"}, {"content", "Hi"}}};
  RequestLimits limits;
  auto render = [&](const json& extra) {
    json b = {{"messages", messages}};
    b.update(extra);
    auto p = parse_chat_request(body(b), limits);
    REQUIRE_FALSE(p.error);
    return effort_template.render(chat_prompt_variables(*p.request, "", ""));
  };
  CHECK(render(json::object()) == "Reasoning: medium");
  CHECK(render({{"reasoning_effort", "high"}}) == "Reasoning: high");
  CHECK(render({{"reasoning_effort", "low"}, {"chat_template_kwargs", {{"reasoning_effort", "high"}}}}) ==
        "Reasoning: high");
  for (const json& bad : {json("extreme"), json(3)}) {
    auto p = parse_chat_request(body({{"messages", messages}, {"reasoning_effort", bad}}), limits);
    REQUIRE(p.error);
    CHECK(p.error->status == 400);
    CHECK(p.error->param == "reasoning_effort");
  }
}

TEST_CASE("chat_template_kwargs reach the template: Qwen3's enable_thinking", "[server][schema]") {
  const tc::text::ChatTemplate qwen3(read_template("qwen3"));
  const json messages = {{{"role", "user"}, {"content", "Hi"}}};
  RequestLimits limits;
  auto plain = parse_chat_request(body({{"messages", messages}}), limits);
  REQUIRE_FALSE(plain.error);
  const std::string thinking = qwen3.render(chat_prompt_variables(*plain.request, "", ""));
  auto off = parse_chat_request(body({{"messages", messages}, {"chat_template_kwargs", {{"enable_thinking", false}}}}), limits);
  REQUIRE_FALSE(off.error);
  const std::string quiet = qwen3.render(chat_prompt_variables(*off.request, "", ""));
  CAPTURE(thinking, quiet);
  CHECK(thinking.ends_with("<|im_start|>assistant\n"));
  CHECK(quiet == thinking + "<think>\n\n</think>\n\n");

  // Not an object, or a variable the request's own fields set: 400s naming the field.
  for (const json& bad : {json("x"), json{{"messages", json::array()}}, json{{"add_generation_prompt", false}}}) {
    auto p = parse_chat_request(body({{"messages", messages}, {"chat_template_kwargs", bad}}), limits);
    REQUIRE(p.error);
    CHECK(p.error->status == 400);
    CHECK(p.error->param == "chat_template_kwargs");
  }

  // Ollama's think: false asks for the same, and true for thinking, returned apart.
  const json ollama_messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  const auto no_think = translate_ollama_chat(json{{"model", "m"}, {"messages", ollama_messages}, {"think", false}});
  REQUIRE_FALSE(no_think.error);
  CHECK(no_think.openai["chat_template_kwargs"] == json{{"enable_thinking", false}});
  CHECK(no_think.openai["reasoning_format"] == "none");
  const auto think = translate_ollama_chat(json{{"model", "m"}, {"messages", ollama_messages}, {"think", true}});
  REQUIRE_FALSE(think.error);
  CHECK(think.openai["chat_template_kwargs"] == json{{"enable_thinking", true}});
  CHECK(think.openai["reasoning_format"] == "deepseek");
  const auto unset = translate_ollama_chat(json{{"model", "m"}, {"messages", ollama_messages}});
  CHECK_FALSE(unset.openai.contains("chat_template_kwargs"));
  CHECK(unset.openai["reasoning_format"] == "none");
  const auto bad_think = translate_ollama_chat(json{{"model", "m"}, {"messages", ollama_messages}, {"think", "high"}});
  REQUIRE(bad_think.error);
  CHECK(bad_think.error->param == "think");
}

TEST_CASE("lazy tool calls: a chat template says how its model opens a call", "[server][tools]") {
  auto of = [](const std::string& stem) {
    return lazy_tool_call(tc::test::read_file(tc::test::source_dir() / "tests" / "data" / "chat_templates" /
                                              "templates" / (stem + ".jinja")));
  };
  for (const std::string stem : {"qwen2_5", "qwen3"}) {
    INFO(stem);
    CHECK(of(stem).trigger == "<tool_call>");  // Hermes blocks
  }
  const auto llama = of("llama3_1");
  CHECK(llama.trigger.empty());
  CHECK(llama.at_start);  // the reply is the call's JSON
  CHECK_FALSE(llama.mistral);
  // v0.3 writes [TOOL_CALLS] and a JSON list (not held); v11 and later NAME[ARGS]{...}.
  CHECK_FALSE(of("mistral_v03").any());
  CHECK_FALSE(of("mistral_v03").mistral);
  CHECK(lazy_tool_call("{%- if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}"
                       "{{- '[TOOL_CALLS]' + call.function.name + '[ARGS]' + call.function.arguments }}")
            .mistral);
  // Templates that render no tools: the server asks for <tool_call> blocks.
  for (const std::string stem : {"chatml", "llama3", "gemma3", "phi3"}) {
    INFO(stem);
    CHECK(of(stem).trigger == "<tool_call>");
  }
  // Templates with a call form of their own that is not held.
  for (const std::string stem : {"command_r7b", "granite3"}) {
    INFO(stem);
    const auto none = of(stem);
    CHECK_FALSE(none.any());
    CHECK_FALSE(none.mistral);
  }
}
