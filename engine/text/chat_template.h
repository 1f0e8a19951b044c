// ChatTemplate: renders a GGUF's `tokenizer.chat_template` (a Jinja2 subset
// written here: variables, attribute and index access, slices, `for` with
// `loop.*`, `if/elif/else`, `set` (incl. block set), `namespace`, macros,
// filters such as trim/length/tojson/upper/lower/replace/join/first/last,
// tests such as defined/none/string/mapping, string concatenation with `~`
// and `+`, `raise_exception`, whitespace control `{%- -%}`) into the prompt
// text. The templates of the common model families render byte-for-byte
// what Python's jinja2 renders (tests/data/chat_templates/).
// Parsed once per model; render() is const and thread-safe.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tc::text {

// A template that does not parse, or a render that fails (an undefined
// operation, a type error, raise_exception). what() is the message a client
// sees in the 400 body, e.g. "chat template line 3: Conversation roles must
// alternate user/assistant/user/assistant/...".
class ChatTemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ChatTemplate {
 public:
  // Parses `source`; throws ChatTemplateError with the line at fault.
  explicit ChatTemplate(std::string_view source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders with `variables` as the global context: typically `messages`
  // (array of {role, content, ...}), `add_generation_prompt`, `bos_token`,
  // `eos_token`, and optionally `tools`. Throws ChatTemplateError.
  std::string render(const nlohmann::json& variables) const;

  const std::string& source() const;

  // ChatML, used (with a log line) when the model file has no template and
  // none is configured.
  static std::string_view chatml_source();

 private:
  struct Program;
  std::unique_ptr<Program> program_;
};

}  // namespace tc::text
