// The merge loop both BPE flavours share (llama.cpp's SPM and BPE sessions):
// split a word into UTF-8 characters, queue every adjacent pair the
// vocabulary can merge, and repeatedly merge the best pair (highest
// priority, leftmost on ties) until no pair is left. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "engine/text/unicode.h"

namespace tc::text::detail {

// A run of `text` after merging: bytes [offset, offset + n).
struct MergedSymbol {
  uint32_t offset;
  uint32_t n;
};

// pair_priority(left, right) gives the merge priority of two adjacent
// symbols (higher merges first), or nullopt when they cannot merge. `left`
// and `right` are adjacent views into `text`. A byte that does not start a
// valid UTF-8 sequence is a symbol of its own.
template <typename PairPriority>
std::vector<MergedSymbol> merge_bigrams(std::string_view text, PairPriority&& pair_priority) {
  struct Symbol {
    int prev;
    int next;
    uint32_t offset;
    uint32_t n;  // bytes; 0 once merged into the symbol on its left
  };
  struct Bigram {
    int left;
    int right;
    double priority;
    uint32_t size;  // bytes of the merged pair when queued, to spot stale entries
  };
  struct BigramOrder {
    bool operator()(const Bigram& l, const Bigram& r) const {
      return l.priority < r.priority || (l.priority == r.priority && l.left > r.left);
    }
  };

  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    size_t len = utf8_sequence_length(static_cast<uint8_t>(text[offset]));
    if (len == 0 || offset + len > text.size()) len = 1;
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offset + len == text.size() ? -1 : index + 1, static_cast<uint32_t>(offset),
                       static_cast<uint32_t>(len)});
    offset += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const std::optional<double> priority = pair_priority(text.substr(l.offset, l.n), text.substr(r.offset, r.n));
    if (priority) queue.push({left, right, *priority, l.n + r.n});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(b.left)];
    Symbol& r = symbols[static_cast<size_t>(b.right)];
    // Stale when either side has changed since the pair was queued.
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  std::vector<MergedSymbol> out;
  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    out.push_back({symbols[static_cast<size_t>(i)].offset, symbols[static_cast<size_t>(i)].n});
  }
  return out;
}

}  // namespace tc::text::detail
