// libFuzzer target for the chat template engine's other input, the
// template itself: a GGUF file's `tokenizer.chat_template` comes from
// whoever made the file, and `--chat-template FILE` from the command line.
// Each input is a template source, parsed and rendered with a fixed
// conversation (system, user, assistant with a tool call, tool, user; a
// tool list; the generation prompt asked for). A ChatTemplateError is the
// expected outcome of a bad template; any other exception, a sanitizer
// report (a stack overflow included) or a render slower than the -timeout
// the script gives is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/text/chat_template.h"

namespace {

const nlohmann::json& conversation() {
  static const nlohmann::json vars = nlohmann::json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Weather in Paris? \u00e9\u4e2d"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
      {"role": "user", "content": [{"type": "text", "text": "Thanks. "}, {"type": "text", "text": "And Rome?"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>"
  })");
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  conversation();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const tc::text::ChatTemplate t(source);
    volatile size_t keep = t.render(conversation()).size();
    (void)keep;
  } catch (const tc::text::ChatTemplateError& e) {
    if (e.what()[0] == '\0') {
      std::fprintf(stderr, "chat_template_fuzz: a template error without a message\n");
      std::abort();
    }
  }
  return 0;
}
