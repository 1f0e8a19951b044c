// GbnfGrammar: a GBNF grammar (llama.cpp's grammar format, the `grammar`
// field of llama-server's requests) parsed and compiled into the flat
// element form that gbnf_prefix.h walks byte by byte.
//
// The language, as llama.cpp reads it: rules `name ::= alternatives`, one
// per line (newlines only inside parentheses or after `|`); `|`
// alternatives; "literal" strings and [character classes] ([^...] negated,
// a-z ranges) with the escapes \n \r \t \\ \" \[ \] \xHH \uHHHH
// \UHHHHHHHH; `.` any character; ( ) groups; the repetitions * + ? {m}
// {m,} {m,n}; # comments; <[ID]> and !<[ID]> for one token by id (or
// not that token), <TEXT> / !<TEXT> for the special token TEXT names. A
// rule named `root` is where the text starts. Characters are Unicode code
// points; the text is UTF-8.
//
// Refused with a GbnfError saying where (line:column) and what: a syntax
// error, an undefined or missing root rule, left recursion (the matcher
// would never stop expanding), a repetition or grammar too large, a token
// the vocabulary does not have.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tc::text {

class GbnfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one element of a rule is (llama.cpp's llama_gretype, same order).
enum class GbnfOp : uint8_t {
  End,             // the rule's end
  Alt,             // the start of the next alternative
  RuleRef,         // value: the referenced rule's index
  Char,            // value: a code point; starts a character group
  CharNot,         // value: a code point; starts a negated character group
  CharRangeUpper,  // value: the inclusive upper end of the preceding Char / CharAlt
  CharAlt,         // value: another code point of the same group
  CharAny,         // `.`: any code point
  Token,           // value: a token id
  TokenNot,        // value: a token id; any token but that one
};

struct GbnfElement {
  GbnfOp op = GbnfOp::End;
  uint32_t value = 0;
};

// Resolves <TEXT> to the id of the one special token spelled TEXT (angle
// brackets included), or nullopt when there is none.
using GbnfTokenLookup = std::function<std::optional<int32_t>(std::string_view text)>;

class Tokenizer;
// The lookup llama.cpp does: TEXT tokenized with special tokens recognised
// must be exactly one token. `tokenizer` must outlive the lookup.
GbnfTokenLookup gbnf_token_lookup(const Tokenizer& tokenizer);

struct GbnfGrammar {
  // Every rule's elements, each rule's alternatives separated by Alt and
  // ended by End.
  std::vector<GbnfElement> elements;
  std::vector<uint32_t> rule_start;     // [n_rules]: the rule's first element in `elements`
  std::vector<std::string> rule_names;  // [n_rules]: generated ones are NAME_N
  uint32_t root = 0;                    // the `root` rule's index

  // Largest grammar accepted, in elements (repetitions expanded).
  static constexpr size_t kMaxElements = 1u << 20;

  // `lookup` resolves <TEXT> tokens; without one they are an error (<[ID]>
  // is always accepted; ids are checked against the vocabulary by the
  // caller: token_ids()).
  static std::shared_ptr<const GbnfGrammar> parse(std::string_view text, const GbnfTokenLookup& lookup = {});

  // The token ids the grammar names (<[ID]>, <TEXT>), for a range check
  // against the model's vocabulary.
  std::vector<uint32_t> token_ids() const;

  // Whether element i ends an alternative (End or Alt).
  bool ends_alternative(uint32_t i) const {
    return elements[i].op == GbnfOp::End || elements[i].op == GbnfOp::Alt;
  }
};

}  // namespace tc::text
