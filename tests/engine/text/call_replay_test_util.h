// Replaying the calls of a constrained walk's text with a byte-at-a-time
// call prefix (Gemma4CallPrefix, Qwen3CoderCallPrefix), for their tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "engine/text/tool_call_prefix.h"

namespace tc::text::test {

// After each `marker` in `text`, a fresh Prefix must take every byte up to
// a whole call (REQUIREd), or up to the text's end (a call cut off by the
// walk's end, where the replay stops): the number of whole calls.
template <class Prefix>
int replayed_calls(const std::string& text, std::string_view marker, const ToolCallGrammar* grammar) {
  int whole = 0;
  for (size_t at = text.find(marker); at != std::string::npos;) {
    Prefix p(grammar);
    size_t i = at + marker.size();
    while (i < text.size() && !p.complete()) REQUIRE(p.push(static_cast<uint8_t>(text[i++])));
    if (!p.complete()) break;
    ++whole;
    at = text.find(marker, i);
  }
  return whole;
}

}  // namespace tc::text::test
