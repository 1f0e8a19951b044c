// The tokenizer trainer: exact sizes, layout of fixed tokens, determinism,
// padding, that encoding a training word gives back its training
// segmentation, and the pre-tokenizer and reserved-text options.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/tokenizer_trainer_detail.h"
#include "engine/text/unicode.h"
#include "tests/engine/text/text_test_util.h"

using namespace tc::text;
using tc::text::test::corpus;
using tc::text::test::trained_vocab;

namespace {
using tc::text::test::kSp;
}

TEST_CASE("trainer: spm layout", "[text][trainer]") {
  const Vocab& v = trained_vocab(TokenizerKind::Spm, 4096);
  REQUIRE(v.n_vocab() == 4096);
  CHECK(v.kind == TokenizerKind::Spm);
  CHECK(v.tokens[0] == "<unk>");
  CHECK(v.types[0] == TokenType::Unknown);
  CHECK(v.tokens[1] == "<s>");
  CHECK(v.types[1] == TokenType::Control);
  CHECK(v.tokens[2] == "</s>");
  CHECK(v.types[2] == TokenType::Control);
  CHECK(v.tokens[3] == "<0x00>");
  CHECK(v.tokens[3 + 0x0A] == "<0x0A>");
  CHECK(v.tokens[258] == "<0xFF>");
  for (int i = 3; i < 259; ++i) CHECK(v.types[i] == TokenType::Byte);
  CHECK(v.unk_id == 0);
  CHECK(v.bos_id == 1);
  CHECK(v.eos_id == 2);
  CHECK(v.add_bos);
  CHECK_FALSE(v.add_eos);
  CHECK(v.add_space_prefix);
  CHECK(v.tokens[259] == kSp);  // the most frequent character
  REQUIRE(v.scores.size() == 4096u);
  // Learned pieces (multi-character) score higher the earlier they came.
  float prev = 1.0f;
  int n_pieces = 0;
  for (int i = 259; i < v.n_vocab(); ++i) {
    if (utf8_to_codepoints(v.tokens[i]).size() < 2) continue;
    CHECK(v.scores[i] < prev);
    prev = v.scores[i];
    ++n_pieces;
  }
  CHECK(n_pieces > 3000);
  CHECK(v.merges.empty());
}

TEST_CASE("trainer: bpe layout", "[text][trainer]") {
  const Vocab& v = trained_vocab(TokenizerKind::Bpe, 4096);
  REQUIRE(v.n_vocab() == 4096);
  CHECK(v.kind == TokenizerKind::Bpe);
  CHECK(v.pre == "llama3");
  for (int b = 0; b < 256; ++b) {
    CHECK(v.tokens[b] == byte_to_unicode_utf8(static_cast<uint8_t>(b)));
  }
  CHECK(v.tokens[4094] == "<|begin_of_text|>");
  CHECK(v.tokens[4095] == "<|end_of_text|>");
  CHECK(v.types[4094] == TokenType::Control);
  CHECK(v.types[4095] == TokenType::Control);
  CHECK(v.bos_id == 4094);
  CHECK(v.eos_id == 4095);
  CHECK(v.unk_id == -1);
  CHECK(v.add_bos);
  CHECK_FALSE(v.add_space_prefix);
  // Every merge is "left right" and, the first time it is used, its
  // concatenation is the next new token.
  REQUIRE(v.merges.size() >= 4096u - 258u);
  for (const auto& m : v.merges) {
    const auto space = m.find(' ');
    REQUIRE(space != std::string::npos);
    CHECK(m.find(' ', space + 1) == std::string::npos);
  }
  const auto& first = v.merges[0];
  CHECK(v.tokens[256] == first.substr(0, first.find(' ')) + first.substr(first.find(' ') + 1));
  CHECK(v.tokens[256] == "\xC4\xA0t");  // "Ġt": " t" is the most frequent pair
}

