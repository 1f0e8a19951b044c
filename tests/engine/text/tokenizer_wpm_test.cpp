// WordPiece (`tokenizer.ggml.model` "bert") on a hand-built vocab, as
// llama.cpp runs it: BERT's normalizer and word splitting, greedy longest
// match from U+2581 + word, whole words to [UNK], [CLS] ... [SEP], special
// texts, pieces and decoding, and the GGUF keys with llama.cpp's defaults.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "tests/engine/text/text_test_util.h"
#include "tests/test_util.h"

using namespace tc::text;
using tc::gguf::GgufFile;
using tc::gguf::GgufWriter;
using tc::gguf::Value;
using tc::text::test::ids_of;
using tc::text::test::texts_of;

namespace {

using tc::text::test::kPlain;
using tc::text::test::kSp;
using Texts = std::vector<std::string>;

// bert-base's head: [PAD] 0, [unused0..98], [UNK] 100, [CLS] 101, [SEP] 102,
// [MASK] 103 (control), then `pieces` (normal; "_" stands for U+2581).
Vocab wpm_vocab(const Texts& pieces, bool lowercase = true, bool strip_accents = true) {
  Vocab v;
  v.kind = TokenizerKind::Wpm;
  v.bos_id = 101;
  v.unk_id = 100;
  v.sep_id = 102;
  v.pad_id = 0;
  v.mask_id = 103;
  v.eos_id = -1;
  v.add_bos = true;
  v.add_sep = true;
  v.add_space_prefix = false;
  v.normalizer_lowercase = lowercase;
  v.normalizer_strip_accents = strip_accents;
  const auto add = [&](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
  };
  add("[PAD]", TokenType::Control);
  for (int i = 0; i < 99; ++i) add(kSp + "[unused" + std::to_string(i) + "]", TokenType::Normal);
  for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) add(s, TokenType::Control);
  for (const std::string& p : pieces) {
    std::string t;
    for (const char c : p) t += c == '_' ? kSp : std::string(1, c);
    add(t, TokenType::Normal);
  }
  return v;
}

const Texts kPieces = {
    "_hello", "_world", "_,", "_!", "_.", "_+", "_'", "_s", "_un", "aff", "able", "_a", "b", "_b", "_eclair", "_i",
    "_hi", "_cls", "_[", "_]", "_\xE6\x97\xA5", "_\xE6\x9C\xAC", "_\xE3\x81\xAE", "_\xE2\x82\xAC", "_caf", "e",
    "_Hello", "_E", "_\xC3\xA9", "_e", "_the", "_there",
};

std::vector<TokenId> words(const Vocab& v, const Texts& pieces) {
  Texts with_marker;
  for (const std::string& p : pieces) {
    std::string t;
    for (const char c : p) t += c == '_' ? kSp : std::string(1, c);
    with_marker.push_back(t);
  }
  return ids_of(v, with_marker);
}

}  // namespace

TEST_CASE("wpm: words, punctuation and [CLS] ... [SEP]", "[text][wpm][tokenizer]") {
  const Vocab v = wpm_vocab(kPieces);
  const auto tok = Tokenizer::create(v);
  const auto want = words(v, {"_hello", "_,", "_world", "_!"});
  const auto got = tok->encode("Hello, WORLD!", kPlain);
  INFO(Catch::Detail::stringify(texts_of(v, got)));
  CHECK(got == want);
  std::vector<TokenId> special = {101};
  special.insert(special.end(), want.begin(), want.end());
  special.push_back(102);
  CHECK(tok->encode("Hello, WORLD!") == special);
  CHECK(tok->encode("", {true, false}) == std::vector<TokenId>{101, 102});
  CHECK(tok->encode("", kPlain).empty());
  CHECK(tok->encode(" \t\n ", kPlain).empty());
  // ASCII symbols are words of their own; "'" is punctuation.
  CHECK(tok->encode("a+b", kPlain) == words(v, {"_a", "_+", "_b"}));
  CHECK(tok->encode("there's", kPlain) == words(v, {"_there", "_'", "_s"}));
}

