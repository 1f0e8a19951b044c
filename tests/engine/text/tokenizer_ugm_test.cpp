// Unigram (`tokenizer.ggml.model` "t5") on hand-built vocabs, as llama.cpp's
// llm_tokenizer_ugm_session runs it: the highest summed score wins (ties to
// the first found), <unk> for characters no token covers (runs merged),
// user-defined tokens scored 0, unused tokens as candidates; the normalizer
// (space prefix, extra whitespace, U+2581, a hand-assembled precompiled
// charsmap, the user-defined prefix quirk, invalid UTF-8); pieces and
// decoding; the GGUF keys with llama.cpp's defaults.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/charsmap.h"
#include "engine/text/tokenizer.h"
#include "engine/text/ugm_normalizer.h"
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

struct Piece {
  std::string text;  // "_" stands for U+2581
  float score;
  TokenType type = TokenType::Normal;
};

std::string marked(const std::string& s) {
  std::string t;
  for (const char c : s) t += c == '_' ? kSp : std::string(1, c);
  return t;
}

// T5's head: <pad> 0, </s> 1 (control), <unk> 2 (unknown), then `pieces`;
// EOS added, no BOS, space prefix on, no extra-whitespace removal.
Vocab ugm_vocab(const std::vector<Piece>& pieces) {
  Vocab v;
  v.kind = TokenizerKind::Ugm;
  v.pad_id = 0;
  v.eos_id = 1;
  v.unk_id = 2;
  v.bos_id = -1;
  v.add_bos = false;
  v.add_eos = true;
  v.add_space_prefix = true;
  const auto add = [&](std::string text, float score, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<pad>", 0.0f, TokenType::Control);
  add("</s>", 0.0f, TokenType::Control);
  add("<unk>", 0.0f, TokenType::Unknown);
  for (const Piece& p : pieces) add(marked(p.text), p.score, p.type);
  return v;
}

std::vector<TokenId> pieces_of(const Vocab& v, const std::vector<std::string>& texts) {
  std::vector<std::string> m;
  for (const std::string& t : texts) m.push_back(marked(t));
  return ids_of(v, m);
}

// A precompiled charsmap assembled by hand, unit by unit, as llama.cpp reads
// it: "A" -> "a", "AB" -> "x y", "C" -> "" (deleted). The root's children
// are at 256 ^ c, "A"'s at 512 ^ c (its value unit at 512), "AB"'s value
// unit at 768 and "C"'s at 1024; 1280 units, so every walk stays inside.
std::string tiny_charsmap() {
  std::vector<uint32_t> units(1280, 0);
  const auto node = [](uint32_t pos, uint32_t next, uint8_t label, bool has_value) {
    return ((pos ^ next) << 10) | (has_value ? 1u << 8 : 0u) | label;
  };
  units[0] = 256u << 10;                            // root: offset 256
  units[256 ^ 'A'] = node(256 ^ 'A', 512, 'A', true);
  units[512] = 0x80000000u | 0;                     // "a"
  units[512 ^ 'B'] = node(512 ^ 'B', 768, 'B', true);
  units[768] = 0x80000000u | 2;                     // "x y"
  units[256 ^ 'C'] = node(256 ^ 'C', 1024, 'C', true);
  units[1024] = 0x80000000u | 6;                    // ""
  const std::string strings("a\0x y\0\0", 7);
  std::string bytes;
  const auto put32 = [&](uint32_t x) {
    for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>((x >> (8 * k)) & 0xFF));
  };
  put32(static_cast<uint32_t>(units.size() * 4));
  for (const uint32_t u : units) put32(u);
  return bytes + strings;
}

std::string normalized(const Vocab& v, std::string_view text) {
  return UgmNormalizer(v).normalize(text);
}

}  // namespace

