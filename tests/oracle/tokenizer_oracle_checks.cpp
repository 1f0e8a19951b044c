// Texts and checks shared by the tokenizer oracle tests (see the header).
#include "tests/oracle/tokenizer_oracle_checks.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <span>
#include <sstream>
#include <string_view>

#include "engine/text/unicode.h"
#include "tests/test_util.h"

namespace tc::oracle {
namespace {

using text::EncodeOptions;
using text::TokenId;
using text::Vocab;

using namespace std::string_literals;

constexpr size_t kSliceBytes = 20000;
constexpr int kShownMismatches = 5;

// Pieces that stress the pre-tokenizers and the special-token partition.
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


// ids[from, to) as `id"piece"`, around the first difference of two lists.
std::string show_ids(const Vocab& vocab, const std::vector<TokenId>& ids, size_t from, size_t to) {
  std::ostringstream out;
  out << "[" << ids.size() << " ids]";
  if (from > 0) out << " ...";
  for (size_t i = from; i < std::min(to, ids.size()); ++i) {
    const TokenId id = ids[i];
    out << " " << id;
    if (id >= 0 && id < vocab.n_vocab()) out << "\"" << escape_bytes(vocab.tokens[id], 40) << "\"";
  }
  if (to < ids.size()) out << " ...";
  return out.str();
}

}  // namespace

// Bytes as a C string literal body: printable ASCII as is, the rest escaped.
std::string escape_bytes(std::string_view s, size_t max_bytes) {
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

const std::string& tokenizer_corpus_text() {
  static const std::string text =
      test::read_file(test::source_dir() / "profiler" / "data" / "tokenizer_corpus.txt");
  return text;
}

std::vector<std::string> oracle_texts(int n_random, int max_fragments, uint32_t seed,
                                      const std::vector<std::string>& extra_fragments) {
  const std::string& corpus = tokenizer_corpus_text();
  std::vector<std::string> texts;
  std::istringstream lines(corpus);
  for (std::string line; std::getline(lines, line);) texts.push_back(line);
  size_t cut = std::min(kSliceBytes, corpus.size());
  while (cut > 0 && cut < corpus.size() && (static_cast<uint8_t>(corpus[cut]) & 0xC0) == 0x80) --cut;
  texts.push_back(corpus.substr(0, cut));
  std::mt19937 rng(seed);  // rng() % n: the same texts with every standard library
  std::vector<std::string> frags = fragments();
  frags.insert(frags.end(), extra_fragments.begin(), extra_fragments.end());
  for (int i = 0; i < n_random; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % static_cast<uint32_t>(max_fragments));
    for (int j = 0; j < n; ++j) s += frags[rng() % frags.size()];
    texts.push_back(std::move(s));
  }
  return texts;
}

void require_valid_utf8(const std::vector<std::string>& texts) {
  const auto invalid = std::find_if(texts.begin(), texts.end(),
                                    [](const std::string& t) { return !text::utf8_is_valid(t); });
  INFO("text " << (invalid - texts.begin()) << " is not valid UTF-8");
  REQUIRE(invalid == texts.end());
}

void check_encodings(const LlamaVocab& ref, const text::Tokenizer& ours, const std::vector<std::string>& texts) {
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
      report << "\n  text \"" << escape_bytes(text) << "\" add_special=" << mode.add_special
             << " parse_special=" << mode.parse_special << ", first difference at id index " << at
             << "\n    llama.cpp: " << show_ids(vocab, want, from, from + 24)
             << "\n    ours:      " << show_ids(vocab, got, from, from + 24);
    }
  }
  INFO(n_mismatch << " of " << texts.size() * 3 << " encodings differ from llama.cpp:" << report.str());
  CHECK(n_mismatch == 0);
}

void check_pieces(const LlamaVocab& ref, const text::Tokenizer& ours) {
  const Vocab& vocab = ours.vocab();
  size_t n_mismatch = 0;
  std::ostringstream report;
  for (TokenId id = 0; id < vocab.n_vocab(); ++id) {
    for (const bool special : {false, true}) {
      const std::string want = ref.token_to_piece(id, special);
      const std::string got = ours.token_to_piece(id, special);
      if (got == want || ++n_mismatch > kShownMismatches) continue;
      report << "\n  id " << id << " \"" << escape_bytes(vocab.tokens[id]) << "\" special=" << special
             << ": llama.cpp \"" << escape_bytes(want) << "\", ours \"" << escape_bytes(got) << "\"";
    }
  }
  INFO(n_mismatch << " of " << vocab.n_vocab() * 2 << " pieces differ from llama.cpp:" << report.str());
  CHECK(n_mismatch == 0);
}

