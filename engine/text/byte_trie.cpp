// ByteTrie construction: the keys sorted, then nodes made breadth first so
// that each node's edges are contiguous and in label order.
#include "engine/text/byte_trie.h"

#include <algorithm>
#include <stdexcept>

namespace tc::text::detail {

ByteTrie::ByteTrie() : first_edge_{0, 0}, value_{-1} { root_children_.fill(kNone); }

ByteTrie::ByteTrie(std::vector<std::pair<std::string_view, int32_t>> keys) {
  std::sort(keys.begin(), keys.end());  // std::string_view orders bytes as unsigned
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].first.empty()) throw std::invalid_argument("ByteTrie: empty key");
    if (i > 0 && keys[i].first == keys[i - 1].first) throw std::invalid_argument("ByteTrie: duplicate key");
  }
  // A node waiting to be laid out: the keys [lo, hi) share its first `depth` bytes.
  struct Pending {
    size_t lo, hi, depth;
  };
  std::vector<Pending> queue = {{0, keys.size(), 0}};
  for (size_t head = 0; head < queue.size(); ++head) {
    auto [lo, hi, depth] = queue[head];
    first_edge_.push_back(static_cast<uint32_t>(edge_labels_.size()));
    int32_t v = -1;
    if (lo < hi && keys[lo].first.size() == depth) v = keys[lo++].second;  // sorted: the key ending here is first
    value_.push_back(v);
    while (lo < hi) {
      const auto label = static_cast<uint8_t>(keys[lo].first[depth]);
      size_t end = lo + 1;
      while (end < hi && static_cast<uint8_t>(keys[end].first[depth]) == label) ++end;
      edge_labels_.push_back(label);
      edge_targets_.push_back(static_cast<int32_t>(queue.size()));
      queue.push_back({lo, end, depth + 1});
      lo = end;
    }
  }
  first_edge_.push_back(static_cast<uint32_t>(edge_labels_.size()));
  root_children_.fill(kNone);
  for (uint32_t e = first_edge_[0]; e < first_edge_[1]; ++e) root_children_[edge_labels_[e]] = edge_targets_[e];
}

size_t ByteTrie::walk_length(std::string_view text) const {
  int32_t node = kRoot;
  size_t n = 0;
  while (n < text.size() && (node = child(node, static_cast<uint8_t>(text[n]))) != kNone) ++n;
  return n;
}

}  // namespace tc::text::detail
