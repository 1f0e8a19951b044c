// The grammar token mask (see grammar_mask.h).
#include "engine/runtime/grammar_mask.h"

#include <algorithm>
#include <array>
#include <limits>

namespace tc::runtime {
namespace {

void set_bit(std::vector<uint64_t>& bits, size_t t) { bits[t / 64] |= uint64_t{1} << (t % 64); }

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
  // The trie walk: levels[d] is the state after the first d bytes of the
  // current token, valid for d <= `valid`. A token that shares more than
  // `dead` bytes with the previous one shares the prefix that failed.
  // Where the state after d bytes equals the starting state (at_start[d]:
  // inside a repetition such as a string's characters, most bytes lead
  // back to it), the byte's step from it is looked up (from_start) instead
  // of pushed again.
  enum Step : uint8_t { Unknown, BackToStart, Elsewhere, Refused };
  std::array<Step, 256> from_start{};
  if (levels.size() < table.max_text_bytes + 1) levels.resize(table.max_text_bytes + 1, state);
  std::vector<uint8_t> at_start(table.max_text_bytes + 1, 0);
  at_start[0] = 1;
  auto same_as_start = [&](const text::GbnfPrefix& p) {
    return p.partial_key() == state.partial_key() && std::ranges::equal(p.stacks(), state.stacks());
  };
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
      if (at_start[d] != 0) {
        Step& known = from_start[b];
        if (known == BackToStart) {
          at_start[d + 1] = 1;
          continue;
        }
        if (known == Refused) break;
        if (!state.step_into(b, levels[d + 1])) {
          known = Refused;
          break;
        }
        at_start[d + 1] = same_as_start(levels[d + 1]) ? 1 : 0;
        known = at_start[d + 1] != 0 ? BackToStart : Elsewhere;
        continue;
      }
      if (!levels[d].step_into(b, levels[d + 1])) break;
      at_start[d + 1] = same_as_start(levels[d + 1]) ? 1 : 0;  // a character's last byte may lead back
    }
    valid = d;
    if (d == bytes.size()) {
      // A token that leaves a character half written fits where that
      // character may still become one the grammar takes, checked at the
      // token's end as llama.cpp does (accepts() of nothing more).
      const text::GbnfPrefix& end = at_start[d] != 0 ? state : levels[d];
      if (end.partial_key() == 0 || end.accepts({})) set_bit(bits, t);
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
