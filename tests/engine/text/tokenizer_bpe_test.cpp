// Byte-level BPE on hand-built vocabs: merges apply by rank, bytes map to
// GPT-2 byte chars, the Llama-3 pre-tokenizer's ignore_merges, special
// tokens, and the pre-tokenizer name check.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "engine/text/tokenizer.h"
#include "engine/text/unicode.h"
#include "tests/engine/text/text_test_util.h"

using namespace tc::text;
using tc::text::test::ids_of;
using tc::text::test::texts_of;

namespace {

using tc::text::test::kPlain;
const std::string kG = "\xC4\xA0";  // Ġ, the byte char of ' '

// All 256 byte chars, then `extra` tokens, with `merges` in rank order.
Vocab bpe_vocab(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                std::string pre = "gpt2") {
  Vocab v;
  v.kind = TokenizerKind::Bpe;
  v.pre = std::move(pre);
  v.add_bos = false;
  v.add_space_prefix = false;
  for (int b = 0; b < 256; ++b) v.tokens.emplace_back(byte_to_unicode_utf8(static_cast<uint8_t>(b)));
  for (const auto& t : extra) v.tokens.push_back(t);
  v.types.assign(v.tokens.size(), TokenType::Normal);
  v.merges = merges;
  return v;
}

}  // namespace

TEST_CASE("bpe: merges apply lowest rank first", "[text][bpe]") {
  SECTION("a chain that builds the whole word") {
    // h e l l o: "l l"(0) -> h e ll o; "h e"(1) -> he ll o; "he ll"(2) -> hell o;
    // "hell o"(3) -> hello.
    const Vocab v = bpe_vocab({"ll", "he", "hell", "hello"}, {"l l", "h e", "he ll", "hell o"});
    const auto tok = Tokenizer::create(v);
    CHECK(texts_of(v, tok->encode("hello", kPlain)) == std::vector<std::string>{"hello"});
  }
  SECTION("a lower rank elsewhere changes the split") {
    // h e l l o: "l o"(0) -> h e l lo; "l l"(1) no longer applies (l lo);
    // "h e"(2) -> he l lo.
    const Vocab v = bpe_vocab({"lo", "ll", "he"}, {"l o", "l l", "h e"});
    const auto tok = Tokenizer::create(v);
    CHECK(texts_of(v, tok->encode("hello", kPlain)) == std::vector<std::string>{"he", "l", "lo"});
  }
  SECTION("equal pairs merge leftmost first") {
    const Vocab v = bpe_vocab({"aa"}, {"a a"});
    const auto tok = Tokenizer::create(v);
    CHECK(texts_of(v, tok->encode("aaa", kPlain)) == std::vector<std::string>{"aa", "a"});
  }
}

TEST_CASE("bpe: words are pre-tokenized and byte-encoded", "[text][bpe]") {
  const Vocab v = bpe_vocab({kG + "w", "or", kG + "wor", "ld", kG + "world", "\xC3\x83\xC2\xA9"},
                            {kG + " w", "o r", kG + "w or", "l d", kG + "wor ld", "\xC3\x83 \xC2\xA9"});
  const auto tok = Tokenizer::create(v);
  // "hi world": words "hi", " world"; no merge touches "hi".
  const auto ids = tok->encode("hi world", kPlain);
  CHECK(texts_of(v, ids) == std::vector<std::string>{"h", "i", kG + "world"});
  CHECK(tok->decode(ids) == "hi world");
  // é = C3 A9 -> byte chars Ã (U+00C3) and © (U+00A9), merged into one token.
  const auto e = tok->encode("\xC3\xA9", kPlain);
  CHECK(texts_of(v, e) == std::vector<std::string>{"\xC3\x83\xC2\xA9"});
  CHECK(tok->decode(e) == "\xC3\xA9");
  CHECK(tok->token_to_piece(ids_of(v, {kG})[0]) == " ");
  CHECK(tok->token_to_piece(ids_of(v, {kG + "world"})[0]) == " world");
  // Invalid UTF-8 becomes U+FFFD (EF BF BD), three byte tokens.
  const auto bad = tok->encode("\xFF", kPlain);
  CHECK(bad == ids_of(v, {"\xC3\xAF", "\xC2\xBF", "\xC2\xBD"}));
  CHECK(tok->decode(bad) == "\xEF\xBF\xBD");
}

TEST_CASE("bpe: llama3 takes a word that is a token as is (ignore_merges)", "[text][bpe]") {
  const std::vector<std::string> extra{"he", "hello"};
  const std::vector<std::string> merges{"h e"};
  const Vocab gpt2 = bpe_vocab(extra, merges, "gpt2");
  const Vocab llama3 = bpe_vocab(extra, merges, "llama3");
  CHECK(texts_of(gpt2, Tokenizer::create(gpt2)->encode("hello", kPlain)) ==
        std::vector<std::string>{"he", "l", "l", "o"});
  CHECK(texts_of(llama3, Tokenizer::create(llama3)->encode("hello", kPlain)) ==
        std::vector<std::string>{"hello"});
}

TEST_CASE("bpe: special tokens and BOS/EOS", "[text][bpe]") {
  Vocab v = bpe_vocab({"<|bos|>", "<|eos|>", "<|user|>"}, {}, "llama3");
  const TokenId bos = 256, eos = 257, user = 258;
  v.types[bos] = TokenType::Control;
  v.types[eos] = TokenType::Control;
  v.types[user] = TokenType::UserDefined;
  v.bos_id = bos;
  v.eos_id = eos;
  v.add_bos = true;
  v.add_eos = true;
  const auto tok = Tokenizer::create(v);
  CHECK(tok->encode("a") == std::vector<TokenId>{bos, 'a', eos});
  CHECK(tok->encode("a", kPlain) == std::vector<TokenId>{'a'});
  CHECK(tok->encode("", {true, false}) == std::vector<TokenId>{bos, eos});
  // Control text is split out only with parse_special; user-defined always.
  CHECK(tok->encode("a<|eos|>", {false, true}) == std::vector<TokenId>{'a', eos});
  CHECK(tok->encode("a<|eos|>", kPlain).size() == 8);
  CHECK(tok->encode("<|user|>a", kPlain) == std::vector<TokenId>{user, 'a'});
  CHECK(tok->decode(std::vector<TokenId>{bos, 'a', eos}) == "a");
  CHECK(tok->decode(std::vector<TokenId>{bos, 'a', eos}, true) == "<|bos|>a<|eos|>");
  CHECK(tok->decode(std::vector<TokenId>{user}) == "<|user|>");
}

TEST_CASE("bpe: an unknown pre-tokenizer is an error naming it", "[text][bpe]") {
  const Vocab v = bpe_vocab({}, {}, "no-such-pre");
  CHECK_THROWS_AS(Tokenizer::create(v), std::invalid_argument);
  CHECK_THROWS_WITH(Tokenizer::create(v), Catch::Contains("no-such-pre") && Catch::Contains("llama3"));
}
