// Our tokenizers against llama.cpp's own (libllama, loaded from npm
// @node-llama-cpp/linux-x64): vocabs trained on the shipped corpus (SPM, and
// BPE with each supported pre-tokenizer, at 4096 and 32000 tokens) are
// written as vocab-only GGUF files, loaded by both, and must give the same
// token ids for corpus lines, a long slice and seeded random mixes of tricky
// fragments, and the same piece for every token id. Skips with a warning
// without the library.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/unicode.h"
#include "engine/text/vocab.h"
#include "tests/oracle/llama_tokenizer_oracle.h"
#include "tests/test_util.h"

namespace {

using tc::oracle::LlamaVocab;
using tc::text::EncodeOptions;
using tc::text::TokenId;
using tc::text::Tokenizer;
using tc::text::TokenizerKind;
using tc::text::Vocab;

using namespace std::string_literals;

// Random texts in the default run, per vocab: sized so that the four test
// cases stay under ~30 s together on one core. The [.slow] sweep uses more.
constexpr int kDefaultRandomTexts = 3000;
constexpr int kSlowRandomTexts = 40000;
constexpr size_t kSliceBytes = 20000;
constexpr int kShownMismatches = 5;

const std::string& corpus() {
  static const std::string text =
      tc::test::read_file(tc::test::source_dir() / "profiler" / "data" / "tokenizer_corpus.txt");
  return text;
}

// Pieces that stress the pre-tokenizers and the special-token partition. All
// valid UTF-8: invalid input is a documented difference (we replace it by
// U+FFFD, llama.cpp passes the bytes on), so it is not compared here.
const std::vector<std::string>& fragments() {
  static const std::vector<std::string> f = {
      // words and spaces
      "a", "x", " ", "  ", "   ", "the", "The", " the", "THE", "hacker", "Hello", "world",
      // Latin with diacritics, precomposed and combining
      "\xC3\xA9", "\xC3\x89", "\xC3\x9F", "e\xCC\x81", "\xCC\x81", "\xCC\xA3\xCC\x87",
      // CJK, Hangul, Cyrillic, Arabic, Devanagari, Thai, astral planes
      "\xE6\x97\xA5", "\xE6\x9C\xAC\xE8\xAA\x9E", "\xE3\x81\xAE", "\xED\x95\x9C\xEA\xB5\xAD",
      "\xD0\x9F\xD1\x80\xD0\xB8", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
      "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA", "\xF0\xA0\x80\x80", "\xF0\x9D\x94\x98",
      // emoji: plain, skin tone, flag, keycap, ZWJ alone and in a sequence
      "\xF0\x9F\xA6\x8A", "\xF0\x9F\x98\x80", "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
      "\xF0\x9F\x87\xA9\xF0\x9F\x87\xAA", "1\xEF\xB8\x8F\xE2\x83\xA3", "\xE2\x80\x8D",
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9",
      // whitespace and line breaks: NBSP, ideographic space, U+2028, BOM, thin space
      "\n", "\n\n", "\r\n", "\r", "\t", "\v", "\f", " \n ", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\xA8",
      "\xEF\xBB\xBF", "\xE2\x80\x89",
      // control characters, NUL included
      "\0"s, "\x01\x7F",
      // special token texts, whole and partial
      "<s>", "</s>", "<unk>", "<|begin_of_text|>", "<|end_of_text|>", "<unused_0>", "<0x41>", "<s", "s>",
      "<",
      // digits: ASCII runs, decimal, fullwidth, superscript, Arabic-Indic
      "0", "1", "123", "45678", "3.14", "1,000", "\xEF\xBC\x91\xEF\xBC\x92", "\xC2\xB2", "\xD9\xA3",
      // contractions and quotes
      "'s", "'S", "'LL", "'ve", "'re", "'d", "'m", "'t", "don't", "I'M", "'", "\"",
      // punctuation and symbols
      "!", "?!", "...", "$", "--", "```", "(", "){", "_", "#", "@user", "a.b", "\xE2\x80\x94",
      "\xE2\x80\x9C", "\xEF\xBF\xBD",
      // the vocabs' own space markers as plain text: U+2581, and byte-level Ġ and Ċ
      "\xE2\x96\x81", "\xE2\x96\x81\xE2\x96\x81", "\xC4\xA0", "\xC4\x8A"};
  return f;
}

// The texts compared: every corpus line, a kSliceBytes slice of the corpus
// cut at a character boundary, then `n_random` seeded concatenations of
// 0..max_fragments-1 fragments.
std::vector<std::string> oracle_texts(int n_random, int max_fragments, uint32_t seed) {
  std::vector<std::string> texts;
  std::istringstream lines(corpus());
  for (std::string line; std::getline(lines, line);) texts.push_back(line);
  size_t cut = std::min(kSliceBytes, corpus().size());
  while (cut > 0 && cut < corpus().size() && (static_cast<uint8_t>(corpus()[cut]) & 0xC0) == 0x80) --cut;
  texts.push_back(corpus().substr(0, cut));
  std::mt19937 rng(seed);  // rng() % n: the same texts with every standard library
  const auto& frags = fragments();
  for (int i = 0; i < n_random; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % static_cast<uint32_t>(max_fragments));
    for (int j = 0; j < n; ++j) s += frags[rng() % frags.size()];
    texts.push_back(std::move(s));
  }
  return texts;
}

