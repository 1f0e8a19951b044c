// ChatTemplate: every template in tests/data/chat_templates/templates over
// every conversation renders byte-for-byte what Python's jinja2 renders
// (expected/, written by scripts/chat_templates/render_expected.py), fails
// where jinja2 fails, and the errors name the line; plus unit tests of the
// expression language, filters, tests and whitespace control.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/text/chat_template.h"
#include "tests/test_util.h"

using tc::text::ChatTemplate;
using tc::text::ChatTemplateError;
using json = nlohmann::json;

namespace {

const std::filesystem::path& data_dir() {
  static const std::filesystem::path dir = tc::test::source_dir() / "tests" / "data" / "chat_templates";
  return dir;
}

std::string render(std::string_view source, const json& vars = json::object()) {
  return ChatTemplate(source).render(vars);
}

// The message of the ChatTemplateError that rendering throws ("" if none).
std::string render_error(std::string_view source, const json& vars = json::object()) {
  try {
    render(source, vars);
  } catch (const ChatTemplateError& e) {
    return e.what();
  }
  return "";
}

const json kMessages = json::parse(R"([
  {"role": "system", "content": "sys"},
  {"role": "user", "content": "  hi  "},
  {"role": "assistant", "content": "yo"}
])");

}  // namespace

TEST_CASE("chat_template: every template over every conversation matches jinja2", "[chat_template]") {
  const json conversations = json::parse(tc::test::read_file(data_dir() / "conversations.json"));
  std::vector<std::filesystem::path> templates;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir() / "templates")) {
    if (entry.path().extension() == ".jinja") templates.push_back(entry.path());
  }
  std::sort(templates.begin(), templates.end());
  REQUIRE(templates.size() >= 20);
  REQUIRE(conversations.size() >= 6);

  size_t n_files = 0, n_renders = 0, n_errors = 0;
  for (const auto& path : templates) {
    const ChatTemplate tmpl(tc::test::read_file(path));
    for (const json& conv : conversations) {
      const std::string stem = path.stem().string() + "__" + conv["name"].get<std::string>();
      INFO("case " << stem);
      const auto txt = data_dir() / "expected" / (stem + ".txt");
      const auto err = data_dir() / "expected" / (stem + ".error");
      if (std::filesystem::exists(txt)) {
        ++n_files;
        ++n_renders;
        std::string got;
        try {
          got = tmpl.render(conv["variables"]);
        } catch (const ChatTemplateError& e) {
          FAIL("threw: " << e.what());
        }
        CHECK(got == tc::test::read_file(txt));
      } else {
        REQUIRE(std::filesystem::exists(err));
        ++n_files;
        ++n_errors;
        const std::string expected = tc::test::read_file(err);
        const std::string kind = expected.substr(0, expected.find('\n'));
        const std::string message = expected.substr(expected.find('\n') + 1);
        try {
          tmpl.render(conv["variables"]);
          FAIL("rendered, jinja2 raised " << kind << ": " << message);
        } catch (const ChatTemplateError& e) {
          const std::string what = e.what();
          CHECK(what.rfind("chat template line ", 0) == 0);
          // raise_exception's message reaches the client verbatim.
          if (kind == "TemplateError") CHECK(what.find(": " + message) != std::string::npos);
        }
      }
    }
  }
  CHECK(n_files == templates.size() * conversations.size());
  CHECK(n_renders > 100);
  CHECK(n_errors > 10);
}

TEST_CASE("chat_template: the ChatML default", "[chat_template]") {
  const ChatTemplate chatml(ChatTemplate::chatml_source());
  json vars = {{"messages", kMessages}, {"add_generation_prompt", true}};
  CHECK(chatml.render(vars) ==
        "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\n  hi  <|im_end|>\n"
        "<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>assistant\n");
  vars["add_generation_prompt"] = false;
  CHECK(chatml.render(vars) ==
        "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\n  hi  <|im_end|>\n"
        "<|im_start|>assistant\nyo<|im_end|>\n");
  CHECK(chatml.source() == ChatTemplate::chatml_source());
}