TEST_CASE("wpm: greedy longest match, whole word to [UNK]", "[text][wpm][tokenizer]") {
  const Vocab v = wpm_vocab(kPieces);
  const auto tok = Tokenizer::create(v);
  CHECK(tok->encode("unaffable", kPlain) == words(v, {"_un", "aff", "able"}));
  CHECK(tok->encode("ab", kPlain) == words(v, {"_a", "b"}));
  CHECK(tok->encode("the there", kPlain) == words(v, {"_the", "_there"}));
  // One position without a match makes the whole word [UNK], once.
  CHECK(tok->encode("unaffablez", kPlain) == std::vector<TokenId>{100});
  CHECK(tok->encode("hello zz world", kPlain) ==
        std::vector<TokenId>{words(v, {"_hello"})[0], 100, words(v, {"_world"})[0]});
  // A continuation alone is no word start.
  CHECK(tok->encode("able", kPlain) == std::vector<TokenId>{100});
  const Vocab longer = wpm_vocab({"_un", "_unaff", "aff", "able"});
  CHECK(Tokenizer::create(longer)->encode("unaffable", kPlain) == words(longer, {"_unaff", "able"}));
}

TEST_CASE("wpm: CJK ideographs split, other scripts and symbols do not", "[text][wpm][tokenizer]") {
  const Vocab v = wpm_vocab(kPieces);
  const auto tok = Tokenizer::create(v);
  // 日本: two ideographs, two words.
  CHECK(tok->encode("\xE6\x97\xA5\xE6\x9C\xAC", kPlain) == words(v, {"_\xE6\x97\xA5", "_\xE6\x9C\xAC"}));
  // の (kana) and € (a symbol above ASCII) stay inside their words.
  CHECK(tok->encode("\xE3\x81\xAE", kPlain) == words(v, {"_\xE3\x81\xAE"}));
  CHECK(tok->encode("\xE2\x82\xAC", kPlain) == words(v, {"_\xE2\x82\xAC"}));
  CHECK(tok->encode("a\xE2\x82\xAC", kPlain) == std::vector<TokenId>{100});
  // 日a: the ideograph ends the word before it and starts none after.
  CHECK(tok->encode("a\xE6\x97\xA5" "b", kPlain) == words(v, {"_a", "_\xE6\x97\xA5", "_b"}));
}

TEST_CASE("wpm: the normalizer drops controls, strips accents and lowercases", "[text][wpm][tokenizer]") {
  const Vocab v = wpm_vocab(kPieces);
  const auto tok = Tokenizer::create(v);
  const auto hello = words(v, {"_hello"});
  // NUL, other controls, format characters (ZWJ, BOM) and U+FFFD vanish;
  // invalid UTF-8 becomes U+FFFD and vanishes too.
  CHECK(tok->encode(std::string("he\0l\x01l\x7Fo", 8), kPlain) == hello);
  CHECK(tok->encode("he\xE2\x80\x8Dl\xEF\xBB\xBFlo\xEF\xBF\xBD", kPlain) == hello);
  CHECK(tok->encode("hel\xFFlo", kPlain) == hello);
  // Whitespace of every kind splits: NBSP, ideographic space, U+2028.
  CHECK(tok->encode("hello\xC2\xA0world\xE3\x80\x80hello\xE2\x80\xA8", kPlain) ==
        words(v, {"_hello", "_world", "_hello"}));
  // Éclair, e + combining acute, a lone combining mark, İ.
  CHECK(tok->encode("\xC3\x89" "CLAIR", kPlain) == words(v, {"_eclair"}));
  CHECK(tok->encode("e\xCC\x81" "clair", kPlain) == words(v, {"_eclair"}));
  CHECK(tok->encode("\xCC\x81", kPlain).empty());
  CHECK(tok->encode("\xC4\xB0", kPlain) == words(v, {"_i"}));
  CHECK(tok->encode("Caf\xC3\xA9", kPlain) == words(v, {"_caf", "e"}));

  SECTION("no lowercase, no accent stripping") {
    const Vocab cased = wpm_vocab(kPieces, false, false);
    const auto t = Tokenizer::create(cased);
    CHECK(t->encode("Hello hello", kPlain) == words(cased, {"_Hello", "_hello"}));
    CHECK(t->encode("\xC3\xA9", kPlain) == words(cased, {"_\xC3\xA9"}));
    CHECK(t->encode("e\xCC\x81", kPlain) == std::vector<TokenId>{100});  // the mark stays in the word
  }
  SECTION("accents stripped, case kept") {
    const Vocab cased = wpm_vocab(kPieces, false, true);
    CHECK(Tokenizer::create(cased)->encode("\xC3\x89", kPlain) == words(cased, {"_E"}));
  }
}

