// libFuzzer target: constrained output and tool-call parsing. The input is
// a JSON Schema, a NUL byte, then a reply text. The schema (when it parses)
// is compiled, which may only throw SchemaError; the text is fed byte by
// byte to JsonPrefix, JsonSchemaPrefix and ToolCallPrefix, and whatever
// each calls complete must parse as JSON (an object for JSON mode, a call
// naming a declared function for the tool call). The text is also parsed
// for tool calls whole and through ToolCallStream cut at every third byte:
// the stream must show and return exactly what the whole parse finds.
// The text is also fed to MistralCallPrefix, a 0x01 byte standing for the
// [ARGS] token (taken only after a whole declared name): a complete call
// names a declared function and its arguments parse as an object.
// The text is also fed to Gemma4CallPrefix (Gemma 4's call:NAME{...}
// <tool_call|>): a complete call, after <|tool_call>, is one the Gemma 4
// reply parser reads as one call, nothing left as content; and to
// Qwen3CoderCallPrefix (Qwen3-Coder's XML <function=NAME><parameter=KEY>
// ...; the schema's text parameters as text_parameters_of gives them):
// a complete call, after <tool_call>, is likewise one call to the Qwen3-
// Coder reply parser.
// The part before the NUL is also read as a GBNF grammar (which may only
// throw GbnfError); the text fed byte by byte to its matcher must be taken
// whole as one token too, and where the grammar is complete no byte may
// follow.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/text/gbnf_grammar.h"
#include "engine/text/gbnf_prefix.h"
#include "engine/text/gemma4_call_prefix.h"
#include "engine/text/json_prefix.h"
#include "engine/text/json_schema.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/mistral_call_prefix.h"
#include "engine/text/qwen3_coder_call_prefix.h"
#include "engine/text/tool_call_prefix.h"
#include "server/gemma4_split.h"
#include "server/qwen3_coder_split.h"
#include "server/tool_call_parser.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

// Feeds `text` until a byte is refused; the prefix's complete() then says
// whether the bytes so far are whole, and they must parse.
template <class Prefix>
void check_prefix(Prefix prefix, std::string_view text, bool object) {
  size_t n = 0;
  while (n < text.size() && prefix.push(static_cast<uint8_t>(text[n]))) ++n;
  if (!prefix.complete()) return;
  const auto value = nlohmann::json::parse(text.substr(0, n), nullptr, /*allow_exceptions=*/false);
  require(!value.is_discarded(), "a complete prefix parses as JSON");
  require(!object || value.is_object(), "a complete JSON-mode prefix is an object");
}

void check_mistral(const tc::text::ToolCallGrammar& grammar, std::string_view text) {
  tc::text::MistralCallPrefix p(&grammar);
  size_t n = 0, args_at = 0;
  for (; n < text.size(); ++n) {
    if (p.in_name() && text[n] == '\x01') {
      if (!p.name_complete()) break;
      p.begin_arguments();
      args_at = n + 1;
      continue;
    }
    if (!p.push(static_cast<uint8_t>(text[n]))) break;
  }
  if (!p.complete()) return;
  const std::string name(text.substr(0, args_at - 1));
  require(std::binary_search(grammar.names.begin(), grammar.names.end(), name), "a whole call names a declared one");
  const auto value = nlohmann::json::parse(text.substr(args_at, n - args_at), nullptr, /*allow_exceptions=*/false);
  require(!value.is_discarded() && value.is_object(), "a whole call's arguments are an object");
}

void check_gemma4(const tc::text::ToolCallGrammar& grammar, std::string_view text) {
  tc::text::Gemma4CallPrefix p(&grammar);
  size_t n = 0;
  while (n < text.size() && p.push(static_cast<uint8_t>(text[n]))) ++n;
  if (!p.complete()) return;
  const std::string reply = "<|tool_call>" + std::string(text.substr(0, n));
  const auto parts = tc::server::split_gemma4(reply, false, true, grammar.names);
  require(parts.calls.size() == 1 && parts.content.empty(), "a whole Gemma 4 call is one the reply parser reads");
  const auto value = nlohmann::json::parse(parts.calls[0].arguments, nullptr, /*allow_exceptions=*/false);
  require(value.is_object(), "a Gemma 4 call's arguments are an object");
}

