// StreamingDetokenizer: never emits part of a character, holds incomplete
// bytes, drops the SPM prefix space like decode, and flushes leftovers as
// U+FFFD.
#include <catch2/catch.hpp>

#include "engine/text/tokenizer.h"
#include "engine/text/unicode.h"
#include "tests/engine/text/text_test_util.h"

using namespace tc::text;
using tc::text::test::spm_vocab;

namespace {
using tc::text::test::kSp;
const std::string kFox = "\xF0\x9F\xA6\x8A";  // 🦊, not in the hand-built vocab
}  // namespace

TEST_CASE("streaming: an emoji split over byte tokens appears only when complete",
          "[text][stream]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {kSp + "a", -1}});
  const auto tok = Tokenizer::create(v);
  const auto ids = tok->encode("a " + kFox + "!");
  // <s> ▁a ▁ F0 9F A6 8A !
  REQUIRE(ids.size() == 8);
  REQUIRE(ids[3] == 3 + 0xF0);
  StreamingDetokenizer stream(*tok);
  std::vector<std::string> out;
  for (const TokenId id : ids) out.push_back(stream.push(id));
  CHECK(out == std::vector<std::string>{"", "a", " ", "", "", "", kFox, "!"});
  CHECK(stream.flush() == "");
  std::string joined;
  for (const auto& s : out) joined += s;
  CHECK(joined == tok->decode(ids));
}

TEST_CASE("streaming: flush replaces an unfinished character", "[text][stream]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {kSp + "a", -1}});
  const auto tok = Tokenizer::create(v);
  StreamingDetokenizer stream(*tok);
  CHECK(stream.push(259 + 2) == "a");  // "▁a": the prefix space is dropped
  CHECK(stream.push(3 + 0xF0) == "");
  CHECK(stream.push(3 + 0x9F) == "");
  CHECK(stream.flush() == utf8_sanitize("\xF0\x9F"));
  CHECK(stream.flush() == "");
  // A stray continuation byte cannot complete anything: replaced at once.
  CHECK(stream.push(3 + 0xA6) == "\xEF\xBF\xBD");
}

TEST_CASE("streaming: render_special shows control tokens", "[text][stream]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {kSp + "a", -1}});
  const auto tok = Tokenizer::create(v);
  StreamingDetokenizer plain(*tok);
  StreamingDetokenizer special(*tok, true);
  CHECK(plain.push(1) == "");
  CHECK(plain.push(261) == "a");
  CHECK(special.push(1) == "<s>");
  CHECK(special.push(261) == " a");  // not the first piece any more
}

TEST_CASE("streaming matches decode on trained vocabs", "[text][stream]") {
  const std::string text = "Streaming \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E, " + kFox +
                           " caf\xC3\xA9 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 ok\n";
  for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
    const Tokenizer& tok = tc::text::test::trained_tokenizer(kind, 4096);
    const auto ids = tok.encode(text);
    StreamingDetokenizer stream(tok);
    std::string joined;
    for (const TokenId id : ids) {
      const std::string piece = stream.push(id);
      CHECK(utf8_is_valid(piece));
      joined += piece;
    }
    joined += stream.flush();
    CHECK(joined == tok.decode(ids));
    CHECK(joined == text);
  }
}

TEST_CASE("continuation keeps the first piece's space", "[text][stream]") {
  const Vocab v = spm_vocab({{kSp, -10}, {"a", -10}, {kSp + "a", -1}});
  const auto tok = Tokenizer::create(v);
  const std::vector<TokenId> ids{261, 261};  // "▁a▁a", e.g. generated after a prompt
  CHECK(tok->decode(ids) == "a a");
  CHECK(tok->decode(ids, false, true) == " a a");
  StreamingDetokenizer stream(*tok, false, true);
  CHECK(stream.push(261) == " a");
  CHECK(stream.push(261) == " a");
  // BPE never drops anything.
  const Tokenizer& bpe = tc::text::test::trained_tokenizer(TokenizerKind::Bpe, 4096);
  const auto bpe_ids = bpe.encode(" leading", {false, false});
  CHECK(bpe.decode(bpe_ids) == " leading");
  CHECK(bpe.decode(bpe_ids, false, true) == " leading");
}
