// Small text helpers of the config loader: trimming, comma lists, TOML
// string quoting and the "did you mean" distance.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tc::config {

// `s` without leading and trailing ASCII whitespace.
std::string_view trim(std::string_view s);
// Comma-separated items, each trimmed; empty items are dropped.
std::vector<std::string> split_list(std::string_view s);
// `s` as a TOML basic string literal, quotes included.
std::string toml_quote(std::string_view s);
// Levenshtein distance (for suggesting the key a typo meant).
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace tc::config