TEST_CASE("chat_template: parse errors name the line", "[chat_template]") {
  const auto parse_error = [](std::string_view src) {
    try {
      ChatTemplate t(src);
    } catch (const ChatTemplateError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(parse_error("a\nb\n{{ 1 + }}") .rfind("chat template line 3: ", 0) == 0);
  CHECK(parse_error("{% for m in messages %}\n{{ m }}\n") .find("expected 'else' or 'endfor'") != std::string::npos);
  CHECK(parse_error("x\n{% frobnicate %}").rfind("chat template line 2: encountered unknown tag 'frobnicate'", 0) == 0);
  CHECK(parse_error("{{ x | nosuchfilter }}").find("no filter named 'nosuchfilter'") != std::string::npos);
  CHECK(parse_error("{{ x is nosuchtest }}").find("no test named 'nosuchtest'") != std::string::npos);
  CHECK(parse_error("\n\n\n{{ 'unterminated }}").rfind("chat template line 4: ", 0) == 0);
  CHECK(parse_error("{% if x %}a{% endfor %}").find("chat template line 1") == 0);
  CHECK(parse_error("{# never closed").find("comment") != std::string::npos);
  CHECK(parse_error("{{ x }").find("unexpected end of template") != std::string::npos);
  CHECK_NOTHROW(ChatTemplate("{% if x %}a{% elif y %}b{% else %}c{% endif %}"));
}

TEST_CASE("chat_template: runtime errors name the line and the fault", "[chat_template]") {
  CHECK(render_error("a\nb\n{{ raise_exception('Boom: ' ~ x) }}", {{"x", 1}}) == "chat template line 3: Boom: 1");
  CHECK(render_error("\n{{ messages[0].content.strip() }}", {{"messages", json::parse(R"([{"content": 5}])")}}) ==
        "chat template line 2: 'int object' has no attribute 'strip'");
  CHECK(render_error("{{ nothing() }}") == "chat template line 1: 'nothing' is undefined");
  CHECK(render_error("\n\n{{ 'a' + 1 }}").rfind("chat template line 3: unsupported operand type(s) for +", 0) == 0);
  CHECK(render_error("{{ 1 // 0 }}") == "chat template line 1: division by zero");
  CHECK(render_error("{{ x + 1 }}") == "chat template line 1: 'x' is undefined");
  CHECK(render_error("{{ 1 < 'a' }}").find("'<' not supported") != std::string::npos);
  CHECK(render_error("{% set x = 1 %}{% set x.a = 2 %}").find("non-namespace") != std::string::npos);
  CHECK(render_error("{{ 5 | tojson }}{{ x | tojson }}").find("not JSON serializable") != std::string::npos);
  CHECK(render_error("{{ 'abc'.startswith(1) }}").find("startswith() argument must be str") != std::string::npos);
  CHECK(render_error("{% for x in 5 %}{% endfor %}").find("is not iterable") != std::string::npos);
  CHECK(render_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}").find("takes not more than 1") != std::string::npos);
  CHECK(render_error("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}").find("recursion") != std::string::npos);
  // Numbers past int64: an error naming the number, or int's default; never an escaped exception.
  CHECK(render_error("{{ x.111111111111111111111111 }}") == "chat template line 1: number out of range: 111111111111111111111111");
  CHECK(render("{{ 1e300 | int }} {{ '1e300' | int(7) }} {{ 2.5 | int }}") == "0 7 2");
  CHECK(render("{{ [[1, 2]] | map(attribute='99999999999999999999') | list }}") == "[Undefined]");  // as jinja2
}

TEST_CASE("chat_template: templates too deep for the stack are errors, not crashes", "[chat_template]") {
  // Each of these overflowed the stack (parsing, rendering or freeing) at this size; the limits
  // are kMaxTemplateNesting (100) levels of parser recursion and kMaxExprDepth (256) per expression.
  const int n = 100000;
  auto repeat = [](std::string_view piece, int times) {
    std::string out;
    for (int i = 0; i < times; ++i) out += piece;
    return out;
  };
  const std::string parens = "{{ " + repeat("(", n) + "1" + repeat(")", n) + " }}";
  const std::string lists = "{{ " + repeat("[", n) + repeat("]", n) + " }}";
  const std::string nots = "{{ " + repeat("not ", n) + "x }}";
  const std::string negs = "{{ " + repeat("-", n) + "1 }}";
  const std::string sums = "{{ 1" + repeat(" + 1", n) + " }}";
  const std::string attrs = "{{ x" + repeat(".a", n) + " }}";
  const std::string filters = "{{ 'x'" + repeat("|trim", n) + " }}";
  const std::string ifs = repeat("{% if true %}", n) + repeat("{% endif %}", n);
  for (const auto* source : {&parens, &lists, &nots, &negs, &sums, &attrs, &filters, &ifs}) {
    INFO(source->substr(0, 40));
    CHECK_THAT(render_error(*source), Catch::Contains("levels deep"));
  }
  // Macros multiply the depths: 63 nested calls, each inside a 250-term sum (it overflowed the stack).
  CHECK_THAT(render_error("{% macro r(n) %}{% if n > 0 %}{{ r(n - 1)" + repeat(" + 1", 250) +
                          " }}{% endif %}{% endmacro %}{{ r(63) }}"),
             Catch::Contains("(in macros calling macros) more than 1000 levels deep"));
  // Within the limits: 90 brackets, a 200-term sum.
  CHECK(render("{{ " + repeat("(", 90) + "1" + repeat(")", 90) + " }}") == "1");
  CHECK(render("{{ 0" + repeat(" + 1", 200) + " }}") == "200");
  // A namespace may not hold a namespace (a cycle would recurse forever when printed, and leak),
  // nor grow a value deeper than 256 levels across loop iterations.
  CHECK_THAT(render_error("{% set ns = namespace(x=0) %}{% set ns.x = ns %}{{ ns }}"), Catch::Contains("cannot hold a namespace"));
  CHECK_THAT(render_error("{% set ns = namespace(x=[]) %}{% set ns.x = ns.x + [ns] %}"), Catch::Contains("cannot hold a namespace"));
  CHECK_THAT(render_error("{% set ns = namespace(x=0) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}"),
             Catch::Contains("levels deep"));
  CHECK(render("{% set ns = namespace(x=0) %}{% for i in range(3) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}") ==
        "[[[0]]]");
}

TEST_CASE("chat_template: Llama-2 rejects roles that do not alternate", "[chat_template]") {
  const ChatTemplate llama2(tc::test::read_file(data_dir() / "templates" / "llama2.jinja"));
  const json ok = {{"bos_token", "<s>"}, {"eos_token", "</s>"},
                   {"messages", json::parse(R"([{"role":"user","content":"a"},{"role":"assistant","content":"b"}])")}};
  CHECK(llama2.render(ok) == "<s>[INST] a [/INST] b </s>");
  json bad = ok;
  bad["messages"] = json::parse(R"([{"role":"user","content":"a"},{"role":"user","content":"b"}])");
  CHECK_THROWS_WITH(llama2.render(bad),
                    "chat template line 1: Conversation roles must alternate user/assistant/user/assistant/...");
}

TEST_CASE("chat_template: variables, attributes, items and slices", "[chat_template]") {
  const json vars = {{"messages", kMessages}, {"n", 3}, {"d", {{"k", {{"x", 1}}}}}};
  CHECK(render("{{ messages[1].role }} {{ messages[1]['role'] }} {{ messages[-1].content }} {{ messages.0.role }}", vars) ==
        "user user yo system");
  CHECK(render("{{ messages[1:] | map(attribute='role') | join(',') }}|{{ messages[:-1] | length }}|{{ messages[::-1][0].role }}", vars) ==
        "user,assistant|2|assistant");
  CHECK(render("{{ 'héllo'[1:4] }} {{ 'abc'[-2:] }} {{ [1,2,3,4,5][1::2] }}") == "éll bc [2, 4]");
  CHECK(render("{{ d.k.x }}{{ d['k']['x'] }}{{ d.k.y }}|{{ d.nope.deeper.still is defined }}", vars) == "11|False");
  CHECK(render("[{{ missing }}][{{ missing.attr }}][{{ missing is defined }}][{{ missing is undefined }}]") ==
        "[][][False][True]");
  CHECK(render("{% if missing %}t{% else %}f{% endif %}{% for x in missing %}x{% else %}empty{% endfor %}") == "fempty");
  CHECK(render("{{ messages[7] is defined }} {{ messages[1].nope is defined }}", vars) == "False False");
}

TEST_CASE("chat_template: loops", "[chat_template]") {
  const json vars = {{"messages", kMessages}};
  CHECK(render("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
               "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
               vars) == "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  CHECK(render("{% for m in messages if m.role != 'system' %}{{ loop.index }}/{{ loop.length }}{{ m.role }} {% endfor %}", vars) ==
        "1/2user 2/2assistant ");
  CHECK(render("{% for m in [] %}x{% else %}none{% endfor %}") == "none");
  CHECK(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}{{ v }}{% endfor %}") == "a1b2");
  CHECK(render("{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}") == "ba");
  CHECK(render("{% for c in 'hé' %}[{{ c }}]{% endfor %}") == "[h][é]");
  CHECK(render("{% for i in range(6) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}") ==
        "023");
  CHECK(render("{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}") == "121122");
  CHECK(render("{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{% endfor %}") == "ab0a1");
}

TEST_CASE("chat_template: set, block set, namespace and scoping", "[chat_template]") {
  CHECK(render("{% set x = 1 %}{% for i in range(3) %}{% set x = i %}{% endfor %}{{ x }}") == "1");
  CHECK(render("{% if true %}{% set y = 'leaks' %}{% endif %}{{ y }}") == "leaks");
  CHECK(render("{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}"
               "{{ ns.n }} {{ ns.s }}") == "6 0123");
  CHECK(render("{% set ns = namespace() %}{% set ns.found = true %}{{ ns.found }}") == "True");
  CHECK(render("{% set b %}x{{ 1 + 1 }}y{% endset %}[{{ b }}]") == "[x2y]");
  CHECK(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}") == "21");
  CHECK(render("{% set x = 'outer' %}{% macro m() %}{{ x }}{% endmacro %}{{ m() }}") == "outer");
}

TEST_CASE("chat_template: macros", "[chat_template]") {
  CHECK(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
               "{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }} [{{ greet() }}]") ==
        "Hi a! Hi b? Hi c. [Hi !]");
  CHECK(render("{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}") == "3210");
  CHECK(render("{%- macro row(x) -%}\n  <{{ x }}>\n{%- endmacro -%}\n{{ row(1) }}{{ row(2) }}") == "<1><2>");
}

TEST_CASE("chat_template: operators", "[chat_template]") {
  CHECK(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 8 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 1 + 2 * 3 }}") ==
        "3 -4 1 2 256 3.5 2.0 7");
  CHECK(render("{{ 'a' ~ 1 ~ none ~ true ~ missing }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 2 }}") == "a1NoneTrue ab [1, 2] abab");
  CHECK(render("{{ 'b' in 'abc' }} {{ 'z' not in 'abc' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' in missing }}") ==
        "True True True True False");
  CHECK(render("{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }} {{ [1, 2] < [1, 3] }}") ==
        "True False True True True True");
  CHECK(render("{{ not true }} {{ true and 'x' }} {{ 0 or 'y' }} {{ none or [] }} {{ not missing }}") == "False x y [] True");
  CHECK(render("{{ 'y' if 1 > 0 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if false }}]") == "y n []");
  CHECK(render("{{ -3 | abs }} {{ 10 - 2 - 3 }} {{ 2 ** 3 ** 2 }} {{ (1 + 2) * 3 }}") == "3 5 64 9");
  CHECK(render("{{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 1e16 }} {{ 1e15 }} {{ 2.50 }} {{ -0.0 }}") ==
        "0.30000000000000004 1e-05 1e+16 1000000000000000.0 2.5 -0.0");
}

