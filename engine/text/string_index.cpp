// StringIndex: FNV-1a over the bytes (it streams, so a merge's two halves
// hash as the joined key does), a final mix, and linear probing in a table
// at most half full.
#include "engine/text/string_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace tc::text::detail {
namespace {

constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001B3ull;

inline uint64_t fnv(uint64_t h, std::string_view s) {
  for (const char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= kFnvPrime;
  }
  return h;
}

inline uint64_t fnv(uint64_t h, char c) {
  h ^= static_cast<uint8_t>(c);
  return h * kFnvPrime;
}

// FNV-1a's low bits are weak for short keys: spread the high ones down.
inline uint64_t finish(uint64_t h) {
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

}  // namespace

StringIndex::StringIndex(const std::vector<std::string>& keys) : keys_(&keys) {
  if (keys.size() >= (size_t{1} << 31)) throw std::length_error("StringIndex: too many keys");
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, keys.size() * 2));
  slots_.assign(capacity, Slot{0, -1});
  mask_ = capacity - 1;
  // Hashes first, then inserts with the slot a few keys ahead prefetched:
  // the table is bigger than the caches, so inserting is memory-bound.
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) hashes[i] = finish(fnv(kFnvOffset, keys[i]));
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) __builtin_prefetch(&slots_[hashes[i + kAhead] & mask_], 1);
    const std::string& key = keys[i];
    const uint64_t h = hashes[i];
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t at = h & mask_;; at = (at + 1) & mask_) {
      Slot& slot = slots_[at];
      if (slot.pos < 0) {
        slot = {tag, static_cast<int32_t>(i)};
        break;
      }
      if (slot.tag == tag && keys[static_cast<size_t>(slot.pos)] == key) {
        if (duplicate_.first < 0) duplicate_ = {slot.pos, static_cast<int32_t>(i)};
        break;
      }
    }
  }
}

template <typename Equal>
int32_t StringIndex::lookup(uint64_t hash, Equal&& equal) const {
  if (slots_.empty()) return -1;
  const uint64_t h = finish(hash);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (uint64_t at = h & mask_;; at = (at + 1) & mask_) {
    const Slot& slot = slots_[at];
    if (slot.pos < 0) return -1;
    if (slot.tag == tag && equal((*keys_)[static_cast<size_t>(slot.pos)])) return slot.pos;
  }
}

int32_t StringIndex::find(std::string_view s) const {
  return lookup(fnv(kFnvOffset, s), [&](const std::string& key) { return key == s; });
}

int32_t StringIndex::find_pair(std::string_view left, std::string_view right) const {
  const uint64_t hash = fnv(fnv(fnv(kFnvOffset, left), ' '), right);
  return lookup(hash, [&](const std::string& key) {
    return key.size() == left.size() + 1 + right.size() && key.compare(0, left.size(), left) == 0 &&
           key[left.size()] == ' ' && key.compare(left.size() + 1, right.size(), right) == 0;
  });
}

}  // namespace tc::text::detail
