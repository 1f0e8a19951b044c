// build_precompiled_charsmap: a byte trie of the keys laid out breadth first
// as an XOR-compressed double array (engine/text/charsmap.h's layout).
//
// A node at unit `pos` whose labels (its children's bytes, and 0 when a key
// ends there) are L gets a base p, unique among nodes, with every p ^ c
// (c in L) free; the node's unit stores pos ^ p. Its value unit goes at p
// (label 0) and each child at p ^ c with the label c. Bases are unique, so a
// walk from one node never finds another node's child with the same label;
// free units are 0 and value units have bit 31 set, so neither matches a
// label. The array grows 256 units at a time: p ^ c stays in p's block.
#include "profiler/charsmap_builder.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <unordered_set>

namespace tc::profiler {

namespace {

constexpr uint32_t kBlock = 256;
constexpr uint32_t kMaxOffset = 1u << 21;  // offsets above need bit 9's scaling (never used here)

struct TrieNode {
  std::map<uint8_t, int32_t> children;
  int64_t value = -1;  // byte offset of the replacement
};

void put_le32(std::string& out, uint32_t x) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((x >> (8 * k)) & 0xFF));
}

}  // namespace

std::string build_precompiled_charsmap(const CharsmapRules& rules) {
  if (rules.empty()) return {};
  std::string strings;
  std::map<std::string, uint32_t> string_at;
  std::vector<TrieNode> nodes(1);
  for (const auto& [key, replacement] : rules) {
    if (key.empty() || key.find('\0') != std::string::npos || replacement.find('\0') != std::string::npos) {
      throw std::invalid_argument("charsmap rule keys must be non-empty and neither side may hold a NUL byte");
    }
    const auto [it, added] = string_at.emplace(replacement, static_cast<uint32_t>(strings.size()));
    if (added) {
      strings += replacement;
      strings.push_back('\0');
    }
    int32_t node = 0;
    for (const char ch : key) {
      const auto c = static_cast<uint8_t>(ch);
      auto child = nodes[static_cast<size_t>(node)].children.find(c);
      if (child == nodes[static_cast<size_t>(node)].children.end()) {
        nodes.emplace_back();
        child = nodes[static_cast<size_t>(node)].children.emplace(c, static_cast<int32_t>(nodes.size() - 1)).first;
      }
      node = child->second;
    }
    if (nodes[static_cast<size_t>(node)].value >= 0) throw std::invalid_argument("charsmap rules repeat a key");
    nodes[static_cast<size_t>(node)].value = it->second;
  }

  std::vector<uint32_t> units(kBlock, 0);
  std::vector<bool> used(kBlock, false);
  used[0] = true;  // the root
  const auto reserve = [&](uint32_t end) {
    while (units.size() < end) {
      units.resize(units.size() + kBlock, 0);
      used.resize(units.size(), false);
    }
  };
  std::unordered_set<uint32_t> bases;
  uint32_t first_free = 1;
  std::vector<std::pair<int32_t, uint32_t>> queue = {{0, 0}};  // (node, its unit)
  for (size_t head = 0; head < queue.size(); ++head) {
    const auto [node_id, pos] = queue[head];
    const TrieNode& node = nodes[static_cast<size_t>(node_id)];
    std::vector<uint8_t> labels;
    if (node.value >= 0) labels.push_back(0);
    for (const auto& [c, child] : node.children) labels.push_back(c);
    while (first_free < used.size() && used[first_free]) ++first_free;
    uint32_t base = 0;
    for (uint32_t q = first_free;; ++q) {
      reserve(q + 1);
      if (used[q]) continue;
      base = q ^ labels[0];
      if (bases.count(base)) continue;
      reserve((base | (kBlock - 1)) + 1);
      bool fits = true;
      for (const uint8_t c : labels) fits = fits && !used[base ^ c];
      if (fits) break;
    }
    const uint32_t offset = pos ^ base;
    if (offset >= kMaxOffset) throw std::length_error("charsmap rules too large for the double array");
    bases.insert(base);
    units[pos] |= offset << 10;
    if (node.value >= 0) {
      units[pos] |= 1u << 8;
      units[base] = 0x80000000u | static_cast<uint32_t>(node.value);
      used[base] = true;
    }
    for (const auto& [c, child] : node.children) {
      units[base ^ c] = c;
      used[base ^ c] = true;
      queue.emplace_back(child, base ^ c);
    }
  }

  std::string out;
  out.reserve(4 + units.size() * 4 + strings.size());
  put_le32(out, static_cast<uint32_t>(units.size() * 4));
  for (const uint32_t u : units) put_le32(out, u);
  return out + strings;
}

}  // namespace tc::profiler