TEST_CASE("chat_template: filters", "[chat_template]") {
  CHECK(render("[{{ '  x y \n' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ 'Ab' | upper }}{{ 'Ab' | lower }}]") == "[x y][a][ABab]");
  CHECK(render("{{ 'hello big-world' | title }} {{ 'hELLO' | capitalize }} {{ 'aXbX' | replace('X', '-') }}") ==
        "Hello Big-World Hello a-b-");
  CHECK(render("{{ [1, 2] | join(', ') }} {{ ['a'] | first }}{{ ['a', 'b'] | last }} {{ [3, 1, 2] | sort | list }}") ==
        "1, 2 ab [1, 2, 3]");
  CHECK(render("{{ missing | default('d') }} {{ '' | default('d') }}|{{ '' | default('d', true) }} {{ 0 | d(5, boolean=true) }}") ==
        "d |d 5");
  CHECK(render("{{ 5 | string }} {{ '42' | int + 1 }} {{ 'x' | int }} {{ 2.7 | int }} {{ 'abc' | list }} {{ 'ab' | length }}") ==
        "5 43 0 2 ['a', 'b', 'c'] 2");
  CHECK(render("{{ {'a': 1} | items | list | length }} {% for k, v in {'a': 1} | items %}{{ k }}={{ v }}{% endfor %}") == "1 a=1");
  const json vars = {{"messages", kMessages}};
  CHECK(render("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join }}|"
               "{{ messages | rejectattr('role', 'in', ['system', 'user']) | map(attribute='role') | first }}|"
               "{{ messages | map(attribute='role') | map('upper') | join(',') }}",
               vars) == "  hi  |assistant|SYSTEM,USER,ASSISTANT");
  CHECK(render("{{ '<a & \"b\">' | escape }} {{ '<b>' | safe }} {{ 'a\nb' | indent(2) }}") ==
        "&lt;a &amp; &#34;b&#34;&gt; <b> a\n  b");
  CHECK(render("{{ [1, 1, 2] | unique | list }} {{ [1, 2, 3] | sum }} {{ [2, 9, 4] | max }} {{ 2.5 | round }} {{ 3.14159 | round(2) }}") ==
        "[1, 2] 6 9 2.0 3.14");
}