TEST_CASE("ugm: the segmentation with the highest summed score wins", "[text][ugm][tokenizer]") {
  // "_hello": -5; "_hel" + "lo": -6; "_he" + "llo": -4.5 (best).
  const Vocab v = ugm_vocab({{"_", -6}, {"_hello", -5}, {"_hel", -3}, {"lo", -3}, {"_he", -2}, {"llo", -2.5},
                             {"h", -4}, {"e", -4}, {"l", -4}, {"o", -4}, {"_ab", -2}, {"_a", -1}, {"b", -1}});
  const auto tok = Tokenizer::create(v);
  CHECK(tok->encode("hello", kPlain) == pieces_of(v, {"_he", "llo"}));
  CHECK(tok->encode("hello") == std::vector<TokenId>{pieces_of(v, {"_he", "llo"})[0], pieces_of(v, {"llo"})[0], 1});
  // A tie ("_ab" -2 against "_a" + "b" -2) keeps the first one found: the
  // longer token from the earlier start.
  CHECK(tok->encode("ab", kPlain) == pieces_of(v, {"_ab"}));
  CHECK(tok->encode("hello ab", kPlain) == pieces_of(v, {"_he", "llo", "_ab"}));
  CHECK(tok->decode(tok->encode("hello ab")) == "hello ab");
}

TEST_CASE("ugm: unknown characters become one <unk> per run", "[text][ugm][tokenizer]") {
  const Vocab v = ugm_vocab({{"_", -2}, {"a", -1}, {"b", -1}, {"xy", -1}});
  const auto tok = Tokenizer::create(v);
  // \xE6\x97\xA5\xE6\x9C\xAC is not in the vocab: one <unk> for both characters.
  CHECK(tok->encode("a\xE6\x97\xA5\xE6\x9C\xAC" "b", kPlain) ==
        std::vector<TokenId>{pieces_of(v, {"_"})[0], pieces_of(v, {"a"})[0], 2, pieces_of(v, {"b"})[0]});
  // "x" and "y" alone are not tokens: "xy" (-1) beats two <unk> (-11 each),
  // but a lone "x" is <unk>.
  CHECK(tok->encode("xy", kPlain) == pieces_of(v, {"_", "xy"}));
  CHECK(tok->encode("xa", kPlain) == std::vector<TokenId>{pieces_of(v, {"_"})[0], 2, pieces_of(v, {"a"})[0]});
  CHECK(tok->token_to_piece(2).empty());
  CHECK(tok->token_to_piece(2, true) == "<unk>");
  // The penalty is the lowest normal score (-2) minus 10: "_" + <unk> sums
  // to -14, against an unused token's -13.9 or -14.1 (unused tokens do not
  // count for the lowest score).
  const Vocab v2 = ugm_vocab({{"_", -2}, {"a", -1}, {"_q", -13.9f, TokenType::Unused}});
  CHECK(Tokenizer::create(v2)->encode("q", kPlain) == pieces_of(v2, {"_q"}));
  const Vocab v3 = ugm_vocab({{"_", -2}, {"a", -1}, {"_q", -14.1f, TokenType::Unused}});
  CHECK(Tokenizer::create(v3)->encode("q", kPlain) == std::vector<TokenId>{pieces_of(v3, {"_"})[0], 2});
}

TEST_CASE("ugm: user-defined tokens score 0 and unused tokens are candidates", "[text][ugm][tokenizer]") {
  const Vocab v = ugm_vocab({{"_", -2}, {"a", -1}, {"b", -1}, {"c", -1}, {"_abc", -20, TokenType::UserDefined},
                             {"zz", -0.5f, TokenType::Unused}, {"z", -3}, {"</b>", 0, TokenType::Control}});
  const auto tok = Tokenizer::create(v);
  // "_abc" is scored 0 in the search, whatever its score says.
  CHECK(tok->encode("abc", kPlain) == pieces_of(v, {"_abc"}));
  // Unused tokens are matched with their score; control tokens never are.
  CHECK(tok->encode("zz", kPlain) == pieces_of(v, {"_", "zz"}));
  CHECK(tok->token_to_piece(pieces_of(v, {"zz"})[0], true).empty());
  const auto ctrl = tok->encode("</b>", kPlain);
  CHECK(std::find(ctrl.begin(), ctrl.end(), pieces_of(v, {"</b>"})[0]) == ctrl.end());
  CHECK(tok->encode("</b>", {false, true}) == pieces_of(v, {"</b>"}));
  // A user-defined token's text in the input is split off before
  // normalization; the text after it gets its own space prefix.
  CHECK(tok->encode("a" + kSp + "abcb", kPlain) == pieces_of(v, {"_", "a", "_abc", "_", "b"}));
  CHECK(tok->token_to_piece(pieces_of(v, {"_abc"})[0]) == kSp + "abc");
}

