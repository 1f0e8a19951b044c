// PrecompiledCharsmap: SentencePiece's normalization map as GGUF files carry
// it in `tokenizer.ggml.precompiled_charsmap` (UGM / "t5" vocabs), read the
// way llama.cpp's llm_tokenizer_ugm reads it: the longest key the input
// starts with, and the string that replaces it.
//
// Layout (little-endian):
//   uint32 xcda_bytes                       size of the double array in bytes
//   uint32 units[xcda_bytes / 4]            XOR-compressed compact double array
//   char   replacements[]                   NUL-terminated strings, the rest
// Each unit packs: bits 0-7 the label (the byte that leads to the node),
// bit 8 "has a value", bits 10-30 the offset (shifted left by 8 more when
// bit 9 is set); a value unit has bit 31 set and the byte offset of its
// replacement string in bits 0-30. Walking from position p = offset(unit 0),
// byte c leads to unit q = p ^ c when label(q) == c; then p = q ^ offset(q),
// and when q has a value, the value unit is at p.
// Immutable after construction: lookups are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tc::text {

class PrecompiledCharsmap {
 public:
  PrecompiledCharsmap() = default;
  // `bytes` empty: no map (nothing ever matches). Otherwise checks it as
  // llama.cpp's loader does (a 4-byte header, a double array that leaves
  // room for replacement strings), and also that no input could walk it out
  // of bounds or to a replacement that is not NUL-terminated, which
  // llama.cpp only finds (and throws on) while tokenizing. Throws
  // std::invalid_argument saying what is wrong.
  explicit PrecompiledCharsmap(std::string bytes);

  bool empty() const { return units_.empty(); }

  struct Match {
    size_t length = 0;             // bytes of the input matched; 0: no key matches
    std::string_view replacement;  // what replaces them (may be empty)
  };
  // The longest key `text` starts with. The walk stops at a NUL byte, as
  // llama.cpp's does.
  Match longest_match(std::string_view text) const;

  // The raw bytes, as read.
  const std::string& bytes() const { return bytes_; }

 private:
  uint32_t offset(uint32_t pos) const {
    const uint32_t unit = units_[pos];
    return (unit >> 10) << ((unit & (1u << 9)) >> 6);
  }
  uint32_t label(uint32_t pos) const { return units_[pos] & ((1u << 31) | 0xFFu); }
  bool has_value(uint32_t pos) const { return (units_[pos] >> 8) & 1u; }
  uint32_t value(uint32_t pos) const { return units_[pos] & ((1u << 31) - 1); }
  void validate() const;

  std::string bytes_;
  std::vector<uint32_t> units_;
  size_t replacements_at_ = 0;  // where the replacement strings start in bytes_
};

}  // namespace tc::text
