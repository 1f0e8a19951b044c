// GbnfPrefix: an incremental, byte-at-a-time check that a text is a prefix
// of one the GBNF grammar (gbnf_grammar.h) generates, for grammar-
// constrained sampling. It is llama.cpp's pushdown matcher: the state is the
// set of stacks of grammar positions the text may have reached, each
// expanded until its top is a character group or a token (or it is empty:
// the grammar may end there), plus a pending partial UTF-8 character.
// Unlike the JSON prefixes the grammar may go on after it could end
// (may_end()), and it ends for good (complete()) only where nothing can
// follow.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/text/gbnf_grammar.h"

namespace tc::text {

class GbnfPrefix {
 public:
  // A step that would leave more stacks than this (more readings of the
  // text at once) fails: a grammar ambiguous enough to double them with
  // each character would otherwise take time and memory without bound.
  // Grammars as people write them keep a handful.
  static constexpr size_t kMaxStacks = 256;

  // The empty text. `grammar` must outlive every copy of this state.
  explicit GbnfPrefix(const GbnfGrammar* grammar);

  // push and accepts take their bytes as one token: characters completed
  // inside it are matched exactly, and one it leaves half written must be
  // able to become one a stack takes, checked at its end as llama.cpp does
  // (for a negated class, llama.cpp's check wants every completion allowed).
  bool push(uint8_t byte);
  // False when the bytes do not fit; the state is then unspecified.
  bool push(std::string_view bytes);
  bool accepts(std::string_view bytes) const;
  // `*this` + `byte` written into `next` (whose storage is reused); false
  // when the byte does not fit (then `next` is unspecified). A half-written
  // character is not checked here; accepts({}) on `next` does that.
  bool step_into(uint8_t byte, GbnfPrefix& next) const;

  // A whole token: through <[ID]> elements on top of the stacks and, when
  // `as_text`, through its bytes. False (state unchanged) when neither fits.
  bool push_token(int32_t id, std::string_view bytes, bool as_text);
  // Whether token `id` fits a token element (<[ID]> or !<[ID]>) on top of
  // one of the stacks.
  bool token_fits(int32_t id) const;
  bool has_token_elements() const;  // some stack waits for a token element

  // The text may end here (a stack is empty and no character is half
  // written).
  bool may_end() const;
  // Nothing may follow: every stack is empty.
  bool complete() const;

  // The state as words, equal for equal states (a cache key).
  std::span<const uint32_t> stacks() const { return stacks_; }
  uint32_t partial_key() const { return partial_value_ << 3 | partial_remain_; }

 private:
  bool advance_char(uint32_t code_point, GbnfPrefix& next) const;
  bool keep_partial(GbnfPrefix& next) const;

  const GbnfGrammar* grammar_;
  // The stacks, flat: per stack its depth n then n element indices, the top
  // last. No two stacks are equal.
  std::vector<uint32_t> stacks_;
  uint32_t partial_value_ = 0;  // the bits of a half-written UTF-8 character
  uint32_t partial_remain_ = 0;  // its continuation bytes still to come (0: none)
};

}  // namespace tc::text
