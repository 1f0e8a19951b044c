// ByteTrie: a static trie over byte strings (token texts) for walks one byte
// at a time, as the UGM tokenizer's Viterbi search and its user-defined
// token matcher take them.
//
// Layout: nodes are numbered breadth first from the root (node 0); node i's
// children are the edges [first_edge_[i], first_edge_[i + 1]) of
// edge_labels_ / edge_targets_, sorted by label; value_[i] is the id stored
// at node i or -1. The root's children are also in a 256-entry table.
// Immutable after construction: walks are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace tc::text::detail {

class ByteTrie {
 public:
  static constexpr int32_t kRoot = 0;
  static constexpr int32_t kNone = -1;

  ByteTrie();
  // Keys must be distinct and non-empty; they are not kept.
  explicit ByteTrie(std::vector<std::pair<std::string_view, int32_t>> keys);

  // The child of `node` along `byte`, or kNone.
  int32_t child(int32_t node, uint8_t byte) const {
    if (node == kRoot) return root_children_[byte];
    uint32_t lo = first_edge_[static_cast<size_t>(node)];
    uint32_t hi = first_edge_[static_cast<size_t>(node) + 1];
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      const uint8_t l = edge_labels_[mid];
      if (l == byte) return edge_targets_[mid];
      if (l < byte) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return kNone;
  }
  // The id stored at `node`, or -1.
  int32_t value(int32_t node) const { return value_[static_cast<size_t>(node)]; }

  // How many bytes of `text` a walk from the root follows before it finds no
  // edge (whether or not a key ends there: llama.cpp's
  // naive_trie::get_longest_prefix).
  size_t walk_length(std::string_view text) const;

 private:
  std::vector<uint32_t> first_edge_;  // n_nodes + 1
  std::vector<uint8_t> edge_labels_;
  std::vector<int32_t> edge_targets_;
  std::vector<int32_t> value_;
  std::array<int32_t, 256> root_children_;
};

}  // namespace tc::text::detail