void check_qwen3_coder(const tc::text::ToolCallGrammar& grammar, std::string_view text) {
  tc::text::Qwen3CoderCallPrefix p(&grammar);
  size_t n = 0;
  while (n < text.size() && p.push(static_cast<uint8_t>(text[n]))) ++n;
  require(tc::text::Qwen3CoderCallPrefix(&grammar).accepts(text.substr(0, n)),
          "bytes taken one by one are taken whole");
  if (!p.complete()) return;
  const std::string reply = "<tool_call>" + std::string(text.substr(0, n));
  const tc::server::Qwen3CoderTools tools{grammar.names, grammar.text_parameters};
  const auto parts = tc::server::split_qwen3_coder(reply, false, true, tools);
  require(parts.calls.size() == 1 && parts.content.empty(), "a whole Qwen3-Coder call is one the reply parser reads");
  const auto value = nlohmann::json::parse(parts.calls[0].arguments, nullptr, /*allow_exceptions=*/false);
  require(value.is_object(), "a Qwen3-Coder call's arguments are an object");
}

void check_gbnf(std::string_view grammar_text, std::string_view text) {
  std::shared_ptr<const tc::text::GbnfGrammar> g;
  try {
    g = tc::text::GbnfGrammar::parse(grammar_text);
  } catch (const tc::text::GbnfError& e) {
    require(e.what()[0] != '\0', "a grammar error has a message");
    return;
  }
  tc::text::GbnfPrefix p(g.get());
  size_t n = 0;
  while (n < text.size() && p.push(static_cast<uint8_t>(text[n]))) ++n;
  require(tc::text::GbnfPrefix(g.get()).accepts(text.substr(0, n)), "bytes taken one by one are taken as one token");
  if (p.complete()) {
    for (int b = 1; b < 256; ++b) require(!p.accepts(std::string(1, static_cast<char>(b))), "nothing after complete");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view schema_text = input.substr(0, split);
  const std::string_view text = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);

  check_prefix(tc::text::JsonPrefix(), text, true);
  static const tc::text::ToolCallGrammar grammar({"get", "get_time", "get_weather"});
  check_prefix(tc::text::ToolCallPrefix(&grammar), text, true);
  check_mistral(grammar, text);
  check_gemma4(grammar, text);
  check_qwen3_coder(grammar, text);
  const auto schema_json = nlohmann::ordered_json::parse(schema_text, nullptr, false);
  if (!schema_json.is_discarded()) {
    try {
      const auto schema = tc::text::JsonSchema::compile(schema_json);
      check_prefix(tc::text::JsonSchemaPrefix(schema.get()), text, false);
      const tc::text::ToolCallGrammar with_schema({"f"}, {schema}, {tc::server::text_parameters_of(schema_json)});
      check_prefix(tc::text::ToolCallPrefix(&with_schema), text, true);
      check_mistral(with_schema, text);
      check_gemma4(with_schema, text);
      check_qwen3_coder(with_schema, text);
    } catch (const tc::text::SchemaError& e) {
      require(e.what()[0] != '\0', "a schema error has a message");
    }
  }

  check_gbnf(schema_text, text);

  const auto whole = tc::server::parse_tool_calls(text, grammar.names);
  tc::server::ToolCallStream stream;
  std::string shown;
  for (size_t at = 0; at < text.size(); at += 3) shown += stream.push(text.substr(at, 3));
  const auto streamed = stream.finish(grammar.names);
  require(shown + streamed.content == whole.content, "streamed content equals the whole parse's");
  require(streamed.calls.size() == whole.calls.size(), "the stream finds the same calls");
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    require(streamed.calls[i].name == whole.calls[i].name && streamed.calls[i].arguments == whole.calls[i].arguments,
            "the same call");
    require(nlohmann::json::parse(whole.calls[i].arguments).is_object(), "arguments are an object");
  }
  return 0;
}