TEST_CASE("ugm: spaces and the space prefix and extra whitespace", "[text][ugm][normalizer]") {
  Vocab v = ugm_vocab({{"a", -1}});
  CHECK(normalized(v, "a b") == kSp + "a" + kSp + "b");
  // The prefix goes before the first non-space byte only, after any leading spaces.
  CHECK(normalized(v, " a  b ") == kSp + kSp + "a" + kSp + kSp + "b" + kSp);
  CHECK(normalized(v, "  ") == kSp + kSp);
  CHECK(normalized(v, "\ta\n") == kSp + "\ta\n");  // only ' ' is a space
  v.add_space_prefix = false;
  CHECK(normalized(v, "a b") == "a" + kSp + "b");
  CHECK(normalized(v, " a") == kSp + "a");
  v.remove_extra_whitespaces = true;  // one U+2581 before each word, with or without the prefix
  CHECK(normalized(v, "  a   b  ") == kSp + "a" + kSp + "b");
  CHECK(normalized(v, "   ").empty());
  v.add_space_prefix = true;
  CHECK(normalized(v, "  a   b  ") == kSp + "a" + kSp + "b");
  // A literal U+2581 is no space: it is kept as text.
  CHECK(normalized(v, kSp + "a") == kSp + kSp + "a");
}

TEST_CASE("ugm: the precompiled charsmap replaces the longest key", "[text][ugm][normalizer]") {
  const PrecompiledCharsmap map(tiny_charsmap());
  CHECK_FALSE(map.empty());
  CHECK(map.longest_match("A").length == 1);
  CHECK(map.longest_match("A").replacement == "a");
  CHECK(map.longest_match("ABx").length == 2);
  CHECK(map.longest_match("ABx").replacement == "x y");
  CHECK(map.longest_match("AC").length == 1);
  CHECK(map.longest_match("C").replacement.empty());
  CHECK(map.longest_match("C").length == 1);
  CHECK(map.longest_match("B").length == 0);
  CHECK(map.longest_match("").length == 0);
  CHECK(PrecompiledCharsmap().longest_match("A").length == 0);

  Vocab v = ugm_vocab({{"a", -1}});
  v.precompiled_charsmap = tiny_charsmap();
  v.add_space_prefix = false;
  CHECK(normalized(v, "xAx") == "xax");
  CHECK(normalized(v, "AB") == "x" + kSp + "y");
  CHECK(normalized(v, "ABAC") == "x" + kSp + "ya");
  CHECK(normalized(v, "CCC").empty());
  v.remove_extra_whitespaces = true;
  CHECK(normalized(v, "AB") == kSp + "x" + kSp + "y");
  // A user-defined token's trie takes the bytes it walks, even when no token
  // ends there, before the charsmap sees them (llama.cpp's quirk).
  Vocab ud = ugm_vocab({{"a", -1}, {"AZ", 0, TokenType::UserDefined}});
  ud.precompiled_charsmap = tiny_charsmap();
  ud.add_space_prefix = false;
  CHECK(normalized(ud, "AB") == "AB");
  CHECK(normalized(ud, "BAB") == "BAB");
  CHECK(normalized(ud, "CA") == "A");
  const auto tok = Tokenizer::create(ud);
  CHECK(tok->encode("AZ", kPlain) == pieces_of(ud, {"AZ"}));
}

