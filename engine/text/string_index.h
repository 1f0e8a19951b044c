// StringIndex: text -> position over a vector of strings held elsewhere (a
// vocab's tokens or merges), as an open-addressing hash table of 8-byte
// slots: building it copies no string and allocates once, so 262k-token
// vocabs index in milliseconds. Lookups take a string_view, or the two
// halves of a BPE merge "left right" without building that key.
// The vector must outlive the index and not change. Lookups are const and
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tc::text::detail {

class StringIndex {
 public:
  StringIndex() = default;
  // Indexes keys[0..n); of equal keys the first is found. n < 2^31.
  explicit StringIndex(const std::vector<std::string>& keys);

  // The position of `s`, or -1.
  int32_t find(std::string_view s) const;
  // The position of the key `left` + ' ' + `right`, or -1.
  int32_t find_pair(std::string_view left, std::string_view right) const;

  // Positions (first, second) of the first key found equal to an earlier
  // one, {-1, -1} when all keys differ.
  std::pair<int32_t, int32_t> first_duplicate() const { return duplicate_; }

 private:
  struct Slot {
    uint32_t tag;  // high bits of the hash
    int32_t pos;   // -1: empty
  };
  template <typename Equal>
  int32_t lookup(uint64_t hash, Equal&& equal) const;

  const std::vector<std::string>* keys_ = nullptr;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  std::pair<int32_t, int32_t> duplicate_{-1, -1};
};

}  // namespace tc::text::detail
