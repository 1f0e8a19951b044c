// A small chat template that writes Gemma 4's turn format, for the tests
// (tests/server/gemma4_prompt_test.cpp, tests/integration/gemma4_api_test.cpp):
// <|turn>ROLE\n...<turn|>\n, tools as <|tool>declaration:NAME<tool|> in a
// system turn, calls as <|tool_call>call:NAME{key:value}<tool_call|> with
// Gemma's values (<|"|>strings<|"|>), results from the assistant message's
// tool_responses (as Gemma 4's templates before their "OpenAI Chat
// Completions:" handling of `tool` messages read them). Like the real ones,
// a model turn whose results end it stays open and no model turn follows
// it; the generation prompt opens the model turn and a thought
// (<|channel>thought\n), or writes the `reply_prefix` variable instead. It
// is not Google's template: the real ones are not tested here.
#pragma once

namespace tc::test {

inline constexpr char kGemma4TestTemplate[] =
    "{%- macro arg(v) -%}"
    "{%- if v is string -%}{{- '<|\"|>' + v + '<|\"|>' -}}"
    "{%- elif v is mapping -%}{{- '{' -}}{%- for k, x in v | dictsort -%}{{- k + ':' -}}{{- arg(x) -}}"
    "{%- if not loop.last -%},{%- endif -%}{%- endfor -%}{{- '}' -}}"
    "{%- elif v is sequence -%}[{%- for x in v -%}{{- arg(x) -}}{%- if not loop.last -%},{%- endif -%}{%- endfor -%}]"
    "{%- else -%}{{- v | tojson -}}{%- endif -%}"
    "{%- endmacro -%}"
    "{{- bos_token -}}"
    "{%- if tools -%}{{- '<|turn>system\\n' -}}"
    "{%- for tool in tools -%}{{- '<|tool>declaration:' + tool.function.name + '<tool|>' -}}{%- endfor -%}"
    "{{- '<turn|>\\n' -}}{%- endif -%}"
    "{%- set ns = namespace(last='') -%}"
    "{%- for message in messages -%}"
    "{%- set role = 'model' if message.role == 'assistant' else message.role -%}"
    "{{- '<|turn>' + role + '\\n' -}}"
    "{%- for tool_call in message.tool_calls or [] -%}"
    "{{- '<|tool_call>call:' + tool_call.function.name + arg(tool_call.function.arguments) + '<tool_call|>' -}}"
    "{%- endfor -%}"
    "{%- for r in message.tool_responses or [] -%}"
    "{{- '<|tool_response>response:' + r.name + '{value:' + arg(r.response) + '}<tool_response|>' -}}"
    "{%- endfor -%}"
    "{%- if message.content is string -%}{{- message.content -}}{%- endif -%}"
    "{%- set ns.last = 'tool_response' if message.tool_responses else '' -%}"
    "{%- if not (message.tool_responses and not message.content) -%}{{- '<turn|>\\n' -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt and ns.last != 'tool_response' -%}{{- '<|turn>model\\n' -}}"
    "{%- if reply_prefix is defined -%}{{- reply_prefix -}}{%- else -%}{{- '<|channel>thought\\n' -}}{%- endif -%}"
    "{%- endif -%}";

}  // namespace tc::test