TEST_CASE("ugm: malformed charsmaps are refused", "[text][ugm][normalizer]") {
  const std::string good = tiny_charsmap();
  CHECK_THROWS_AS(PrecompiledCharsmap("ab"), std::invalid_argument);
  // The double array must leave at least one byte for the strings.
  CHECK_THROWS_AS(PrecompiledCharsmap(good.substr(0, 4 + 1280 * 4)), std::invalid_argument);
  // A walk that leaves the array: the root's children at 1280 ^ c.
  std::string out_of_bounds = good;
  out_of_bounds[4 + 1] = 0;
  out_of_bounds[4 + 2] = static_cast<char>((1280u << 10) >> 16);
  out_of_bounds[4 + 3] = static_cast<char>((1280u << 10) >> 24);
  CHECK_THROWS_WITH(PrecompiledCharsmap(out_of_bounds), Catch::Contains("outside"));
  // A replacement without its NUL: "C" made to share "a", then the strings
  // cut to "a\0x y".
  std::string unterminated = good;
  unterminated[4 + 1024 * 4] = 0;
  CHECK_THROWS_WITH(PrecompiledCharsmap(unterminated.substr(0, good.size() - 2)), Catch::Contains("NUL"));
  // A replacement offset past the strings.
  std::string past = good;
  past[4 + 1024 * 4] = 100;
  CHECK_THROWS_WITH(PrecompiledCharsmap(past), Catch::Contains("past"));
}