TEST_CASE("wpm: special token texts with parse_special", "[text][wpm][tokenizer]") {
  const Vocab v = wpm_vocab(kPieces);
  const auto tok = Tokenizer::create(v);
  const auto hi = words(v, {"_hi"})[0];
  CHECK(tok->encode("[CLS]hi[SEP]", {false, true}) == std::vector<TokenId>{101, hi, 102});
  CHECK(tok->encode("[MASK] hi", {true, true}) == std::vector<TokenId>{101, 103, hi, 102});
  CHECK(tok->encode("[CLS]", kPlain) == words(v, {"_[", "_cls", "_]"}));
}

TEST_CASE("wpm: pieces and decoding keep the word-start spaces", "[text][wpm][tokenizer]") {
  const Vocab v = wpm_vocab(kPieces);
  const auto tok = Tokenizer::create(v);
  const auto ids = tok->encode("Hello, unaffable world");
  CHECK(tok->token_to_piece(words(v, {"_hello"})[0]) == " hello");
  CHECK(tok->token_to_piece(words(v, {"able"})[0]) == "able");
  CHECK(tok->token_to_piece(101).empty());
  CHECK(tok->token_to_piece(101, true) == "[CLS]");
  CHECK(tok->token_to_piece(100).empty());  // [UNK] is a control token here
  // As llama_detokenize (no space prefix to strip, and no clean-up of " ,").
  CHECK(tok->decode(ids) == " hello , unaffable world");
  CHECK(tok->decode(ids, true) == "[CLS] hello , unaffable world[SEP]");
}

TEST_CASE("wpm: GGUF keys as llama.cpp reads them", "[text][wpm][vocab]") {
  CHECK(tokenizer_model_name(TokenizerKind::Wpm) == "bert");
  const auto open = [](const GgufWriter& w, const std::string& name) {
    const auto path = tc::test::scratch_dir("tokenizer_wpm_" + name) / "vocab.gguf";
    w.write(path);
    return GgufFile::open(path);
  };
  Vocab written = wpm_vocab(kPieces);
  SECTION("defaults") {
    GgufWriter w;
    w.set("tokenizer.ggml.model", Value(std::string("bert")));
    w.set("tokenizer.ggml.tokens", Value::string_array(written.tokens));
    const Vocab v = read_vocab(open(w, "defaults"));
    CHECK(v.kind == TokenizerKind::Wpm);
    CHECK(v.bos_id == 101);
    CHECK(v.unk_id == 100);
    CHECK(v.sep_id == 102);
    CHECK(v.pad_id == 0);
    CHECK(v.mask_id == 103);
    CHECK(v.eos_id == -1);
    CHECK(v.add_bos);
    CHECK(v.add_sep);
    CHECK_FALSE(v.add_eos);
    CHECK_FALSE(v.add_space_prefix);
    CHECK_FALSE(v.normalizer_lowercase);
    CHECK_FALSE(v.normalizer_strip_accents);
  }
  SECTION("strip_accents defaults to lowercase") {
    GgufWriter w;
    w.set("tokenizer.ggml.model", Value(std::string("bert")));
    w.set("tokenizer.ggml.tokens", Value::string_array(written.tokens));
    w.set("tokenizer.ggml.normalizer.lowercase", Value(true));
    const Vocab v = read_vocab(open(w, "lowercase"));
    CHECK(v.normalizer_lowercase);
    CHECK(v.normalizer_strip_accents);
    w.set("tokenizer.ggml.normalizer.strip_accents", Value(false));
    const Vocab v2 = read_vocab(open(w, "lowercase_no_strip"));
    CHECK(v2.normalizer_lowercase);
    CHECK_FALSE(v2.normalizer_strip_accents);
  }
  SECTION("write_vocab round trip") {
    written.sep_id = 3;
    written.mask_id = 4;
    written.add_sep = false;
    written.normalizer_strip_accents = false;
    GgufWriter w;
    write_vocab(written, w);
    const GgufFile f = open(w, "round_trip");
    CHECK(f.get_string("tokenizer.ggml.model") == "bert");
    CHECK_FALSE(f.has("tokenizer.ggml.merges"));  // as converted BERT files
    CHECK_FALSE(f.has("tokenizer.ggml.scores"));
    const Vocab v = read_vocab(f);
    CHECK(v.kind == TokenizerKind::Wpm);
    CHECK(v.tokens == written.tokens);
    CHECK(v.types == written.types);
    CHECK(v.sep_id == 3);
    CHECK(v.mask_id == 4);
    CHECK_FALSE(v.add_sep);
    CHECK(v.normalizer_lowercase);
    CHECK_FALSE(v.normalizer_strip_accents);
    // llama.cpp still ends with the separator id it read.
    CHECK(Tokenizer::create(v)->encode("hi").back() == 3);
  }
}
