// Every pre-tokenizer against llama.cpp's own (libllama from npm
// @node-llama-cpp/linux-x64): for one `tokenizer.ggml.pre` name per
// pre-tokenizer type, a byte-level BPE vocab with a merge for every pair of
// the bytes the texts use (seeded random ranks) is written as a vocab-only
// GGUF and both tokenizers must give the same ids for thousands of random
// mixes of scripts, digits, punctuation, whitespace runs and apostrophes.
// With every byte pair mergeable, a word boundary placed differently most
// often shows as a different pairing, and a systematic one recurs over many
// texts. A second test loads every supported name with no
// tokenizer flags in the file and checks llama.cpp's per-name defaults (BOS,
// add_bos, ignore_merges). Skips with a warning without the library.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/pre_tokenizer.h"
#include "engine/text/tokenizer.h"
#include "engine/text/unicode.h"
#include "engine/text/vocab.h"
#include "tests/oracle/llama_tokenizer_oracle.h"
#include "tests/oracle/tokenizer_oracle_checks.h"
#include "tests/test_util.h"

namespace {

using tc::gguf::Value;
using tc::oracle::LlamaVocab;
using tc::text::TokenId;
using tc::text::Tokenizer;
using tc::text::Vocab;

using namespace std::string_literals;

// Random texts per pre-tokenizer: sized so the default run adds well under
// 30 s on two cores. The [.slow] sweep uses more, and longer, texts.
constexpr int kRandomTexts = 1000;
constexpr int kMaxFragments = 12;
constexpr int kSlowRandomTexts = 10000;
constexpr int kSlowMaxFragments = 40;
constexpr int kShownMismatches = 4;

// What the random texts are made of: the cases each regex family treats
// specially.
const std::vector<std::string>& fragments() {
  static const std::vector<std::string> f = {
      // ASCII words in every case mix
      "a", "Z", "the", "The", "THE", " the", "HTTPServer", "camelCase", "iPhone", "XMLHttpRequest", "ABCdef",
      "aBC", "McDonald", "x",
      // contractions and apostrophes
      "'s", "'S", "'re", "'RE", "'ll", "'Ll", "'ve", "'d", "'M", "'t", "'", "''", "\xE2\x80\x99", "don't",
      "I'M", "'x", "we'VE",
      // non-ASCII letters: cased, titlecase, modifier, ligature, fullwidth, Greek, Cyrillic
      "\xC3\xA9", "\xC3\x89", "\xC3\x9F", "\xC7\x85", "Stra\xC3\x9F" "e", "\xC3\x89" "COLE",
      "\xC3\x89" "cole", "\xEF\xAC\x81", "\xEF\xBC\xA1", "\xEF\xBD\x82", "\xCE\xA9\xCF\x89",
      "\xCE\xA3\xCE\xAF\xCF\x83\xCF\x85\xCF\x86\xCE\xBF\xCF\x82",
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82", "\xD0\x9F\xD0\xA0\xD0\x98", "\xCA\xB0", "\xC2\xAA",
      "\xE1\x8F\xA3", "\xE1\x83\x90", "\xD4\xB2", "\xE2\xB0\x80", "\xC9\x81",
      // combining and spacing marks
      "\xCC\x81", "e\xCC\x81", "\xE0\xA4\x83", "\xE2\x83\x9D", "a\xCC\x80\xCC\x81",
      // CJK, kana, Hangul, Bopomofo, CJK punctuation
      "\xE6\x97\xA5\xE6\x9C\xAC", "\xE4\xB8\xAD\xE6\x96\x87",
      "\xE3\x81\xB2\xE3\x82\x89\xE3\x81\x8C\xE3\x81\xAA", "\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A",
      "\xEF\xBD\xB6\xEF\xBE\x80", "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4", "\xE3\x84\xB1", "\xE3\x85\x8F",
      "\xE3\x84\x85\xE3\x84\x86", "\xE3\x80\x82", "\xEF\xBC\x8C", "\xE3\x80\x81", "\xE3\x80\x8C",
      "\xE3\x80\x8D", "\xEF\xBC\x81", "\xEF\xBC\x9F", "\xEF\xBC\x9A", "\xEF\xBC\x9B", "\xE2\x80\xA6",
      "\xE2\x80\x94", "\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE3\x80\x9C", "\xE3\x80\xBF",
      "\xEF\xB8\xB0", "\xE3\x90\x80", "\xF0\xA0\x80\x80", "\xEF\xA4\x80", "\xE8\xB1\x88", "\xE2\xBC\x80",
      "\xE3\x83\xBC", "\xEF\xAB\xBF",
      // Thai, Lao, Khmer, Myanmar, Cham, Javanese, Hangul Jamo
      "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA", "\xE0\xB8\x94\xE0\xB8\xB5", "\xE0\xB9\x80\xE0\xB8\xA1",
      "\xE0\xBA\xAA\xE0\xBA\xB0", "\xE1\x9E\x9F\xE1\x9E\xBD", "\xE1\x9E\x98\xE1\x9E\x84\xE1\x9F\x92",
      "\xE1\x80\x99\xE1\x80\x84\xE1\x80\xBA", "\xEA\xA9\xA0", "\xEA\xA7\xA0", "\xE1\x84\x80\xE1\x85\xA1",
      // Devanagari, Arabic and their separators
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87", "\xE0\xA5\xA4",
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7", "\xD8\x8C", "\xDB\x94",
      // digits and other numbers
      "0", "7", "12", "123", "1234", "12345", "1234567", "3.14", "1,000", "\xD9\xA3", "\xC2\xB2", "\xC2\xBD",
      "\xE2\x85\xAB", "\xEF\xBC\x91\xEF\xBC\x92", "\xE2\x91\xA0",
      // punctuation and symbols
      "!", "?", "...", ".", ",", "(", ")", "|", "$", "+", "<=>", "^", "~", "`", "``", "/", "//", "\\", "@",
      "#", "%", "&", "*", "-", "_", "=", "{", "}", "[", "]", "\"", "\xE2\x82\xAC", "\xC2\xA9",
      "\xE2\x86\x92", "\xE2\x9C\x93", "\xF0\x9F\x98\x80", "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "\xE2\x80\xBC",
      "\xC2\xBF", "\xC2\xAB", "\xC2\xB7", "\xE2\x80\xBB", "\xC2\xB4",
      // whitespace runs and line breaks
      " ", "  ", "   ", "    ", "     ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", "\x0B", "\x0C", " \n",
      " \n ", "\n/", "!\n/", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\x83", "\xE2\x80\xA8", "\xC2\x85",
      std::string(9, ' '), std::string(16, ' '), std::string(33, ' '), std::string(70, ' '),
      std::string(260, ' '), std::string(600, ' '), "\t \t",
      // Chameleon's sentinel and image texts
      "<sentinel:12>", "<sentinel:>", "<sentinel:5", "IMGIMGABZ", "IMGIMGABCDZ", "IMGIMGABCDEZ", "IMGIMG",
      "Z",
      // controls, format and private-use characters
      "\0"s, "\x01", "\x1F", "\x7F", "\xE2\x80\x8B", "\xE2\x80\x8D", "\xEF\xBB\xBF", "\xC2\xAD",
      "\xEE\x80\x80",
  };
  return f;
}

// Seeded concatenations of 0..max_fragments-1 fragments, plus fixed texts.
std::vector<std::string> random_texts(int n, int max_fragments, uint32_t seed) {
  std::vector<std::string> texts = {
      "Hello world, HTTPServer's camelCase API: x = 12345; y = 3.14!",
      "  leading\tand trailing  \n\n  ",
      "I'm sure we'LL see THEM'S 'quotes' and \"doubles\".",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x80\x82"
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xEC\x97\xAC\xEA\xB8\xB0.",
      "<sentinel:7>IMGIMGABCZ text\t\t    four  two",
      "e\xCC\x81" "cole \xC3\x89" "COLE Stra\xC3\x9F" "e \xCE\xA3\xCE\xAF\xCF\x83\xCF\x85\xCF\x86\xCE\xBF\xCF\x82",
  };
  std::mt19937 rng(seed);  // rng() % n: the same texts with every standard library
  const auto& frags = fragments();
  for (int i = 0; i < n; ++i) {
    std::string s;
    const int k = static_cast<int>(rng() % static_cast<uint32_t>(max_fragments));
    for (int j = 0; j < k; ++j) s += frags[rng() % frags.size()];
    texts.push_back(std::move(s));
  }
  return texts;
}

std::string byte_chars(std::string_view text) {
  std::string out;
  for (const char c : text) out += tc::text::byte_to_unicode_utf8(static_cast<uint8_t>(c));
  return out;
}

// A byte-level BPE vocab: the 256 byte tokens, one merge (and token) for
// every ordered pair of the bytes in `alphabet` in seeded random rank order,
// then whole words no merge reaches (only ignore_merges finds them).
Vocab pair_vocab(const std::string& pre, const std::set<uint8_t>& alphabet, uint32_t seed) {
  Vocab v;
  v.kind = tc::text::TokenizerKind::Bpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.emplace_back(tc::text::byte_to_unicode_utf8(static_cast<uint8_t>(b)));
  std::vector<std::pair<uint8_t, uint8_t>> pairs;
  for (const uint8_t a : alphabet) {
    for (const uint8_t b : alphabet) pairs.emplace_back(a, b);
  }
  std::mt19937 rng(seed);
  for (size_t i = pairs.size(); i > 1; --i) std::swap(pairs[i - 1], pairs[rng() % i]);
  for (const auto& [a, b] : pairs) {
    const std::string left(tc::text::byte_to_unicode_utf8(a));
    const std::string right(tc::text::byte_to_unicode_utf8(b));
    v.merges.push_back(left + " " + right);
    v.tokens.push_back(left + right);
  }
  for (const char* word : {" the", "The", "HTTPServer", " HTTPServer", "camelCase", "'s", "   ", "\n\n",
                           "\xE6\x97\xA5\xE6\x9C\xAC", "1234", " world"}) {
    const std::string t = byte_chars(word);
    if (std::find(v.tokens.begin(), v.tokens.end(), t) == v.tokens.end()) v.tokens.push_back(t);
  }
  v.types.assign(v.tokens.size(), tc::text::TokenType::Normal);
  v.bos_id = 11;
  v.eos_id = 11;
  v.unk_id = -1;
  v.add_bos = false;
  v.add_space_prefix = false;
  return v;
}

std::set<uint8_t> alphabet_of(const std::vector<std::string>& texts) {
  std::set<uint8_t> bytes;
  for (const auto& t : texts) bytes.insert(t.begin(), t.end());
  return bytes;
}

std::string show_ids(const std::vector<TokenId>& ids) {
  std::ostringstream out;
  for (const TokenId id : ids) out << " " << id;
  return out.str();
}

// Writes `vocab` under `dir`, loads it in both, and compares ids for every
// text (no specials added or parsed: the vocab has none).
void compare_ids(const Vocab& vocab, const std::vector<std::string>& texts, const std::filesystem::path& dir) {
  INFO("pre-tokenizer \"" << vocab.pre << "\"");
  const auto path = dir / (vocab.pre + ".gguf");
  tc::oracle::write_vocab_only_gguf(vocab, path);
  const LlamaVocab ref(path);
  REQUIRE(ref.n_tokens() == vocab.n_vocab());
  REQUIRE(ref.type() == 2);
  const auto ours = Tokenizer::create(tc::text::read_vocab(tc::gguf::GgufFile::open(path)));
  const auto pre = tc::text::pre_tokenizer_from_name(vocab.pre);
  REQUIRE(pre.has_value());

  size_t n_mismatch = 0;
  std::ostringstream report;
  for (const auto& text : texts) {
    const auto want = ref.tokenize(text, false, false);
    const auto got = ours->encode(text, {false, false});
    if (got == want || ++n_mismatch > kShownMismatches) continue;
    report << "\n  text \"" << tc::oracle::escape_bytes(text) << "\"\n    our words:";
    for (const auto w : tc::text::pre_tokenize(*pre, text)) report << " \"" << tc::oracle::escape_bytes(w, 40) << "\"";
    report << "\n    llama.cpp:" << show_ids(want) << "\n    ours:     " << show_ids(got);
  }
  INFO(n_mismatch << " of " << texts.size() << " encodings differ from llama.cpp:" << report.str());
  CHECK(n_mismatch == 0);
}

void compare_names(const std::vector<std::string>& names, int n_random, int max_fragments, uint32_t seed) {
  const auto texts = random_texts(n_random, max_fragments, seed);
  for (const auto& t : texts) REQUIRE(tc::text::utf8_is_valid(t));
  const auto alphabet = alphabet_of(texts);
  const auto dir = tc::test::scratch_dir("pre_tokenizer_oracle_" + std::to_string(seed));
  for (const auto& name : names) {
    compare_ids(pair_vocab(name, alphabet, seed + 1), texts, dir);
  }
}

// One name per pre-tokenizer type, by regex family.
const std::vector<std::string> kGpt2Family = {"gpt-2", "default", "falcon", "starcoder", "chameleon"};
const std::vector<std::string> kLlama3Family = {"llama3", "dbrx", "chatglm-bpe", "jais-2", "qwen2",
                                                "qwen35", "seed-coder", "minicpm5", "exaone-moe", "laguna"};
const std::vector<std::string> kCaseFamily = {"tekken", "gpt-4o", "granite-embed-multi-97m", "tiny_aya",
                                              "youtu", "kimi-k2"};
const std::vector<std::string> kScriptFamily = {"deepseek-llm", "deepseek-coder", "deepseek-v3", "afmoe",
                                                "bloom", "viking", "superbpe"};

// A vocab-only GGUF that names the pre-tokenizer and nothing else about the
// tokenizer's behaviour (no BOS/EOS ids, no add_bos), so both sides fall back
// to their per-name defaults.
void write_without_flags(const Vocab& vocab, const std::filesystem::path& path) {
  tc::gguf::GgufWriter w;
  tc::oracle::set_vocab_only_model_keys(w);
  w.set("tokenizer.ggml.model", Value(std::string("gpt2")));
  w.set("tokenizer.ggml.pre", Value(vocab.pre));
  w.set("tokenizer.ggml.tokens", Value::string_array(vocab.tokens));
  w.set("tokenizer.ggml.merges", Value::string_array(vocab.merges));
  w.write(path);
}

// The `tokenizer.ggml.pre` names in the comma-separated quoted list.
std::vector<std::string> supported_names() {
  std::vector<std::string> names;
  const std::string_view list = tc::text::supported_pre_tokenizer_names();
  for (size_t pos = 0; (pos = list.find('"', pos)) != std::string_view::npos;) {
    const size_t end = list.find('"', pos + 1);
    names.emplace_back(list.substr(pos + 1, end - pos - 1));
    pos = end + 1;
  }
  return names;
}

}  // namespace

