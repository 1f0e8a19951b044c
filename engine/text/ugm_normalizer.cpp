// UgmNormalizer (see the header): llama.cpp's UGM normalize and
// normalize_prefix.
#include "engine/text/ugm_normalizer.h"

#include <utility>
#include <vector>

namespace tc::text {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

detail::ByteTrie user_defined_trie(const Vocab& vocab) {
  std::vector<std::pair<std::string_view, int32_t>> keys;
  for (size_t i = 0; i < vocab.types.size() && i < vocab.tokens.size(); ++i) {
    if (vocab.types[i] == TokenType::UserDefined) keys.emplace_back(vocab.tokens[i], static_cast<int32_t>(i));
  }
  return keys.empty() ? detail::ByteTrie() : detail::ByteTrie(std::move(keys));
}

}  // namespace

size_t ugm_sequence_length(std::string_view s, size_t at) {
  const auto b0 = static_cast<uint8_t>(s[at]);
  const auto continues = [&](size_t k) {
    return at + k < s.size() && (static_cast<uint8_t>(s[at + k]) & 0xC0) == 0x80;
  };
  if (!(b0 & 0x80)) return 1;
  if (!(b0 & 0x40)) return 0;
  if (!(b0 & 0x20)) return continues(1) ? 2 : 0;
  if (!(b0 & 0x10)) return continues(1) && continues(2) ? 3 : 0;
  if (!(b0 & 0x08)) return continues(1) && continues(2) && continues(3) ? 4 : 0;
  return 0;
}

UgmNormalizer::UgmNormalizer(const Vocab& vocab)
    : charsmap_(vocab.precompiled_charsmap),
      user_defined_(user_defined_trie(vocab)),
      add_space_prefix_(vocab.add_space_prefix),
      remove_extra_whitespaces_(vocab.remove_extra_whitespaces) {}

UgmNormalizer::Step UgmNormalizer::normalize_prefix(std::string_view text, size_t at) const {
  const std::string_view rest = text.substr(at);
  if (const size_t n = user_defined_.walk_length(rest); n > 0) return {rest.substr(0, n), n};
  if (const PrecompiledCharsmap::Match m = charsmap_.longest_match(rest); m.length > 0) {
    return {m.replacement, m.length};
  }
  if (const size_t n = ugm_sequence_length(text, at); n > 0) return {rest.substr(0, n), n};
  return {kReplacement, 1};
}

std::string UgmNormalizer::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size() * 3);
  const bool merge_spaces = remove_extra_whitespaces_;
  bool space_prepended = false;
  bool in_word = false;  // the last byte written was not a space
  for (size_t at = 0; at < text.size();) {
    const Step step = normalize_prefix(text, at);
    for (const char c : step.out) {
      if (c != ' ') {
        if (!in_word) {
          in_word = true;
          if ((add_space_prefix_ && !space_prepended) || merge_spaces) {
            out += kSpaceMarker;
            space_prepended = true;
          }
        }
        out.push_back(c);
      } else {
        in_word = false;
        if (!merge_spaces) out += kSpaceMarker;
      }
    }
    at += step.consumed;
  }
  return out;
}

}  // namespace tc::text
