// The GBNF token mask against llama.cpp's own grammar sampler (libllama's
// llama_sampler_init_grammar): trained SPM (with byte-fallback tokens) and
// BPE vocabularies are written as vocab-only GGUF files and loaded by both;
// for several grammars (llama.cpp's json.gbnf, arithmetic.gbnf, list.gbnf
// and c.gbnf, UTF-8 character classes, repetitions, `.` and negated
// classes, alternatives with shared prefixes) seeded random walks apply
// llama.cpp's sampler to every token id and our OutputConstraint::mask to
// zero logits, and the two must allow the same text tokens and the same
// end-of-generation tokens at every step; then a token both allow is
// accepted by both.
//
// Control tokens (our ConstraintTokenTable::Kind::Never) are not compared:
// llama.cpp's grammar sees their piece as their text ("<s>" matches a
// grammar's "<s>" as characters), ours never allows them as text.
// Two differences are llama.cpp's and are counted, not failed (see
// llama_reads_invalid_lead_byte and llama_ends_mid_character): it takes
// bytes F8..FF as lead bytes, and it may end the text mid-character.
// Skips with a warning without libllama.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/constraint_token_table.h"
#include "engine/runtime/output_constraint.h"
#include "engine/text/gbnf_grammar.h"
#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/vocab.h"
#include "tests/oracle/llama_grammar_oracle.h"
#include "tests/oracle/llama_tokenizer_oracle.h"
#include "tests/oracle/tokenizer_oracle_checks.h"
#include "tests/test_util.h"