TEST_CASE("chat_template: tojson matches HuggingFace's json.dumps", "[chat_template]") {
  const json vars = {{"tool", json::parse(R"({"name": "f", "parameters": {"type": "object", "required": ["a"], "x": [1, 2.5, null, true]}})")}};
  CHECK(render("{{ tool | tojson }}", vars) ==
        R"({"name": "f", "parameters": {"required": ["a"], "type": "object", "x": [1, 2.5, null, true]}})");
  CHECK(render("{{ tool.parameters.x | tojson(indent=2) }}", vars) == "[\n  1,\n  2.5,\n  null,\n  true\n]");
  CHECK(render("{{ {'b': {}, 'a': []} | tojson(indent=4) }}") == "{\n    \"b\": {},\n    \"a\": []\n}");
  CHECK(render("{{ 'é \"q\" <&> \\n\\t' | tojson }}") == "\"é \\\"q\\\" <&> \\n\\t\"");
  CHECK(render("{{ 'é' | tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}") ==
        "\"\\u00e9\" {\"a\": 2, \"b\": 1}");
}

TEST_CASE("chat_template: tests", "[chat_template]") {
  CHECK(render("{{ none is none }} {{ 1 is number }} {{ 1.5 is float }} {{ 1 is integer }} {{ true is boolean }} {{ 's' is string }}") ==
        "True True True True True True");
  CHECK(render("{{ {} is mapping }} {{ [] is sequence }} {{ 's' is iterable }} {{ 1 is iterable }} {{ true is true }} {{ 0 is false }}") ==
        "True True True False True False");
  CHECK(render("{{ 2 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 'a' is in 'ab' }}") ==
        "True True True True False True");
  CHECK(render("{{ x is not defined }} {{ 'x' is not string }} {{ 1 is not none }}") == "True False True");
}

