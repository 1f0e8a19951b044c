// Holding back a streamed reply's tail that may still become a marker: the
// reply parsers (reasoning, harmony, Gemma 4, Qwen3-Coder) keep such text
// until the next piece says whether it is one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string_view>

namespace tc::server {

// The length of the longest suffix of `s` that is a proper prefix of one of `markers`.
inline size_t partial_marker_suffix(std::string_view s, std::span<const std::string_view> markers) {
  size_t longest = 0;
  for (const std::string_view m : markers) longest = std::max(longest, m.size() - 1);
  for (size_t n = std::min(s.size(), longest); n > 0; --n) {
    const std::string_view tail = s.substr(s.size() - n);
    for (const std::string_view m : markers) {
      if (tail.size() < m.size() && m.starts_with(tail)) return n;
    }
  }
  return 0;
}
inline size_t partial_marker_suffix(std::string_view s, std::initializer_list<std::string_view> markers) {
  return partial_marker_suffix(s, std::span<const std::string_view>(markers.begin(), markers.size()));
}

}  // namespace tc::server
