// ToolCallPrefix: fixed text, one of the names, fixed text, a JSON object,
// fixed text (see tool_call_prefix.h).
#include "engine/text/tool_call_prefix.h"

#include <algorithm>

#include "kernels/check.h"

namespace tc::text {

std::string ToolCallGrammar::problem() const {
  if (names.empty()) return "a forced tool call needs at least one name";
  if (!std::is_sorted(names.begin(), names.end()) || std::adjacent_find(names.begin(), names.end()) != names.end()) {
    return "a forced tool call's names must be sorted and distinct";
  }
  if (!arguments.empty() && arguments.size() != names.size()) {
    return "a forced tool call needs one arguments schema per name, or none";
  }
  if (!text_parameters.empty() && text_parameters.size() != names.size()) {
    return "a tool call's text parameters need one list per name, or none";
  }
  for (const auto& list : text_parameters) {
    if (!std::is_sorted(list.begin(), list.end())) return "a tool call's text parameters must be sorted";
  }
  for (const auto& name : names) {
    if (name.empty() || name.find_first_of("\"\\") != std::string::npos) {
      return "a forced tool call's name is empty or holds a quote or a backslash";
    }
  }
  return {};
}

bool NameMatch::push(const std::vector<std::string>& names, uint8_t byte) {
  uint32_t l = lo;
  while (l < hi && (names[l].size() <= pos || static_cast<uint8_t>(names[l][pos]) < byte)) ++l;
  uint32_t h = l;
  while (h < hi && names[h].size() > pos && static_cast<uint8_t>(names[h][pos]) == byte) ++h;
  if (l == h) return false;
  lo = l;
  hi = h;
  ++pos;
  return true;
}

ToolCallPrefix::ToolCallPrefix(const ToolCallGrammar* grammar) : grammar_(grammar) {
  TC_CHECK(grammar_ != nullptr, "ToolCallPrefix needs a grammar");
  const std::string problem = grammar_->problem();
  TC_CHECK(problem.empty(), problem.c_str());
  name_ = NameMatch(grammar_->names.size());
}

bool ToolCallPrefix::push(uint8_t byte) {
  const auto fixed = [&](std::string_view text, Part next) {
    if (static_cast<uint8_t>(text[pos_]) != byte) return false;
    if (++pos_ == text.size()) {
      part_ = next;
      pos_ = 0;
    }
    return true;
  };
  switch (part_) {
    case Part::Head:
      if (pos_ == 0 && JsonGap::is_whitespace(byte)) return leading_.push(byte);
      return fixed(kHead, Part::Name);
    case Part::Name:
      if (byte == '"') {
        if (!name_.whole(grammar_->names)) return false;
        part_ = Part::Middle;
        pos_ = 1;  // the quote is kMiddle's first byte
        if (!grammar_->arguments.empty() && grammar_->arguments[name_.lo] != nullptr) {
          arguments_ = JsonSchemaPrefix(grammar_->arguments[name_.lo].get());
        }
        return true;
      }
      return name_.push(grammar_->names, byte);
    case Part::Middle:
      // The two keys part at their first letter, after kMiddle's `", "`.
      if (pos_ == kMiddle.find('a') && byte == static_cast<uint8_t>(kMiddleParameters[pos_])) parameters_ = true;
      return fixed(parameters_ ? kMiddleParameters : kMiddle, Part::Arguments);
    case Part::Arguments:
      return std::visit(
          [&](auto& arguments) {
            if (!arguments.push(byte)) return false;
            if (arguments.complete()) part_ = Part::Tail;
            return true;
          },
          arguments_);
    case Part::Tail:
      return fixed(kTail, Part::Done);
    case Part::Done:
      return false;
  }
  return false;
}

bool ToolCallPrefix::push(std::string_view bytes) {
  return push_each(bytes, [this](uint8_t byte) { return push(byte); });
}

bool ToolCallPrefix::accepts(std::string_view bytes) const {
  ToolCallPrefix copy = *this;
  return copy.push(bytes);
}

}  // namespace tc::text
