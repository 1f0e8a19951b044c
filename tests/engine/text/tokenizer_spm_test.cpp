// SPM tokenizer on hand-built vocabs whose merges can be predicted: scores
// decide the merge order, ties go left, unknown characters fall back to
// byte pieces, special tokens and BOS/EOS follow the vocab's flags.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "engine/text/tokenizer.h"
#include "tests/engine/text/text_test_util.h"

using namespace tc::text;
using tc::text::test::ids_of;
using tc::text::test::spm_vocab;
using tc::text::test::texts_of;

namespace {

using tc::text::test::kSp;
using tc::text::test::kPlain;

// Pieces for "abcd"; the scores of "ab" and "bc" decide the result.
Vocab abcd_vocab(float ab, float bc) {
  return spm_vocab({{kSp, -10}, {"a", -10}, {"b", -10}, {"c", -10}, {"d", -10},
                    {"ab", ab}, {"bc", bc}, {kSp + "a", -3}, {"cd", -4}, {kSp + "abc", -5}});
}

}  // namespace

TEST_CASE("spm: the higher-scoring pair merges first", "[text][spm]") {
  SECTION("bc before ab") {
    // ▁ a b c d: bc(-1) -> ▁ a bc d; ab is stale; ▁a(-3) -> ▁a bc d;
    // cd is stale; ▁abc(-5) -> ▁abc d.
    const Vocab v = abcd_vocab(-2, -1);
    const auto tok = Tokenizer::create(v);
    const auto ids = tok->encode("abcd", kPlain);
    CHECK(texts_of(v, ids) == std::vector<std::string>{kSp + "abc", "d"});
    CHECK(tok->decode(ids) == "abcd");
  }
  SECTION("ab before bc") {
    // ▁ a b c d: ab(-1) -> ▁ ab c d; bc and ▁a are stale; cd(-4) -> ▁ ab cd.
    const Vocab v = abcd_vocab(-1, -2);
    const auto tok = Tokenizer::create(v);
    const auto ids = tok->encode("abcd", kPlain);
    CHECK(texts_of(v, ids) == std::vector<std::string>{kSp, "ab", "cd"});
    CHECK(tok->decode(ids) == "abcd");
  }
}

TEST_CASE("spm: equal scores merge leftmost first", "[text][spm]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {"aa", -1}});
  const auto tok = Tokenizer::create(v);
  CHECK(texts_of(v, tok->encode("aaa", kPlain)) == std::vector<std::string>{kSp, "aa", "a"});
  CHECK(texts_of(v, tok->encode("aaaa", kPlain)) == std::vector<std::string>{kSp, "aa", "aa"});
}

TEST_CASE("spm: spaces become U+2581 and one is prepended", "[text][spm]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {"b", -10}, {kSp + "a", -1},
                             {kSp + "b", -2}, {kSp + kSp, -3}});
  const auto tok = Tokenizer::create(v);
  CHECK(tok->encode("a b", kPlain) == ids_of(v, {kSp + "a", kSp + "b"}));
  // Leading space: ▁▁a -> the pair (▁, ▁) and (▁, a) compete: ▁a scores higher.
  CHECK(tok->encode(" a", kPlain) == ids_of(v, {kSp, kSp + "a"}));
  CHECK(tok->decode(tok->encode(" a", kPlain)) == " a");
  CHECK(tok->decode(tok->encode("a  b ", kPlain)) == "a  b ");

  Vocab no_prefix = v;
  no_prefix.add_space_prefix = false;
  const auto tok2 = Tokenizer::create(no_prefix);
  CHECK(tok2->encode("a b", kPlain) == ids_of(v, {"a", kSp + "b"}));
  CHECK(tok2->decode(tok2->encode("a b", kPlain)) == "a b");
}

TEST_CASE("spm: characters outside the vocab fall back to byte pieces", "[text][spm]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {kSp + "a", -1}});
  const auto tok = Tokenizer::create(v);
  // é = C3 A9; byte pieces sit at 3 + byte.
  const auto ids = tok->encode("a\xC3\xA9", kPlain);
  CHECK(ids == std::vector<TokenId>{ids_of(v, {kSp + "a"})[0], 3 + 0xC3, 3 + 0xA9});
  CHECK(tok->decode(ids) == "a\xC3\xA9");
  CHECK(tok->token_to_piece(3 + 0x41) == "A");

  // Without byte pieces the unknown token stands in, one per byte.
  Vocab bare;
  bare.tokens = {"<unk>", "<s>", "</s>", kSp, "a"};
  bare.types = {TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Normal,
                TokenType::Normal};
  bare.scores = {0, 0, 0, -1, -1};
  bare.unk_id = 0;
  bare.bos_id = 1;
  bare.eos_id = 2;
  const auto tok2 = Tokenizer::create(bare);
  CHECK(tok2->encode("a\xC3\xA9", kPlain) == std::vector<TokenId>{3, 4, 0, 0});
  CHECK(tok2->decode(std::vector<TokenId>{3, 4, 0}) == "a");
  CHECK(tok2->decode(std::vector<TokenId>{3, 4, 0}, true) == "a<unk>");
}

TEST_CASE("spm: invalid UTF-8 is replaced by U+FFFD", "[text][spm]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}});
  const auto tok = Tokenizer::create(v);
  const auto ids = tok->encode("a\xFF" "a", kPlain);
  // ▁ a EF BF BD a
  CHECK(ids == std::vector<TokenId>{259, 260, 3 + 0xEF, 3 + 0xBF, 3 + 0xBD, 260});
  CHECK(tok->decode(ids) == "a\xEF\xBF\xBD" "a");
}