// Our decode as llama_detokenize does it: with a space prefix (SPM, UGM),
// llama.cpp strips one leading space from the very first token's piece
// only, where our decode strips it from the first non-empty one (so that a
// BOS in front changes nothing).
std::string llama_style_decode(const text::Tokenizer& ours, const std::vector<TokenId>& ids, bool special) {
  const Vocab& v = ours.vocab();
  const bool prefixed = (v.kind == text::TokenizerKind::Spm || v.kind == text::TokenizerKind::Ugm) &&
                        v.add_space_prefix;
  if (!prefixed || ids.empty()) return ours.decode(ids, special);
  std::string first = ours.token_to_piece(ids[0], special);
  if (!first.empty() && first[0] == ' ') first.erase(0, 1);
  return first + ours.decode(std::span(ids).subspan(1), special, true);
}

void check_detokenize(const LlamaVocab& ref, const text::Tokenizer& ours, const std::vector<std::string>& texts,
                      bool llama_cleans_spaces) {
  size_t n_mismatch = 0;
  size_t n_not_round_trip = 0;
  std::ostringstream report;
  for (const auto& text : texts) {
    const auto ids = ours.encode(text, {true, true});
    for (const bool special : {false, true}) {
      const std::string want = ref.detokenize(ids, special);
      std::string got = llama_style_decode(ours, ids, special);
      if (llama_cleans_spaces) got = llama_clean_spaces(std::move(got));
      if (got == want || ++n_mismatch > kShownMismatches) continue;
      report << "\n  text \"" << escape_bytes(text) << "\" special=" << special << ": llama.cpp \"" << escape_bytes(want)
             << "\", ours \"" << escape_bytes(got) << "\"";
    }
    // Without special texts parsed, only the added BOS/EOS are not text.
    // (SPM and Gemma 4 read a U+2581 in the text as the space it stands for.)
    const bool spm_marker = ours.vocab().kind != tc::text::TokenizerKind::Bpe &&
                            text.find("\xE2\x96\x81") != std::string::npos;
    // WPM: lowercase, splitting, no controls; UGM: the charsmap, merged
    // whitespace, <unk> for characters outside the vocab.
    const bool lossy = ours.vocab().kind == tc::text::TokenizerKind::Wpm ||
                       ours.vocab().kind == tc::text::TokenizerKind::Ugm;
    if (!spm_marker && !lossy && ours.decode(ours.encode(text, {true, false})) != text &&
        ++n_not_round_trip <= kShownMismatches) {
      report << "\n  text \"" << escape_bytes(text) << "\" does not decode back from its ids";
    }
  }
  INFO(n_mismatch << " of " << texts.size() * 2 << " detokenized texts differ from llama.cpp, "
                  << n_not_round_trip << " of " << texts.size() << " do not round-trip:" << report.str());
  CHECK(n_mismatch == 0);
  CHECK(n_not_round_trip == 0);
}

// A port of the three passes at the end of llama.cpp's
// llama_vocab::impl::detokenize, in place as there (the second pass's
// '\0' included: it hides the skipped space from the next comparison).
std::string llama_clean_spaces(std::string text) {
  const auto n0 = static_cast<int>(text.size());
  int total = n0 ? 1 : 0;
  for (int i = 1; i < n0; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    text[total++] = x;
  }
  const int n1 = total;
  total = n1 ? 1 : 0;
  for (int i = 1; i < n1; ++i) {
    const char x = text[i];
    if (x == '\'' && i + 1 < n1 && text[i - 1] == ' ' && text[i + 1] == ' ') {
      --total;
      text[++i] = '\0';
    }
    text[total++] = x;
  }
  const int n2 = total;
  total = n2 ? 1 : 0;
  for (int i = 1; i < n2; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < n2) {
      const char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < n2) {
        const char x2 = text[i + 2];
        if ((x1 == 'r' || x1 == 'v') && x2 == 'e') --total;
      }
    }
    text[total++] = x;
  }
  text.resize(static_cast<size_t>(total));
  return text;
}

void check_end_of_generation(const LlamaVocab& ref, const text::Tokenizer& ours, bool expect_some) {
  const Vocab& vocab = ours.vocab();
  size_t n_mismatch = 0;
  size_t n_eog = 0;
  std::ostringstream report;
  for (TokenId id = 0; id < vocab.n_vocab(); ++id) {
    const bool want = ref.is_eog(id);
    n_eog += want;
    if (vocab.is_end_of_generation(id) == want || ++n_mismatch > kShownMismatches) continue;
    report << "\n  id " << id << " \"" << escape_bytes(vocab.tokens[id]) << "\": llama.cpp " << want;
  }
  INFO(n_mismatch << " of " << vocab.n_vocab() << " ids differ in ending generation (llama.cpp has " << n_eog
                  << "):" << report.str());
  CHECK(n_mismatch == 0);
  if (expect_some) CHECK(n_eog > 0);
}

}  // namespace tc::oracle