namespace {

using tc::oracle::escape_bytes;
using tc::oracle::LlamaGrammar;
using tc::oracle::LlamaVocab;
using tc::runtime::ConstraintTokenTable;
using tc::runtime::OutputConstraint;
using tc::runtime::OutputForm;
using tc::text::GbnfGrammar;
using tc::text::Tokenizer;
using tc::text::TokenizerKind;
using Kind = ConstraintTokenTable::Kind;

constexpr int kWalks = 12;
constexpr int kMaxSteps = 40;

struct NamedGrammar {
  const char* name;
  const char* text;
};

const std::vector<NamedGrammar>& grammars() {
  static const std::vector<NamedGrammar> g = {
      // llama.cpp's grammars/json.gbnf.
      {"json", R"g(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)g"},
      // llama.cpp's grammars/arithmetic.gbnf: recursive through term.
      {"arithmetic", R"g(root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)g"},
      // UTF-8 ranges of two, three and four bytes.
      {"utf8 classes", R"g(root ::= word (" " word){0,6} "."
word ::= [a-zà-ÿ]{1,8} | [\u4e00-\u9fff]{1,4} | [А-я]+ | [\U0001F600-\U0001F64F] | [\u2018-\u201D] [a-z]*
)g"},
      // Every repetition form.
      {"repetitions", R"g(root ::= [a-c]{2,4} "-" [0-9]{3,} " "? [xyz]* ("!"+ | "?") "#"{2} tail?
tail ::= ([a-z] [0-9]?){1,3} [.]{0,2}
)g"},
      // `.` and negated classes, ASCII and not.
      {"dot and negated", R"g(root ::= "<" [^<>\n]{1,20} ">" (. [^a-zA-Z0-9 ]){0,3} "|" [^\u00e9\u4e00-\u9fff\n]* "\n"
)g"},
      // Negated classes that exclude characters of the vocabulary's own
      // multi-byte tokens (curly quotes).
      {"negated non-ascii", R"g(root ::= ([^\u2018\u2019\u201C\u201D\n] | "\u2019s")+ "\n"
)g"},
      // Alternatives that share prefixes, one recursive.
      {"shared prefixes", R"g(root ::= item ("; " item)* | "the end"
item ::= "the cat" | "the car" "s"? | "then" | "there is " [a-z]{1,6} | "th" [aeiou]+ | "t" [0-9]{2} | "(" root ")"
)g"},
      // Text that may end after any word and go on with a multi-byte letter.
      {"free text", R"g(root ::= ([a-zà-ÿ\u2019]+ [ ,.]?)+
)g"},
      // llama.cpp's grammars/list.gbnf: a negated class excluding 3-byte characters (U+2028).
      {"list", R"g(root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)g"},
      // llama.cpp's grammars/c.gbnf: many rules, recursion, comments with negated classes.
      {"c", R"g(root ::= (declaration)*

declaration ::= dataType identifier "(" parameter? ")" "{" statement* "}"

dataType  ::= "int" ws | "float" ws | "char" ws
identifier ::= [a-zA-Z_] [a-zA-Z_0-9]*

parameter ::= dataType identifier

statement ::=
    ( dataType identifier ws "=" ws expression ";" ) |
    ( identifier ws "=" ws expression ";" ) |
    ( identifier ws "(" argList? ")" ";" ) |
    ( "return" ws expression ";" ) |
    ( "while" "(" condition ")" "{" statement* "}" ) |
    ( "for" "(" forInit ";" ws condition ";" ws forUpdate ")" "{" statement* "}" ) |
    ( "if" "(" condition ")" "{" statement* "}" ("else" "{" statement* "}")? ) |
    ( singleLineComment ) |
    ( multiLineComment )

forInit ::= dataType identifier ws "=" ws expression | identifier ws "=" ws expression
forUpdate ::= identifier ws "=" ws expression

condition ::= expression relationOperator expression
relationOperator ::= ("<=" | "<" | "==" | "!=" | ">=" | ">")

expression ::= term (("+" | "-") term)*
term ::= factor(("*" | "/") factor)*

factor ::= identifier | number | unaryTerm | funcCall | parenExpression
unaryTerm ::= "-" factor
funcCall ::= identifier "(" argList? ")"
parenExpression ::= "(" ws expression ws ")"

argList ::= expression ("," ws expression)*

number ::= [0-9]+

singleLineComment ::= "//" [^\n]* "\n"
multiLineComment ::= "/*" ( [^*] | ("*" [^/]) )* "*/"

ws ::= ([ \t\n]+)
)g"},
  };
  return g;
}

// One vocabulary as both sides load it from the same vocab-only file: our
// tokenizer read back from it (as the engine reads it), our token table,
// and llama.cpp's vocab.
struct Vocabulary {
  std::unique_ptr<Tokenizer> ours;
  std::shared_ptr<const ConstraintTokenTable> table;
  std::unique_ptr<LlamaVocab> ref;
};

Vocabulary load_vocabulary(TokenizerKind kind, int32_t size) {
  const tc::text::Vocab vocab = tc::text::train_vocab(tc::oracle::tokenizer_corpus_text(), {kind, size});
  REQUIRE(vocab.n_vocab() == size);
  const std::string name = kind == TokenizerKind::Spm ? "spm" : "bpe";
  const auto path = tc::test::scratch_dir("gbnf_oracle_" + name) / (name + ".gguf");
  tc::oracle::write_vocab_only_gguf(vocab, path);
  Vocabulary v;
  v.ours = Tokenizer::create(tc::text::read_vocab(tc::gguf::GgufFile::open(path)));
  v.ref = std::make_unique<LlamaVocab>(path);
  REQUIRE(v.ref->n_tokens() == size);
  REQUIRE(v.ref->type() == (kind == TokenizerKind::Spm ? 1 : 2));
  v.table = ConstraintTokenTable::from(*v.ours, size);
  // The premise of the comparison: both see the same bytes for each text
  // token (llama.cpp's grammar reads llama_token_to_piece with special
  // rendering on), and the same end-of-generation tokens.
  int differ = 0;
  std::ostringstream first;
  for (int32_t t = 0; t < size; ++t) {
    const auto i = static_cast<size_t>(t);
    const bool eog = v.table->kind[i] == Kind::EndOfGeneration;
    const std::string piece = v.ref->token_to_piece(t, true);
    const bool text_differs = v.table->kind[i] == Kind::Text && v.table->bytes[i] != piece;
    if (eog != v.ref->is_eog(t) || text_differs) {
      if (++differ <= 5) {
        first << "\n  id " << t << ": ours \"" << escape_bytes(v.table->bytes[i]) << "\" kind "
              << static_cast<int>(v.table->kind[i]) << ", llama.cpp's \"" << escape_bytes(piece) << "\" eog "
              << v.ref->is_eog(t);
      }
    }
  }
  INFO(name << " vocabulary: " << differ << " tokens differ between the two sides" << first.str());
  REQUIRE(differ == 0);
  return v;
}

// Whether the text ends half-way through a UTF-8 character.
bool ends_mid_character(const std::string& text) {
  size_t i = text.size(), continuation = 0;
  while (i > 0 && (static_cast<uint8_t>(text[i - 1]) & 0xC0) == 0x80 && continuation < 4) --i, ++continuation;
  if (i == 0) return continuation > 0;
  const auto lead = static_cast<uint8_t>(text[i - 1]);
  const size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  return continuation < need;
}

// A difference that is llama.cpp's, not ours: its UTF-8 decoder
// (decode_utf8 in llama-grammar.cpp) reads a byte F8..FF as the lead byte
// of a four-byte character (its lookup by the high nibble), so a token with
// one is allowed wherever `.` or a negated class may come, though no
// continuation can make it UTF-8. Ours refuses it.
bool llama_reads_invalid_lead_byte(const std::string& bytes, bool ours, bool llama) {
  if (ours || !llama) return false;
  for (char c : bytes) {
    if (static_cast<uint8_t>(c) >= 0xF8) return true;
  }
  return false;
}

// The other: llama.cpp keeps a grammar's ended (empty) stack through a
// token whose text ends half-way through a character
// (llama_grammar_accept_token drops empty stacks only at the next token)
// and allows end of generation wherever one is left, so its text may end
// in a broken character. Ours allows the end only between characters.
bool llama_ends_mid_character(const std::string& text, Kind kind, bool ours, bool llama) {
  return kind == Kind::EndOfGeneration && !ours && llama && ends_mid_character(text);
}

struct Counts {
  int steps = 0;             // steps whose allowed sets were compared
  int64_t tokens = 0;        // token comparisons
  int eog_steps = 0;         // steps where end of generation was allowed
  int ended = 0;             // walks stopped with only end of generation allowed
  int multi_byte = 0;        // accepted tokens that left a character half written
  int64_t invalid_lead = 0;  // tokens llama.cpp alone allowed for a lead byte F8..FF
  int eog_mid_char = 0;      // steps llama.cpp alone allowed end of generation mid-character
};

// Seeded random walks through `grammar`, comparing the two masks at each
// step; REQUIREs they agree.
void walk(const Vocabulary& v, const NamedGrammar& named, uint32_t seed, Counts& counts) {
  INFO("grammar " << named.name << ":\n" << named.text);
  const int32_t n_vocab = v.ref->n_tokens();
  const auto grammar = GbnfGrammar::parse(named.text, tc::text::gbnf_token_lookup(*v.ours));
  const ConstraintTokenTable& table = *v.table;
  std::mt19937 rng(seed);
  for (int w = 0; w < kWalks; ++w) {
    LlamaGrammar ref(*v.ref, named.text);
    OutputConstraint ours(v.table, OutputForm::grammar(grammar));
    std::string text;
    std::vector<int32_t> ids;
    for (int step = 0; step < kMaxSteps; ++step) {
      const std::vector<uint8_t> llama = ref.allowed(n_vocab);
      std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
      ours.mask(logits);
      std::vector<int32_t> both;
      bool eog = false;
      std::ostringstream mismatches;
      int n_mismatches = 0;
      for (int32_t t = 0; t < n_vocab; ++t) {
        const auto i = static_cast<size_t>(t);
        if (table.kind[i] == Kind::Never) continue;
        const bool a = logits[i] == 0.0f, b = llama[i] != 0;
        ++counts.tokens;
        if (table.kind[i] == Kind::Text && llama_reads_invalid_lead_byte(table.bytes[i], a, b)) {
          ++counts.invalid_lead;
          continue;
        }
        if (llama_ends_mid_character(text, table.kind[i], a, b)) {
          ++counts.eog_mid_char;
          continue;
        }
        if (a != b) {
          if (++n_mismatches <= 8) {
            mismatches << "\n  token " << t << " \"" << escape_bytes(table.bytes[i]) << "\""
                       << (table.kind[i] == Kind::EndOfGeneration ? " (end of generation)" : "") << ": allowed by "
                       << (a ? "ours" : "llama.cpp") << " only";
          }
          continue;
        }
        if (!a) continue;
        if (table.kind[i] == Kind::EndOfGeneration) {
          eog = true;
        } else {
          both.push_back(t);
        }
      }
      INFO("walk " << w << " step " << step << ", text so far \"" << escape_bytes(text, 400) << "\" ("
                   << ids.size() << " tokens)");
      INFO(n_mismatches << " tokens allowed by one side only:" << mismatches.str());
      REQUIRE(n_mismatches == 0);
      ++counts.steps;
      counts.eog_steps += eog ? 1 : 0;
      if (both.empty()) {
        counts.ended += eog ? 1 : 0;
        break;
      }
      const int32_t t = both[rng() % both.size()];
      ref.accept(t);
      ours.accept(t);
      ids.push_back(t);
      text += table.bytes[static_cast<size_t>(t)];
      counts.multi_byte += ends_mid_character(text) ? 1 : 0;
    }
  }
}

void compare_on(TokenizerKind kind, int32_t size, uint32_t seed) {
  const Vocabulary v = load_vocabulary(kind, size);
  Counts counts;
  for (const NamedGrammar& g : grammars()) walk(v, g, seed++, counts);
  WARN((kind == TokenizerKind::Spm ? "SPM" : "BPE")
       << " vocabulary of " << size << ": " << counts.steps << " steps compared (" << counts.tokens
       << " token decisions), end of generation allowed at " << counts.eog_steps << ", " << counts.ended
       << " walks ended, " << counts.multi_byte << " tokens left a character half written; "
       << counts.invalid_lead << " times llama.cpp alone allowed a token with a byte F8..FF, "
       << counts.eog_mid_char << " times the end of generation mid-character");
  // Not vacuous: most walks run long, some end, some split characters.
  CHECK(counts.steps >= static_cast<int>(grammars().size()) * kWalks * 10);
  CHECK(counts.eog_steps >= 50);
  CHECK(counts.ended >= 10);
  CHECK(counts.multi_byte >= 10);
}

}  // namespace

TEST_CASE("GBNF oracle: the grammar mask allows what llama.cpp's grammar sampler allows on an SPM vocabulary",
          "[oracle][gbnf][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  INFO("llama.cpp grammar oracle unusable: " << tc::oracle::llama_grammar_unusable_reason());
  REQUIRE(tc::oracle::llama_grammar_unusable_reason().empty());
  compare_on(TokenizerKind::Spm, 2048, 101);
}

TEST_CASE("GBNF oracle: the grammar mask allows what llama.cpp's grammar sampler allows on a BPE vocabulary",
          "[oracle][gbnf][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  INFO("llama.cpp grammar oracle unusable: " << tc::oracle::llama_grammar_unusable_reason());
  REQUIRE(tc::oracle::llama_grammar_unusable_reason().empty());
  compare_on(TokenizerKind::Bpe, 4096, 202);
}
