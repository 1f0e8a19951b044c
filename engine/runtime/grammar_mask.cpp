// The grammar token mask (see grammar_mask.h).
#include "engine/runtime/grammar_mask.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <unordered_map>

namespace tc::runtime {
namespace {

void set_bit(std::vector<uint64_t>& bits, size_t t) { bits[t / 64] |= uint64_t{1} << (t % 64); }

// The distinct matcher states one trie walk meets, with each one's steps by
// byte as they are found.
class StateTable {
 public:
  static constexpr int32_t kUnknown = -3;
  static constexpr int32_t kRefused = -2;
  static constexpr int32_t kUninterned = -1;  // past the cap
  static constexpr size_t kInternedStates = 4096;

  explicit StateTable(const text::GbnfPrefix& start) { intern(start); }

  // The state `byte` leads to from state i: its id, kRefused, or
  // kUninterned with the state written into `scratch`.
  int32_t step(int32_t i, uint8_t byte, text::GbnfPrefix& scratch) {
    const int32_t known = next_[static_cast<size_t>(i)][byte];
    if (known != kUnknown) return known;
    if (!states_[static_cast<size_t>(i)].step_into(byte, scratch)) {
      next_[static_cast<size_t>(i)][byte] = kRefused;
      return kRefused;
    }
    const int32_t j = intern(scratch);  // may grow next_: index it again after
    if (j != kUninterned) next_[static_cast<size_t>(i)][byte] = j;
    return j;
  }

  // The id of `state` (added when new), or kUninterned past the cap.
  int32_t intern(const text::GbnfPrefix& state) {
    key_.clear();
    const auto words = state.stacks();
    key_.append(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint32_t));
    const uint32_t partial = state.partial_key();
    key_.append(reinterpret_cast<const char*>(&partial), sizeof partial);
    if (auto it = ids_.find(key_); it != ids_.end()) return it->second;
    if (states_.size() >= kInternedStates) return kUninterned;
    const auto id = static_cast<int32_t>(states_.size());
    ids_.emplace(key_, id);
    states_.push_back(state);
    next_.emplace_back();
    next_.back().fill(kUnknown);
    ends_.push_back(-1);
    return id;
  }

  // A token may end in state i: no half character, or one that can still
  // become a character the grammar takes.
  bool may_end_token(int32_t i) {
    int8_t& e = ends_[static_cast<size_t>(i)];
    if (e < 0) {
      const text::GbnfPrefix& s = states_[static_cast<size_t>(i)];
      e = s.partial_key() == 0 || s.accepts({}) ? 1 : 0;
    }
    return e != 0;
  }

 private:
  std::vector<text::GbnfPrefix> states_;
  std::vector<std::array<int32_t, 256>> next_;
  std::vector<int8_t> ends_;
  std::unordered_map<std::string, int32_t> ids_;
  std::string key_;
};

}  // namespace

void GrammarMask::allowed(const text::GbnfPrefix& state, const ConstraintTokenTable& table,
                          std::vector<text::GbnfPrefix>& levels, std::vector<uint64_t>& bits) {
  const size_t n_vocab = table.kind.size();
  bits.assign((n_vocab + 63) / 64, 0);
  if (state.may_end()) {
    for (int32_t t : table.end_of_generation) set_bit(bits, static_cast<size_t>(t));
  }
  if (state.has_token_elements()) {
    for (size_t t = 0; t < n_vocab; ++t) {
      if (table.kind[t] != ConstraintTokenTable::Kind::EndOfGeneration && state.token_fits(static_cast<int32_t>(t))) {
        set_bit(bits, t);
      }
    }
  }
  // The trie walk: level d holds the state after the first d bytes of the
  // current token, valid for d <= `valid`. A token that shares more than
  // `dead` bytes with the previous one shares the prefix that failed.
  // States are interned (each distinct state once, up to kInternedStates)
  // with their steps by byte kept, so that a byte's step from a state seen
  // before is a lookup: inside a repetition such as a string's characters
  // the walk meets few distinct states. A level past the cap holds its
  // state itself (levels[d], id[d] = -1).
  StateTable interned(state);
  if (levels.size() < table.max_text_bytes + 1) levels.resize(table.max_text_bytes + 1, state);
  std::vector<int32_t> id(table.max_text_bytes + 1, -1);
  id[0] = 0;
  size_t valid = 0;
  size_t dead = std::numeric_limits<size_t>::max();
  for (size_t k = 0; k < table.trie_order.size(); ++k) {
    const auto t = static_cast<size_t>(table.trie_order[k]);
    const size_t shared = table.trie_shared[k];
    if (shared > dead) continue;  // under a prefix that does not fit
    dead = std::numeric_limits<size_t>::max();
    const std::string& bytes = table.bytes[t];
    size_t d = std::min(shared, valid);
    for (; d < bytes.size(); ++d) {
      const auto b = static_cast<uint8_t>(bytes[d]);
      if (id[d] >= 0) {
        const int32_t next = interned.step(id[d], b, levels[d + 1]);
        if (next == StateTable::kRefused) break;
        id[d + 1] = next;  // kUninterned: the state is in levels[d + 1]
        continue;
      }
      if (!levels[d].step_into(b, levels[d + 1])) break;
      id[d + 1] = interned.intern(levels[d + 1]);
    }
    valid = d;
    if (d == bytes.size()) {
      // A token that leaves a character half written fits where that
      // character may still become one the grammar takes, checked at the
      // token's end as llama.cpp does (accepts() of nothing more).
      if (id[d] >= 0 ? interned.may_end_token(id[d]) : levels[d].partial_key() == 0 || levels[d].accepts({})) {
        set_bit(bits, t);
      }
    } else {
      dead = d;
    }
  }
}

void GrammarMask::apply(const text::GbnfPrefix& state, const ConstraintTokenTable& table, std::span<float> logits) {
  key_.assign(state.stacks().begin(), state.stacks().end());
  key_.push_back(state.partial_key());
  Entry* hit = nullptr;
  for (Entry& e : cache_) {
    if (e.key == key_) hit = &e;
  }
  if (hit == nullptr) {
    if (cache_.size() < kCachedStates) {
      hit = &cache_.emplace_back();
    } else {
      hit = &*std::min_element(cache_.begin(), cache_.end(),
                               [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
    }
    hit->key = key_;
    allowed(state, table, levels_, hit->bits);
  }
  hit->last_used = ++clock_;
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  const std::vector<uint64_t>& bits = hit->bits;
  for (size_t t = 0; t < logits.size(); ++t) {
    if ((bits[t / 64] >> (t % 64) & 1) == 0) logits[t] = kMinusInf;
  }
}

}  // namespace tc::runtime