TEST_CASE("gpt2-family pre-tokenizers split as llama.cpp does", "[oracle][text][llama][pre_tokenizer]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_names(kGpt2Family, kRandomTexts, kMaxFragments, 101);
}

TEST_CASE("llama3-family pre-tokenizers split as llama.cpp does", "[oracle][text][llama][pre_tokenizer]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_names(kLlama3Family, kRandomTexts, kMaxFragments, 202);
}

TEST_CASE("case-splitting pre-tokenizers split as llama.cpp does", "[oracle][text][llama][pre_tokenizer]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_names(kCaseFamily, kRandomTexts, kMaxFragments, 303);
}

TEST_CASE("script-range pre-tokenizers split as llama.cpp does", "[oracle][text][llama][pre_tokenizer]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_names(kScriptFamily, kRandomTexts, kMaxFragments, 404);
}

TEST_CASE("every pre-tokenizer name loads with llama.cpp's defaults", "[oracle][text][llama][pre_tokenizer]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  const std::vector<std::string> texts = {
      "The HTTPServer's camelCase: the world\n\n   1234 \xE6\x97\xA5\xE6\x9C\xAC!",
      " the HTTPServer camelCase'S  world 12345678",
      "",
  };
  const auto alphabet = alphabet_of(texts);
  const auto dir = tc::test::scratch_dir("pre_tokenizer_oracle_names");
  const auto names = supported_names();
  CHECK(names.size() >= 80);
  for (const auto& name : names) {
    if (name == "gpt2") continue;  // ours only: llama.cpp spells it "gpt-2"
    INFO("pre-tokenizer \"" << name << "\"");
    const Vocab vocab = pair_vocab(name, alphabet, 7);
    const auto path = dir / (name + ".gguf");
    write_without_flags(vocab, path);
    const LlamaVocab ref(path);
    const Vocab read = tc::text::read_vocab(tc::gguf::GgufFile::open(path));
    CHECK(ref.bos() == read.bos_id);
    CHECK(ref.eos() == read.eos_id);
    const auto ours = Tokenizer::create(read);
    for (const auto& text : texts) {
      INFO("text \"" << tc::oracle::escape_bytes(text) << "\"");
      for (const bool add_special : {false, true}) {
        CHECK(ours->encode(text, {add_special, false}) == ref.tokenize(text, add_special, false));
      }
    }
  }
}