TEST_CASE("ugm: invalid UTF-8 is replaced as llama.cpp's normalizer does", "[text][ugm][normalizer]") {
  Vocab v = ugm_vocab({{"a", -1}, {"\xEF\xBF\xBD", -1}});
  v.add_space_prefix = false;
  CHECK(normalized(v, "a\xFF" "a") == "a\xEF\xBF\xBD" "a");
  CHECK(normalized(v, "\xE6\x97") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(normalized(v, "\x80") == "\xEF\xBF\xBD");
  // Its decoder checks only lead and continuation bits: overlongs and
  // surrogates pass.
  CHECK(normalized(v, "\xC0\x80") == "\xC0\x80");
  CHECK(normalized(v, "\xED\xA0\x80") == "\xED\xA0\x80");
  CHECK(ugm_sequence_length("\xF0\x9F\x98\x80", 0) == 4);
  CHECK(ugm_sequence_length("\xF0\x9F\x98", 0) == 0);
  CHECK(ugm_sequence_length("\xF8\x80\x80\x80", 0) == 0);
  const auto tok = Tokenizer::create(v);
  const auto fffd = pieces_of(v, {"\xEF\xBF\xBD"})[0];
  const auto a = pieces_of(v, {"a"})[0];
  CHECK(tok->encode("a\xFF" "a", kPlain) == std::vector<TokenId>{a, fffd, a});
  CHECK(tok->encode("\xC0\x80", kPlain) == std::vector<TokenId>{2});
}

TEST_CASE("ugm: pieces and decoding", "[text][ugm][tokenizer]") {
  Vocab v = ugm_vocab({{"_hello", -1}, {"_world", -1}, {"_", -2}, {"!", -1}, {"<0x41>", 0, TokenType::Byte}});
  const auto tok = Tokenizer::create(v);
  const auto ids = tok->encode("hello world!");
  CHECK(texts_of(v, ids) == std::vector<std::string>{kSp + "hello", kSp + "world", "!", "</s>"});
  CHECK(tok->token_to_piece(ids[0]) == " hello");
  CHECK(tok->token_to_piece(1).empty());
  CHECK(tok->token_to_piece(1, true) == "</s>");
  CHECK(tok->token_to_piece(pieces_of(v, {"<0x41>"})[0]) == "A");
  // The leading space the prefix added is dropped, as llama_detokenize does.
  CHECK(tok->decode(ids) == "hello world!");
  CHECK(tok->decode(ids, true) == "hello world!</s>");
  CHECK(tok->decode(ids, false, true) == " hello world!");
  // Byte tokens are never produced: no byte fallback.
  CHECK(tok->encode("A", kPlain) == std::vector<TokenId>{pieces_of(v, {"_"})[0], 2});
  v.add_space_prefix = false;
  CHECK(Tokenizer::create(v)->decode(ids) == " hello world!");
  // BOS when the vocab asks for it.
  v.tokens.push_back("<s>");
  v.scores.push_back(0);
  v.types.push_back(TokenType::Control);
  v.bos_id = v.n_vocab() - 1;
  v.add_bos = true;
  const auto with_bos = Tokenizer::create(v)->encode("hello");
  CHECK(with_bos.front() == v.bos_id);
  CHECK(with_bos.back() == 1);
}

TEST_CASE("ugm: GGUF keys as llama.cpp reads them", "[text][ugm][vocab]") {
  CHECK(tokenizer_model_name(TokenizerKind::Ugm) == "t5");
  const auto open = [](const GgufWriter& w, const std::string& name) {
    const auto path = tc::test::scratch_dir("tokenizer_ugm_" + name) / "vocab.gguf";
    w.write(path);
    return GgufFile::open(path);
  };
  Vocab written = ugm_vocab({{"_hello", -1}, {"_", -2}});
  const auto bytes_value = [](const std::string& bytes, tc::gguf::ValueType type) {
    Value::Array items;
    for (const char c : bytes) {
      if (type == tc::gguf::ValueType::INT8) {
        items.emplace_back(static_cast<int8_t>(c));
      } else if (type == tc::gguf::ValueType::UINT8) {
        items.emplace_back(static_cast<uint8_t>(c));
      } else {
        items.emplace_back(static_cast<int32_t>(static_cast<uint8_t>(c)));
      }
    }
    return Value::array(type, std::move(items));
  };
  GgufWriter w;
  w.set("tokenizer.ggml.model", Value(std::string("t5")));
  w.set("tokenizer.ggml.tokens", Value::string_array(written.tokens));
  SECTION("defaults") {
    const Vocab v = read_vocab(open(w, "defaults"));
    CHECK(v.kind == TokenizerKind::Ugm);
    CHECK(v.bos_id == -1);
    CHECK(v.eos_id == 1);
    CHECK(v.unk_id == 2);
    CHECK(v.pad_id == 0);
    CHECK_FALSE(v.add_bos);
    CHECK(v.add_eos);
    CHECK_FALSE(v.add_space_prefix);
    CHECK_FALSE(v.remove_extra_whitespaces);
    CHECK(v.precompiled_charsmap.empty());
  }
  SECTION("the charsmap as u8 or i8") {
    for (const auto type : {tc::gguf::ValueType::UINT8, tc::gguf::ValueType::INT8}) {
      w.set("tokenizer.ggml.precompiled_charsmap", bytes_value(tiny_charsmap(), type));
      CHECK(read_vocab(open(w, "charsmap")).precompiled_charsmap == tiny_charsmap());
    }
  }
  SECTION("a charsmap of another type or malformed is refused") {
    w.set("tokenizer.ggml.precompiled_charsmap", bytes_value(tiny_charsmap(), tc::gguf::ValueType::INT32));
    CHECK_THROWS_WITH(read_vocab(open(w, "charsmap_i32")), Catch::Contains("precompiled_charsmap"));
    w.set("tokenizer.ggml.precompiled_charsmap", bytes_value("", tc::gguf::ValueType::UINT8));
    CHECK_THROWS_WITH(read_vocab(open(w, "charsmap_empty")), Catch::Contains("4-byte header"));
    const std::string cut = tiny_charsmap().substr(0, tiny_charsmap().size() - 1);
    w.set("tokenizer.ggml.precompiled_charsmap", bytes_value(cut, tc::gguf::ValueType::UINT8));
    CHECK_THROWS_WITH(read_vocab(open(w, "charsmap_cut")), Catch::Contains("precompiled_charsmap"));
  }
  SECTION("write_vocab round trip") {
    written.precompiled_charsmap = tiny_charsmap();
    written.remove_extra_whitespaces = true;
    written.add_space_prefix = true;
    written.add_bos = false;
    GgufWriter out;
    write_vocab(written, out);
    const GgufFile f = open(out, "round_trip");
    CHECK(f.get_string("tokenizer.ggml.model") == "t5");
    CHECK(f.find("tokenizer.ggml.precompiled_charsmap")->array_type() == tc::gguf::ValueType::UINT8);
    const Vocab v = read_vocab(f);
    CHECK(v.kind == TokenizerKind::Ugm);
    CHECK(v.tokens == written.tokens);
    CHECK(v.scores == written.scores);
    CHECK(v.types == written.types);
    CHECK(v.precompiled_charsmap == written.precompiled_charsmap);
    CHECK(v.remove_extra_whitespaces);
    CHECK(v.add_space_prefix);
    CHECK(v.add_eos);
    // "_hello _x _y" (x and y are not tokens), then </s>.
    CHECK(Tokenizer::create(v)->encode("  hello  AB ") == std::vector<TokenId>{3, 4, 2, 4, 2, 1});
  }
}
