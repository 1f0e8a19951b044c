// A JSON Schema `pattern` (an ECMAScript regular expression) as a GBNF
// grammar (gbnf_grammar.h) of the strings it matches, for schema-constrained
// sampling. JSON Schema patterns are not anchored: a side without ^ / $
// takes any text there. Understood: literals and escapes (\. \\ \/ \n \t
// \uHHHH ...), `.` (any character but a newline), classes [...] with ranges
// and negation, \d \w \s and their negations, groups ( ) and (?: ), `|`, and
// the quantifiers * + ? {m} {m,} {m,n} (a lazy `?` after them changes
// nothing here). Back-references, lookarounds, named groups, word
// boundaries and ^ / $ inside the pattern throw std::invalid_argument
// naming what.
#pragma once

#include <string>
#include <string_view>

namespace tc::text {

std::string regex_to_gbnf(std::string_view pattern);

}  // namespace tc::text