TEST_CASE("pre-tokenizer names llama.cpp knows whose raw-UTF-8 BPE is not Gemma 4's stay refused",
          "[oracle][text][llama][pre_tokenizer]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  const auto dir = tc::test::scratch_dir("pre_tokenizer_oracle_refused");
  for (const std::string name : {"sarvam-moe", "whitespace"}) {
    INFO("pre-tokenizer \"" << name << "\"");
    const auto path = dir / (name + ".gguf");
    write_without_flags(pair_vocab(name, {'a', 'b'}, 1), path);
    CHECK_NOTHROW(LlamaVocab(path));  // a name llama.cpp accepts...
    CHECK_FALSE(tc::text::pre_tokenizer_from_name(name).has_value());
    CHECK_THROWS_WITH(tc::text::read_vocab(tc::gguf::GgufFile::open(path)), Catch::Contains(name));
  }
}

TEST_CASE("pre-tokenizers match llama.cpp on a large random sweep", "[oracle][text][llama][pre_tokenizer][.slow]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  std::vector<std::string> all;
  for (const auto* family : {&kGpt2Family, &kLlama3Family, &kCaseFamily, &kScriptFamily}) {
    all.insert(all.end(), family->begin(), family->end());
  }
  compare_names(all, kSlowRandomTexts, kSlowMaxFragments, 20260601);
}