TEST_CASE("spm: BOS and EOS follow add_special and the vocab flags", "[text][spm]") {
  Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {kSp + "a", -1}});
  const TokenId sp_a = ids_of(v, {kSp + "a"})[0];
  {
    const auto tok = Tokenizer::create(v);
    CHECK(tok->encode("a") == std::vector<TokenId>{1, sp_a});
    CHECK(tok->encode("a", kPlain) == std::vector<TokenId>{sp_a});
    CHECK(tok->encode("") == std::vector<TokenId>{1});
    CHECK(tok->encode("", kPlain).empty());
    CHECK(tok->decode(tok->encode("a")) == "a");
    CHECK(tok->decode(tok->encode("a"), true) == "<s> a");
  }
  v.add_eos = true;
  v.add_bos = false;
  {
    const auto tok = Tokenizer::create(v);
    CHECK(tok->encode("a") == std::vector<TokenId>{sp_a, 2});
    CHECK(tok->decode(tok->encode("a")) == "a");
  }
}

TEST_CASE("spm: special tokens are parsed only when asked, user-defined always",
          "[text][spm]") {
  Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {"b", -10}, {kSp + "a", -1}, {kSp + "b", -2},
                       {"<tag>", 0}});
  v.types.back() = TokenType::UserDefined;
  const TokenId tag = v.n_vocab() - 1;
  const auto [sp_a, sp_b] = [&] {
    const auto ids = ids_of(v, {kSp + "a", kSp + "b"});
    return std::pair{ids[0], ids[1]};
  }();
  const auto tok = Tokenizer::create(v);

  // parse_special: <s> becomes the control token, and the text after a
  // special token gets its own space prefix (llama.cpp).
  CHECK(tok->encode("a<s>b", {false, true}) == std::vector<TokenId>{sp_a, 1, sp_b});
  // Without it, "<s>" is text: ▁a then bytes for '<', 's', '>' (not pieces).
  CHECK(tok->encode("a<s>b", kPlain) ==
        std::vector<TokenId>{sp_a, 3 + '<', 3 + 's', 3 + '>', ids_of(v, {"b"})[0]});
  // A user-defined token is split out either way.
  CHECK(tok->encode("a<tag>b", kPlain) == std::vector<TokenId>{sp_a, tag, sp_b});
  CHECK(tok->decode(std::vector<TokenId>{sp_a, tag, sp_b}) == "a<tag> b");
  // Control tokens render only with render_special.
  CHECK(tok->token_to_piece(1) == "");
  CHECK(tok->token_to_piece(1, true) == "<s>");
  CHECK(tok->token_to_piece(tag) == "<tag>");
  CHECK(tok->token_to_piece(-1) == "");
  CHECK(tok->token_to_piece(v.n_vocab()) == "");
}

TEST_CASE("spm: end-of-generation markers of another type act as control tokens", "[text][spm]") {
  // llama.cpp's loader makes "</s>", "<|end|>", "<|im_end|>", ... control
  // tokens whatever type the file gives them (here normal and user-defined).
  Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {kSp + "a", -1}, {"<|end|>", 0}, {"<|im_end|>", 0}, {"<x>", 0}});
  const TokenId end = v.n_vocab() - 3;
  const TokenId im_end = v.n_vocab() - 2;
  const TokenId x = v.n_vocab() - 1;
  v.types[static_cast<size_t>(im_end)] = TokenType::UserDefined;
  v.types[static_cast<size_t>(x)] = TokenType::UserDefined;
  const auto tok = Tokenizer::create(v);
  CHECK(tok->vocab().types[static_cast<size_t>(end)] == TokenType::Control);
  CHECK(tok->vocab().types[static_cast<size_t>(im_end)] == TokenType::Control);
  CHECK(tok->vocab().types[static_cast<size_t>(x)] == TokenType::UserDefined);
  CHECK(tok->vocab().is_end_of_generation(end));
  CHECK(tok->vocab().is_end_of_generation(im_end));
  CHECK_FALSE(v.is_end_of_generation(im_end));  // the vocab as given is unchanged
  // Split off only with parse_special, rendered only with render_special.
  const auto plain = tok->encode("a<|im_end|>", kPlain);
  CHECK(std::find(plain.begin(), plain.end(), im_end) == plain.end());
  CHECK(tok->encode("a<|im_end|>", {false, true}).back() == im_end);
  CHECK(tok->encode("a<x>", kPlain).back() == x);
  CHECK(tok->token_to_piece(im_end) == "");
  CHECK(tok->token_to_piece(im_end, true) == "<|im_end|>");
  CHECK(tok->token_to_piece(end) == "");
}

TEST_CASE("spm: inconsistent vocabs are rejected", "[text][spm]") {
  Vocab v = spm_vocab({{"a", -1}});
  v.scores.pop_back();
  CHECK_THROWS_AS(Tokenizer::create(v), std::invalid_argument);
  v = spm_vocab({{"a", -1}, {"a", -2}});
  CHECK_THROWS_WITH(Tokenizer::create(v), Catch::Contains("'a'"));
  v = spm_vocab({{"a", -1}});
  v.bos_id = v.n_vocab();
  CHECK_THROWS_WITH(Tokenizer::create(v), Catch::Contains("bos_id"));
  CHECK_THROWS_AS(Tokenizer::create(Vocab{}), std::invalid_argument);
}
