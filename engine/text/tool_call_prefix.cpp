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
  for (const auto& name : names) {
    if (name.empty() || name.find_first_of("\"\\") != std::string::npos) {
      return "a forced tool call's name is empty or holds a quote or a backslash";
    }
  }
  return {};
}

ToolCallPrefix::ToolCallPrefix(const ToolCallGrammar* grammar) : grammar_(grammar) {
  TC_CHECK(grammar_ != nullptr, "ToolCallPrefix needs a grammar");
  const std::string problem = grammar_->problem();
  TC_CHECK(problem.empty(), problem.c_str());
  hi_ = static_cast<uint32_t>(grammar_->names.size());
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
    case Part::Name: {
      const auto& names = grammar_->names;
      if (byte == '"') {
        // Sorted: a name equal to the bytes so far (a prefix of the others) comes first.
        if (names[lo_].size() != pos_) return false;
        part_ = Part::Middle;
        pos_ = 1;  // the quote is kMiddle's first byte
        if (!grammar_->arguments.empty() && grammar_->arguments[lo_] != nullptr) {
          arguments_ = JsonSchemaPrefix(grammar_->arguments[lo_].get());
        }
        return true;
      }
      uint32_t lo = lo_;
      while (lo < hi_ && (names[lo].size() <= pos_ || static_cast<uint8_t>(names[lo][pos_]) < byte)) ++lo;
      uint32_t hi = lo;
      while (hi < hi_ && names[hi].size() > pos_ && static_cast<uint8_t>(names[hi][pos_]) == byte) ++hi;
      if (lo == hi) return false;
      lo_ = lo;
      hi_ = hi;
      ++pos_;
      return true;
    }
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