// Bytes as a C string literal body: printable ASCII as is, the rest escaped.
std::string escape(std::string_view s, size_t max_bytes = 160) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c >= 0x20 && c < 0x7F) out += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (s.size() > max_bytes) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

// ids[from, to) as `id"piece"`, around the first difference of two lists.
std::string show_ids(const Vocab& vocab, const std::vector<TokenId>& ids, size_t from, size_t to) {
  std::ostringstream out;
  out << "[" << ids.size() << " ids]";
  if (from > 0) out << " ...";
  for (size_t i = from; i < std::min(to, ids.size()); ++i) {
    const TokenId id = ids[i];
    out << " " << id;
    if (id >= 0 && id < vocab.n_vocab()) out << "\"" << escape(vocab.tokens[id], 40) << "\"";
  }
  if (to < ids.size()) out << " ...";
  return out.str();
}

const char* kind_name(TokenizerKind kind) { return kind == TokenizerKind::Spm ? "spm" : "bpe"; }

// Token ids from both in three modes (specials added or not, special texts
// parsed); CHECKs that none differ and shows the first few that do.
void check_encodings(const LlamaVocab& ref, const Tokenizer& ours, const std::vector<std::string>& texts) {
  const EncodeOptions modes[] = {{true, false}, {false, false}, {true, true}};
  const Vocab& vocab = ours.vocab();
  size_t n_mismatch = 0;
  std::ostringstream report;
  for (const auto& text : texts) {
    for (const auto& mode : modes) {
      const auto want = ref.tokenize(text, mode.add_special, mode.parse_special);
      const auto got = ours.encode(text, mode);
      if (got == want || ++n_mismatch > kShownMismatches) continue;
      const size_t at = static_cast<size_t>(
          std::mismatch(want.begin(), want.end(), got.begin(), got.end()).first - want.begin());
      const size_t from = at > 4 ? at - 4 : 0;
      report << "\n  text \"" << escape(text) << "\" add_special=" << mode.add_special
             << " parse_special=" << mode.parse_special << ", first difference at id index " << at
             << "\n    llama.cpp: " << show_ids(vocab, want, from, from + 24)
             << "\n    ours:      " << show_ids(vocab, got, from, from + 24);
    }
  }
  INFO(n_mismatch << " of " << texts.size() * 3 << " encodings differ from llama.cpp:" << report.str());
  CHECK(n_mismatch == 0);
}