TEST_CASE("trainer: exact vocab size, padded with unused tokens", "[text][trainer]") {
  for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
    const Vocab big = train_vocab("aaa bbb aaa", {kind, 600});
    REQUIRE(big.n_vocab() == 600);
    int unused = 0;
    for (int i = 0; i < big.n_vocab(); ++i) {
      if (big.types[i] == TokenType::Unused) {
        ++unused;
        CHECK(big.tokens[i].rfind("<unused_", 0) == 0);
      }
    }
    CHECK(unused > 200);
    const auto tok = Tokenizer::create(big);
    CHECK(tok->decode(tok->encode("aaa bbb ccc")) == "aaa bbb ccc");
  }
  CHECK(train_vocab(corpus(), {TokenizerKind::Spm, 300}).n_vocab() == 300);
  CHECK(train_vocab(corpus(), {TokenizerKind::Bpe, 300}).n_vocab() == 300);
  CHECK(train_vocab(corpus(), {TokenizerKind::Spm, 259}).n_vocab() == 259);
  CHECK_THROWS_AS(train_vocab(corpus(), {TokenizerKind::Spm, 258}), std::invalid_argument);
  CHECK_THROWS_AS(train_vocab(corpus(), {TokenizerKind::Bpe, 257}), std::invalid_argument);
  CHECK(train_vocab("", {TokenizerKind::Bpe, 258}).n_vocab() == 258);
}

TEST_CASE("trainer: deterministic", "[text][trainer]") {
  for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
    const Vocab a = train_vocab(corpus(), {kind, 2000});
    const Vocab b = train_vocab(corpus(), {kind, 2000});
    CHECK(a.tokens == b.tokens);
    CHECK(a.scores == b.scores);
    CHECK(a.types == b.types);
    CHECK(a.merges == b.merges);
    // The first 2000 tokens of a bigger vocab are not the same vocab, but
    // the learned order is: the smaller run's merges prefix the larger's.
    const Vocab& big = trained_vocab(kind, 4096);
    if (kind == TokenizerKind::Bpe) {
      CHECK(std::equal(a.merges.begin(), a.merges.end(), big.merges.begin()));
    }
  }
}

TEST_CASE("trainer: encoding a training word reproduces its segmentation", "[text][trainer]") {
  for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
    const auto out = detail::train_vocab_detailed(corpus(), {kind, 4096});
    Vocab v = out.vocab;
    v.add_space_prefix = false;  // SPM words already carry their U+2581
    const auto tok = Tokenizer::create(v);
    std::map<std::string, TokenId> index;
    for (int i = 0; i < v.n_vocab(); ++i) index.emplace(v.tokens[i], i);
    size_t n_checked = 0, n_mismatch = 0;
    int64_t n_tokens = 0;
    for (const auto& w : out.words) {
      std::string text;
      auto expected = w.ids;
      if (kind == TokenizerKind::Spm) {
        for (size_t i = 0; i < w.text.size();) {
          if (w.text.compare(i, kSp.size(), kSp) == 0) {
            text += ' ';
            i += kSp.size();
          } else {
            text += w.text[i++];
          }
        }
      } else {
        text = w.text;
        // Llama-3's ignore_merges: a word that is itself a token is taken whole.
        std::string encoded;
        for (const char c : w.text) encoded += byte_to_unicode_utf8(static_cast<uint8_t>(c));
        if (const auto it = index.find(encoded); it != index.end()) expected = {it->second};
      }
      const auto got = tok->encode(text, {false, false});
      if (got != expected) {
        ++n_mismatch;
        INFO("word '" << w.text << "' got " << Catch::Detail::stringify(tc::text::test::texts_of(v, got))
                      << " expected " << Catch::Detail::stringify(tc::text::test::texts_of(v, expected)));
        CHECK(n_mismatch == 0);
      }
      ++n_checked;
      n_tokens += static_cast<int64_t>(w.ids.size()) * w.count;
    }
    CHECK(n_checked > 10000);
    CHECK(n_mismatch == 0);
    if (kind == TokenizerKind::Spm) {
      // The whole corpus encodes to exactly its training segmentation.
      const auto ids = Tokenizer::create(out.vocab)->encode(corpus(), {false, false});
      CHECK(static_cast<int64_t>(ids.size()) == n_tokens);
    }
  }
}

