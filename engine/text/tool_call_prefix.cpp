// ToolCallPrefix: fixed text, one of the names, fixed text, a JSON object,
// fixed text (see tool_call_prefix.h).
#include "engine/text/tool_call_prefix.h"

#include <algorithm>

#include "kernels/check.h"

namespace tc::text {

ToolCallPrefix::ToolCallPrefix(const std::vector<std::string>* names) : names_(names) {
  TC_CHECK(names_ != nullptr && !names_->empty(), "ToolCallPrefix needs at least one name");
  TC_CHECK(std::is_sorted(names_->begin(), names_->end()) &&
               std::adjacent_find(names_->begin(), names_->end()) == names_->end(),
           "ToolCallPrefix: the names must be sorted and distinct");
  for (const auto& name : *names_) {
    TC_CHECK(!name.empty() && name.find_first_of("\"\\") == std::string::npos,
             "ToolCallPrefix: a name is empty or holds a quote or a backslash");
  }
  hi_ = static_cast<uint32_t>(names_->size());
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
      if (pos_ == 0 && (byte == ' ' || byte == '\n' || byte == '\t' || byte == '\r')) {
        if (leading_ >= kMaxLeadingWhitespace) return false;
        ++leading_;
        return true;
      }
      return fixed(kHead, Part::Name);
    case Part::Name: {
      const auto& names = *names_;
      if (byte == '"') {
        // Sorted: a name equal to the bytes so far (a prefix of the others) comes first.
        if (names[lo_].size() != pos_) return false;
        part_ = Part::Middle;
        pos_ = 1;  // the quote is kMiddle's first byte
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
      return fixed(kMiddle, Part::Arguments);
    case Part::Arguments:
      if (!arguments_.push(byte)) return false;
      if (arguments_.complete()) part_ = Part::Tail;
      return true;
    case Part::Tail:
      return fixed(kTail, Part::Done);
    case Part::Done:
      return false;
  }
  return false;
}

bool ToolCallPrefix::push(std::string_view bytes) {
  for (char c : bytes) {
    if (!push(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool ToolCallPrefix::accepts(std::string_view bytes) const {
  ToolCallPrefix copy = *this;
  return copy.push(bytes);
}

}  // namespace tc::text