TEST_CASE("chat_template: str and dict methods", "[chat_template]") {
  CHECK(render("[{{ ' a '.strip() }}][{{ ' a '.lstrip() }}][{{ ' a '.rstrip() }}][{{ '--a--'.strip('-') }}]") == "[a][a ][ a][a]");
  CHECK(render("{{ 'abc'.startswith('a') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'ab')) }}") == "True True True");
  CHECK(render("{{ 'a b  c'.split() }} {{ 'a,b'.split(',') }} {{ 'a</think>b</think>c'.split('</think>')[-1] }}") ==
        "['a', 'b', 'c'] ['a', 'b'] c");
  CHECK(render("{{ 'Ab'.upper() }} {{ 'Ab'.lower() }} {{ 'aa'.replace('a', 'b') }} {{ 'user role'.title() }}") == "AB ab bb User Role");
  const json vars = {{"d", {{"a", 1}, {"b", 2}}}};
  CHECK(render("{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z', 0) }} {{ d.get('z') }}", vars) ==
        "['a', 'b'] [1, 2] 1 0 None");
}

TEST_CASE("chat_template: whitespace control, trim_blocks and lstrip_blocks", "[chat_template]") {
  CHECK(render("a  {%- if true -%}  b  {%- endif -%}  c") == "abc");
  CHECK(render("a  {{- 'b' -}}  c") == "abc");
  CHECK(render("{% if true %}\nx\n{% endif %}\ny") == "x\ny");          // trim_blocks eats the newline after %}
  CHECK(render("  {% if true %}x{% endif %}") == "x");                  // lstrip_blocks eats the indentation
  CHECK(render("a  {% if true %}x{% endif %}") == "a  x");              // only at the start of a line
  CHECK(render("  {{ 'v' }}\n") == "  v");                               // not before {{, and one trailing \n dropped
  CHECK(render("  {%+ if true %}x{% endif %}") == "  x");               // + keeps the indentation
  CHECK(render("{% if true +%}\nx{% endif %}") == "\nx");               // +%} keeps the newline
  CHECK(render("a\n  {# note #}\nb") == "a\nb");                         // comments are blocks too
  CHECK(render("a {#- note -#} b") == "ab");
  CHECK(render("{% raw %}{{ x }}{% endraw %}") == "{{ x }}");
  CHECK(render("line\r\nnext\r\n") == "line\nnext");
}

TEST_CASE("chat_template: strftime_now and generation blocks", "[chat_template]") {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  const std::string year = std::to_string(1900 + local.tm_year);
  const std::string got = render("{{ strftime_now('%Y') }}");
  CHECK((got == year || got == std::to_string(1900 + local.tm_year + 1)));
  CHECK(render("{% generation %}kept {{ 1 }}{% endgeneration %}") == "kept 1");
}

TEST_CASE("chat_template: one template renders from many threads", "[chat_template]") {
  const ChatTemplate tmpl(tc::test::read_file(data_dir() / "templates" / "qwen2_5.jinja"));
  const json vars = {{"messages", kMessages}, {"add_generation_prompt", true}};
  const std::string expected = tmpl.render(vars);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) mismatches += tmpl.render(vars) != expected;
    });
  }
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
}
