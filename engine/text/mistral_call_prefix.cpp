// MistralCallPrefix: a declared name, then (after the caller's [ARGS]) its
// arguments' object (see mistral_call_prefix.h).
#include "engine/text/mistral_call_prefix.h"

#include "engine/text/json_lexers.h"
#include "kernels/check.h"

namespace tc::text {

MistralCallPrefix::MistralCallPrefix(const ToolCallGrammar* grammar) : grammar_(grammar) {
  TC_CHECK(grammar_ != nullptr, "MistralCallPrefix needs a grammar");
  const std::string problem = grammar_->problem();
  TC_CHECK(problem.empty(), problem.c_str());
  name_ = NameMatch(grammar_->names.size());
}

bool MistralCallPrefix::push(uint8_t byte) {
  if (in_arguments_) {
    return std::visit([&](auto& arguments) { return !arguments.complete() && arguments.push(byte); }, arguments_);
  }
  return name_.push(grammar_->names, byte);
}

bool MistralCallPrefix::push(std::string_view bytes) {
  return push_each(bytes, [this](uint8_t byte) { return push(byte); });
}

bool MistralCallPrefix::accepts(std::string_view bytes) const {
  MistralCallPrefix copy = *this;
  return copy.push(bytes);
}

bool MistralCallPrefix::name_complete() const { return !in_arguments_ && name_.whole(grammar_->names); }

void MistralCallPrefix::begin_arguments() {
  TC_CHECK(name_complete(), "MistralCallPrefix: [ARGS] before a whole name");
  in_arguments_ = true;
  if (!grammar_->arguments.empty() && grammar_->arguments[name_.lo] != nullptr) {
    arguments_ = JsonSchemaPrefix(grammar_->arguments[name_.lo].get());
  }
}

bool MistralCallPrefix::complete() const {
  return in_arguments_ && std::visit([](const auto& a) { return a.complete(); }, arguments_);
}

}  // namespace tc::text
