// The GBNF pushdown matcher (see gbnf_prefix.h). Stacks are expanded as
// llama.cpp's llama_grammar_advance_stack does: a rule reference on top is
// replaced by each of the rule's alternatives (with the element after the
// reference below it), until every stack's top is a terminal. Left
// recursion is refused when the grammar is parsed, so this ends.
#include "engine/text/gbnf_prefix.h"

#include <algorithm>

namespace tc::text {
namespace {

bool is_terminal(GbnfOp op) {
  return op == GbnfOp::Char || op == GbnfOp::CharNot || op == GbnfOp::CharAny || op == GbnfOp::Token ||
         op == GbnfOp::TokenNot;
}

bool is_token(GbnfOp op) { return op == GbnfOp::Token || op == GbnfOp::TokenNot; }

// Set when a step would leave more than GbnfPrefix::kMaxStacks stacks (the
// step then fails); cleared by each step.
thread_local bool too_many_stacks = false;

// Appends the stack `s` to the flat list `out` unless it is there already
// (or the list is full: too_many_stacks).
void add_unique(std::vector<uint32_t>& out, std::span<const uint32_t> s) {
  size_t count = 0;
  for (size_t i = 0; i < out.size(); i += out[i] + 1, ++count) {
    if (out[i] == s.size() && std::equal(s.begin(), s.end(), out.begin() + static_cast<std::ptrdiff_t>(i) + 1)) return;
  }
  if (count >= GbnfPrefix::kMaxStacks) {
    too_many_stacks = true;
    return;
  }
  out.push_back(static_cast<uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// Expands `stack` (its top a rule reference, a terminal, or nothing) into
// stacks with a terminal or nothing on top, added to `out`.
void expand(const GbnfGrammar& g, std::span<const uint32_t> stack, std::vector<uint32_t>& out) {
  // A work list of stacks, each followed by its depth.
  thread_local std::vector<uint32_t> work;
  thread_local std::vector<uint32_t> cur;
  work.clear();
  work.insert(work.end(), stack.begin(), stack.end());
  work.push_back(static_cast<uint32_t>(stack.size()));
  while (!work.empty() && !too_many_stacks) {
    const uint32_t n = work.back();
    cur.assign(work.end() - 1 - n, work.end() - 1);
    work.resize(work.size() - 1 - n);
    if (n == 0 || is_terminal(g.elements[cur.back()].op)) {
      add_unique(out, cur);
      continue;
    }
    const uint32_t ref = cur.back();  // a RuleRef
    const uint32_t rule = g.elements[ref].value;
    for (uint32_t alt = g.rule_start[rule];;) {
      const size_t before = work.size();
      work.insert(work.end(), cur.begin(), cur.end() - 1);
      if (!g.ends_alternative(ref + 1)) work.push_back(ref + 1);
      if (!g.ends_alternative(alt)) work.push_back(alt);
      work.push_back(static_cast<uint32_t>(work.size() - before));
      while (!g.ends_alternative(alt)) ++alt;
      if (g.elements[alt].op == GbnfOp::End) break;
      ++alt;  // past the Alt
    }
  }
}

// Whether code point c matches the character group starting at `pos`;
// `after` is set to the element after the group.
bool match_char(const GbnfGrammar& g, uint32_t pos, uint32_t c, uint32_t& after) {
  const auto& e = g.elements;
  const bool positive = e[pos].op != GbnfOp::CharNot;
  bool found = false;
  do {
    if (e[pos].op == GbnfOp::CharAny) {
      found = true;
      pos += 1;
    } else if (e[pos + 1].op == GbnfOp::CharRangeUpper) {
      found = found || (e[pos].value <= c && c <= e[pos + 1].value);
      pos += 2;
    } else {
      found = found || e[pos].value == c;
      pos += 1;
    }
  } while (e[pos].op == GbnfOp::CharAlt);
  after = pos;
  return found == positive;
}

// llama.cpp's llama_grammar_match_partial_char: whether some completion of
// a half-written character (its bits `value`, `remain` bytes to come) can
// match the group at `pos`; for a negated group, as llama.cpp has it,
// whether none of the completions is excluded.
bool match_partial(const GbnfGrammar& g, uint32_t pos, uint32_t value, uint32_t remain) {
  if (remain == 1 && value < 2) return false;  // an overlong 2-byte form of ASCII
  const auto& e = g.elements;
  const bool positive = e[pos].op != GbnfOp::CharNot;
  uint32_t low = value << (remain * 6);
  const uint32_t high = low | ((1u << (remain * 6)) - 1);
  if (low == 0) low = remain == 2 ? 1u << 11 : remain == 3 ? 1u << 16 : low;
  do {
    if (e[pos].op == GbnfOp::CharAny) return true;
    if (e[pos + 1].op == GbnfOp::CharRangeUpper) {
      if (e[pos].value <= high && low <= e[pos + 1].value) return positive;
      pos += 2;
    } else {
      if (low <= e[pos].value && e[pos].value <= high) return positive;
      pos += 1;
    }
  } while (e[pos].op == GbnfOp::CharAlt);
  return !positive;
}

// Calls fn(stack) for each stack of a flat list.
template <class Fn>
void for_each_stack(const std::vector<uint32_t>& flat, Fn&& fn) {
  for (size_t i = 0; i < flat.size(); i += flat[i] + 1) {
    fn(std::span<const uint32_t>(flat.data() + i + 1, flat[i]));
  }
}

// llama.cpp's check where a token's bytes end: a character the token
// leaves half written (`value`, `remain` bytes to come) must be able to
// become one that some stack's character group takes.
bool partial_fits(const GbnfGrammar& g, const std::vector<uint32_t>& stacks, uint32_t value, uint32_t remain) {
  if (remain == 0) return true;
  bool fits = false;
  for_each_stack(stacks, [&](std::span<const uint32_t> s) {
    fits = fits || (!s.empty() && !is_token(g.elements[s.back()].op) && match_partial(g, s.back(), value, remain));
  });
  return fits;
}

}  // namespace

GbnfPrefix::GbnfPrefix(const GbnfGrammar* grammar) : grammar_(grammar) {
  const GbnfGrammar& g = *grammar_;
  for (uint32_t alt = g.rule_start[g.root];;) {
    if (g.ends_alternative(alt)) {
      expand(g, {}, stacks_);
    } else {
      const uint32_t one[1] = {alt};
      expand(g, one, stacks_);
    }
    while (!g.ends_alternative(alt)) ++alt;
    if (g.elements[alt].op == GbnfOp::End) break;
    ++alt;
  }
}

bool GbnfPrefix::advance_char(uint32_t c, GbnfPrefix& next) const {
  const GbnfGrammar& g = *grammar_;
  thread_local std::vector<uint32_t> moved;
  next.stacks_.clear();
  next.partial_value_ = 0;
  next.partial_remain_ = 0;
  too_many_stacks = false;
  for_each_stack(stacks_, [&](std::span<const uint32_t> s) {
    if (s.empty() || is_token(g.elements[s.back()].op)) return;
    uint32_t after = 0;
    if (!match_char(g, s.back(), c, after)) return;
    moved.assign(s.begin(), s.end() - 1);
    if (!g.ends_alternative(after)) moved.push_back(after);
    expand(g, moved, next.stacks_);
  });
  return !next.stacks_.empty() && !too_many_stacks;
}

// `next` keeps the stacks a character can come on (a character group on
// top) while next.partial_* is half written. They are not narrowed by what
// the character may become: llama.cpp checks that only where a token's
// bytes end (partial_fits), and a stack whose group excludes some of the
// completions may still take the one that comes (a negated class).
bool GbnfPrefix::keep_partial(GbnfPrefix& next) const {
  const GbnfGrammar& g = *grammar_;
  if (next.partial_remain_ == 1 && next.partial_value_ < 2) return false;  // can only be overlong
  next.stacks_.clear();
  for_each_stack(stacks_, [&](std::span<const uint32_t> s) {
    if (s.empty() || is_token(g.elements[s.back()].op)) return;
    next.stacks_.push_back(static_cast<uint32_t>(s.size()));
    next.stacks_.insert(next.stacks_.end(), s.begin(), s.end());
  });
  return !next.stacks_.empty();
}

bool GbnfPrefix::step_into(uint8_t byte, GbnfPrefix& next) const {
  next.grammar_ = grammar_;
  if (partial_remain_ == 0) {
    if (byte == 0) return false;  // NUL never fits (llama.cpp ends pieces there)
    if (byte < 0x80) return advance_char(byte, next);
    if (byte >= 0xF8 || byte < 0xC0) return false;  // not a lead byte
    next.partial_remain_ = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : 1;
    next.partial_value_ = byte & (0x7Fu >> (next.partial_remain_ + 1));
    return keep_partial(next);
  }
  if ((byte & 0xC0u) != 0x80u) return false;
  const uint32_t value = partial_value_ << 6 | (byte & 0x3Fu);
  if (partial_remain_ == 1) return advance_char(value, next);
  next.partial_value_ = value;
  next.partial_remain_ = partial_remain_ - 1;
  return keep_partial(next);
}

// push and accepts take the bytes as one token: step by step, then
// llama.cpp's check of a character left half written at its end.
bool GbnfPrefix::push(uint8_t byte) {
  GbnfPrefix next(*this);
  if (!step_into(byte, next) || !partial_fits(*grammar_, next.stacks_, next.partial_value_, next.partial_remain_)) {
    return false;
  }
  *this = std::move(next);
  return true;
}

bool GbnfPrefix::push(std::string_view bytes) {
  GbnfPrefix a(*this), b(*this);
  for (char c : bytes) {
    if (!a.step_into(static_cast<uint8_t>(c), b)) return false;
    std::swap(a, b);
  }
  if (!partial_fits(*grammar_, a.stacks_, a.partial_value_, a.partial_remain_)) return false;
  *this = std::move(a);
  return true;
}

bool GbnfPrefix::accepts(std::string_view bytes) const {
  GbnfPrefix copy(*this);
  return copy.push(bytes);
}

bool GbnfPrefix::token_fits(int32_t id) const {
  if (partial_remain_ != 0) return false;
  bool fits = false;
  for_each_stack(stacks_, [&](std::span<const uint32_t> s) {
    if (fits || s.empty()) return;
    const GbnfElement& e = grammar_->elements[s.back()];
    fits = (e.op == GbnfOp::Token && e.value == static_cast<uint32_t>(id)) ||
           (e.op == GbnfOp::TokenNot && e.value != static_cast<uint32_t>(id));
  });
  return fits;
}

bool GbnfPrefix::has_token_elements() const {
  bool any = false;
  for_each_stack(stacks_, [&](std::span<const uint32_t> s) {
    any = any || (!s.empty() && is_token(grammar_->elements[s.back()].op));
  });
  return any;
}

bool GbnfPrefix::push_token(int32_t id, std::string_view bytes, bool as_text) {
  const GbnfGrammar& g = *grammar_;
  GbnfPrefix next(grammar_);
  next.stacks_.clear();
  too_many_stacks = false;
  if (partial_remain_ == 0) {
    thread_local std::vector<uint32_t> moved;
    for_each_stack(stacks_, [&](std::span<const uint32_t> s) {
      if (s.empty()) return;
      const GbnfElement& e = g.elements[s.back()];
      const bool match = (e.op == GbnfOp::Token && e.value == static_cast<uint32_t>(id)) ||
                         (e.op == GbnfOp::TokenNot && e.value != static_cast<uint32_t>(id));
      if (!match) return;
      moved.assign(s.begin(), s.end() - 1);
      if (!g.ends_alternative(s.back() + 1)) moved.push_back(s.back() + 1);
      expand(g, moved, next.stacks_);
    });
  }
  bool overflow = too_many_stacks;
  if (as_text && !bytes.empty()) {
    GbnfPrefix text(*this);
    if (text.push(bytes)) {
      // A token that ends half-way through a character continues only as
      // text.
      if (text.partial_remain_ != 0 || next.stacks_.empty()) {
        next = std::move(text);
        overflow = false;
      } else {
        too_many_stacks = false;
        for_each_stack(text.stacks_, [&](std::span<const uint32_t> s) { add_unique(next.stacks_, s); });
        overflow = overflow || too_many_stacks;
      }
    }
  }
  if (next.stacks_.empty() || overflow) return false;
  *this = std::move(next);
  return true;
}

bool GbnfPrefix::may_end() const {
  if (partial_remain_ != 0) return false;
  for (size_t i = 0; i < stacks_.size(); i += stacks_[i] + 1) {
    if (stacks_[i] == 0) return true;
  }
  return false;
}

bool GbnfPrefix::complete() const {
  return partial_remain_ == 0 && stacks_.size() == 1 && stacks_[0] == 0;
}

}  // namespace tc::text
