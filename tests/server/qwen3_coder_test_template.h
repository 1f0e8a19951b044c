// A small chat template that writes Qwen3-Coder's XML tool calls in Qwen
// 3.5's ChatML turns, for the tests (tests/server/qwen3_coder_prompt_test.cpp,
// tests/integration/qwen3_coder_api_test.cpp): the tools as <function>
// blocks in a system turn, with the call format's example (its <tool_call>,
// <function= and <parameter= mark the template as Qwen3-Coder's, as
// llama.cpp detects it); an assistant's calls as
// <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...
// with its arguments read as a mapping (strings as they are, objects and
// arrays as JSON, the rest through `string`), as Qwen 3.5's template
// writes them; tool results as <tool_response> blocks in one user turn.
// The generation prompt opens the assistant turn and a <think> (or, with
// enable_thinking false, writes an empty one), or writes `reply_prefix`
// instead. It is not Qwen's template: the real ones are not available
// offline and are not tested here.
#pragma once

namespace tc::test {

inline constexpr char kQwen3CoderTestTemplate[] = R"TPL(
{%- if tools -%}
{{- '<|im_start|>system\n# Tools\n\n<tools>' -}}
{%- for tool in tools -%}
{{- '\n<function>\n<name>' + tool.function.name + '</name>' -}}
{%- if tool.function.parameters is defined and tool.function.parameters.properties is defined -%}
{%- for pname, pfields in tool.function.parameters.properties | items -%}
{{- '\n<parameter>' + pname + '</parameter>' -}}
{%- endfor -%}
{%- endif -%}
{{- '\n</function>' -}}
{%- endfor -%}
{{- '\n</tools>\n\nTo call a function reply with:\n<tool_call>\n<function=example_function_name>\n' -}}
{{- '<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n</tool_call><|im_end|>\n' -}}
{%- endif -%}
{%- for message in messages -%}
{%- set content = message.content if message.content is string else '' -%}
{%- if message.role == 'user' or message.role == 'system' -%}
{{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>\n' -}}
{%- elif message.role == 'assistant' -%}
{{- '<|im_start|>assistant\n' + content -}}
{%- if message.tool_calls and message.tool_calls is iterable and message.tool_calls is not mapping -%}
{%- for tool_call in message.tool_calls -%}
{%- if tool_call.function is defined -%}{%- set tool_call = tool_call.function -%}{%- endif -%}
{%- if loop.first and not content | trim -%}{{- '<tool_call>\n<function=' + tool_call.name + '>\n' -}}
{%- else -%}{{- '\n<tool_call>\n<function=' + tool_call.name + '>\n' -}}{%- endif -%}
{%- if tool_call.arguments is mapping -%}
{%- for args_name in tool_call.arguments -%}
{%- set args_value = tool_call.arguments[args_name] -%}
{{- '<parameter=' + args_name + '>\n' -}}
{%- set args_value = args_value | tojson | safe if args_value is mapping
    or (args_value is sequence and args_value is not string) else args_value | string -%}
{{- args_value + '\n</parameter>\n' -}}
{%- endfor -%}
{%- endif -%}
{{- '</function>\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.previtem and loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + content + '\n</tool_response>' -}}
{%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if reply_prefix is defined -%}{{- reply_prefix -}}
{%- elif enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}
{%- else -%}{{- '<think>\n' -}}{%- endif -%}
{%- endif -%}
)TPL";

}  // namespace tc::test