// The piece of every token id from both, special rendering off and on.
void check_pieces(const LlamaVocab& ref, const Tokenizer& ours) {
  const Vocab& vocab = ours.vocab();
  size_t n_mismatch = 0;
  std::ostringstream report;
  for (TokenId id = 0; id < vocab.n_vocab(); ++id) {
    for (const bool special : {false, true}) {
      const std::string want = ref.token_to_piece(id, special);
      const std::string got = ours.token_to_piece(id, special);
      if (got == want || ++n_mismatch > kShownMismatches) continue;
      report << "\n  id " << id << " \"" << escape(vocab.tokens[id]) << "\" special=" << special
             << ": llama.cpp \"" << escape(want) << "\", ours \"" << escape(got) << "\"";
    }
  }
  INFO(n_mismatch << " of " << vocab.n_vocab() * 2 << " pieces differ from llama.cpp:" << report.str());
  CHECK(n_mismatch == 0);
}

void require_valid_utf8(const std::vector<std::string>& texts) {
  const auto invalid = std::find_if(texts.begin(), texts.end(),
                                    [](const std::string& t) { return !tc::text::utf8_is_valid(t); });
  INFO("text " << (invalid - texts.begin()) << " is not valid UTF-8");
  REQUIRE(invalid == texts.end());
}

// Trains one vocab of `kind` and `size`, and compares our tokenizer with
// llama.cpp's on it for each pre-tokenizer (BPE) on `texts`.
void compare_with_llama(TokenizerKind kind, int32_t size, const std::vector<std::string>& texts) {
  require_valid_utf8(texts);
  const Vocab base = tc::text::train_vocab(corpus(), {kind, size});
  REQUIRE(base.n_vocab() == size);
  const std::vector<std::string> pres = kind == TokenizerKind::Spm
                                            ? std::vector<std::string>{""}
                                            : std::vector<std::string>{"llama3", "gpt-2", "qwen2", "default"};
  const auto dir = tc::test::scratch_dir("tokenizer_oracle_"s + kind_name(kind) + "_" + std::to_string(size));

  for (const auto& pre : pres) {
    Vocab vocab = base;
    if (kind == TokenizerKind::Bpe) vocab.pre = pre;
    INFO("vocab " << kind_name(kind) << " " << size << (pre.empty() ? "" : " pre=" + pre));
    const auto path = dir / ((pre.empty() ? "spm"s : pre) + ".gguf");
    tc::oracle::write_vocab_only_gguf(vocab, path);

    const LlamaVocab ref(path);
    // The loaded vocab must be ours: this also catches a llama_model_params
    // layout that no longer matches the pinned one.
    REQUIRE(ref.n_tokens() == vocab.n_vocab());
    REQUIRE(ref.type() == (kind == TokenizerKind::Spm ? 1 : 2));
    REQUIRE(ref.bos() == vocab.bos_id);
    REQUIRE(ref.eos() == vocab.eos_id);
    const auto ours = Tokenizer::create(vocab);

    check_encodings(ref, *ours, texts);
    check_pieces(ref, *ours);
  }
}

}  // namespace

TEST_CASE("SPM tokenizer matches llama.cpp with 4096 tokens", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_with_llama(TokenizerKind::Spm, 4096, oracle_texts(kDefaultRandomTexts, 10, 7));
}

TEST_CASE("SPM tokenizer matches llama.cpp with 32000 tokens", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_with_llama(TokenizerKind::Spm, 32000, oracle_texts(kDefaultRandomTexts, 10, 7));
}

TEST_CASE("BPE tokenizer matches llama.cpp for each pre-tokenizer with 4096 tokens", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_with_llama(TokenizerKind::Bpe, 4096, oracle_texts(kDefaultRandomTexts, 10, 7));
}

TEST_CASE("BPE tokenizer matches llama.cpp for each pre-tokenizer with 32000 tokens", "[oracle][text][llama]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  compare_with_llama(TokenizerKind::Bpe, 32000, oracle_texts(kDefaultRandomTexts, 10, 7));
}

// A bigger sweep: many more and longer random texts, other seeds, and the
// whole corpus as one text.
TEST_CASE("tokenizers match llama.cpp on a large random sweep", "[oracle][text][llama][.slow]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  auto texts = oracle_texts(kSlowRandomTexts, 40, 20240517);
  texts.push_back(corpus());
  for (const int32_t size : {4096, 32000}) {
    for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
      compare_with_llama(kind, size, texts);
    }
  }
}
