// ChatTemplate: parses a model's chat template once with the jinja_* engine
// and renders it per request, mapping engine errors to ChatTemplateError
// with the template line.
#include "engine/text/chat_template.h"

#include "engine/text/jinja_eval.h"
#include "engine/text/jinja_parser.h"

namespace tc::text {

struct ChatTemplate::Program {
  std::string source;
  jinja::Body body;
};

namespace {
[[noreturn]] void rethrow(const jinja::JinjaError& e) {
  throw ChatTemplateError("chat template line " + std::to_string(e.line) + ": " + e.what());
}
}  // namespace

ChatTemplate::ChatTemplate(std::string_view source) : program_(std::make_unique<Program>()) {
  program_->source = std::string(source);
  try {
    program_->body = jinja::parse_template(source);
  } catch (const jinja::JinjaError& e) {
    rethrow(e);
  }
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::json& variables) const {
  try {
    return jinja::render(program_->body, variables);
  } catch (const jinja::JinjaError& e) {
    rethrow(e);
  } catch (const std::bad_variant_access&) {
    throw ChatTemplateError("chat template: a value of the wrong type was used");
  }
}

const std::string& ChatTemplate::source() const { return program_->source; }

std::string_view ChatTemplate::chatml_source() {
  return "{%- for message in messages %}"
         "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
         "{%- endfor %}"
         "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
}

}  // namespace tc::text