// No wall-clock limit here (tests do not time; a loaded CI machine would
// fail one): a 32000-token vocabulary is what make-model trains, and a
// regression to quadratic merging shows as this case running for minutes.
TEST_CASE("trainer: a 32000-token vocabulary trains", "[text][trainer]") {
  for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
    const Vocab v = train_vocab(corpus(), {kind, 32000});
    CHECK(v.n_vocab() == 32000);
  }
}

TEST_CASE("trainer: bpe learns over the pre-tokenizer it is given", "[text][trainer]") {
  TrainerOptions o{TokenizerKind::Bpe, 3000};
  o.pre = "qwen2";
  const Vocab v = train_vocab(corpus(), o);
  CHECK(v.pre == "qwen2");
  // Qwen2 splits numbers into single digits, so no learned token joins two.
  const auto tok = Tokenizer::create(v);
  int n_digit_pairs = 0;
  for (TokenId id = 0; id < v.n_vocab(); ++id) {
    const std::string piece = tok->token_to_piece(id);
    for (size_t i = 0; i + 1 < piece.size(); ++i) {
      n_digit_pairs += std::isdigit(static_cast<unsigned char>(piece[i])) != 0 &&
                       std::isdigit(static_cast<unsigned char>(piece[i + 1])) != 0;
    }
  }
  CHECK(n_digit_pairs == 0);
  CHECK(tok->decode(tok->encode("In 1984, 42 hackers")) == "In 1984, 42 hackers");
  o.pre = "no-such-pre";
  CHECK_THROWS_AS(train_vocab(corpus(), o), std::invalid_argument);
}

TEST_CASE("trainer: reserved texts never become tokens", "[text][trainer]") {
  SECTION("spm") {
    TrainerOptions o{TokenizerKind::Spm, 3000};
    o.reserved = {"\n", "\n\n", kSp + "the", "<start_of_turn>"};
    const Vocab v = train_vocab(corpus(), o);
    REQUIRE(v.n_vocab() == 3000);
    for (const auto& r : o.reserved) CHECK(std::find(v.tokens.begin(), v.tokens.end(), r) == v.tokens.end());
    // Nor may two pieces spell a reserved text.
    for (const std::string& affix : {std::string("<start"), std::string("_turn>"), std::string("of_turn>")}) {
      CHECK(std::find(v.tokens.begin(), v.tokens.end(), affix) == v.tokens.end());
    }
    CHECK(std::count(v.types.begin(), v.types.end(), TokenType::Unused) == 0);
    const Vocab plain = train_vocab(corpus(), {TokenizerKind::Spm, 3000});
    CHECK(std::find(plain.tokens.begin(), plain.tokens.end(), kSp + "the") != plain.tokens.end());
    CHECK(std::find(plain.tokens.begin(), plain.tokens.end(), "\n") != plain.tokens.end());
  }
  SECTION("bpe") {
    TrainerOptions o{TokenizerKind::Bpe, 3000};
    o.reserved = {" the", "<think>"};
    const Vocab v = train_vocab(corpus(), o);
    REQUIRE(v.n_vocab() == 3000);
    CHECK(std::find(v.tokens.begin(), v.tokens.end(), "\xC4\xA0the") == v.tokens.end());  // "Ġthe"
    const Vocab plain = train_vocab(corpus(), {TokenizerKind::Bpe, 3000});
    CHECK(std::find(plain.tokens.begin(), plain.tokens.end(), "\xC4\xA0the") != plain.tokens.end());
  }
}
