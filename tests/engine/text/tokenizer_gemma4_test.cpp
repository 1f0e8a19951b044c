// Gemma 4's tokenizer (`tokenizer.ggml.model` "gemma4") on hand-built vocabs,
// as llama.cpp runs it: spaces as U+2581, merges by rank over whole lines,
// newline runs taken whole when they are tokens, <0xXX> byte fallback,
// BOS always added, its end-of-generation markers and </s>, decoding,
// the GGUF keys, and the trainer's Gemma 4 kind.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/tokenizer_trainer_detail.h"
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

// <pad> <eos> <bos> <unk>, Gemma 4's markers (typed as a converted file
// types them), </s>, newline runs of one to three, optionally the byte
// tokens, the characters of "hello world ab" (space as U+2581) and `pieces`
// with `merges` in rank order.
Vocab gemma4_vocab(const Texts& pieces, const Texts& merges, bool byte_tokens = true) {
  Vocab v;
  v.kind = TokenizerKind::Gemma4;
  v.pad_id = 0;
  v.eos_id = 1;
  v.bos_id = 2;
  v.unk_id = 3;
  v.add_bos = true;
  v.add_space_prefix = false;
  const auto add = [&](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
  };
  add("<pad>", TokenType::Control);
  add("<eos>", TokenType::Control);
  add("<bos>", TokenType::Control);
  add("<unk>", TokenType::Unknown);
  add("<|turn>", TokenType::Control);
  add("<turn|>", TokenType::UserDefined);  // an end marker: control whatever the file says
  add("<|tool_call>", TokenType::UserDefined);
  add("<|tool_response>", TokenType::UserDefined);
  add("</s>", TokenType::UserDefined);
  for (const char* run : {"\n", "\n\n", "\n\n\n"}) add(run, TokenType::Normal);
  if (byte_tokens) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) add(std::string{'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'}, TokenType::Byte);
  }
  for (const std::string& c : {kSp, std::string("h"), std::string("e"), std::string("l"), std::string("o"),
                               std::string("w"), std::string("r"), std::string("d"), std::string("a"),
                               std::string("b")}) {
    add(c, TokenType::Normal);
  }
  for (const std::string& p : pieces) add(p, TokenType::Normal);
  v.merges = merges;
  return v;
}

const Texts kHelloPieces = {"ll", "he", "hell", "hello", kSp + "w", "or", kSp + "wor"};
const Texts kHelloMerges = {"l l", "h e", "he ll", "hell o", kSp + " w", "o r", kSp + "w or"};

Texts encode_texts(const Vocab& v, const std::string& text, EncodeOptions options = kPlain) {
  return texts_of(v, Tokenizer::create(v)->encode(text, options));
}

GgufFile write_and_open(const Vocab& v, const std::string& name, const std::string& model = "",
                        const std::string& pre = "") {
  GgufWriter w;
  write_vocab(v, w);
  if (!model.empty()) w.set("tokenizer.ggml.model", Value(model));
  if (!pre.empty()) w.set("tokenizer.ggml.pre", Value(pre));
  const auto path = tc::test::scratch_dir("tokenizer_gemma4_" + name) / "vocab.gguf";
  w.write(path);
  return GgufFile::open(path);
}

}  // namespace

TEST_CASE("gemma4: spaces become U+2581 and merges run over the whole line", "[text][gemma4]") {
  const Vocab v = gemma4_vocab(kHelloPieces, kHelloMerges);
  CHECK(encode_texts(v, "hello world") == Texts{"hello", kSp + "wor", "l", "d"});
  // No space prefix, and a leading space is a U+2581 of its own.
  CHECK(encode_texts(v, " hello") == Texts{kSp, "hello"});
  // A literal U+2581 is the same as a space.
  CHECK(encode_texts(v, "hello" + kSp + "world") == encode_texts(v, "hello world"));
  SECTION("a merge joins across a space") {
    const Vocab joined = gemma4_vocab({"o" + kSp, "o" + kSp + "w"}, {"o " + kSp, "o" + kSp + " w"});
    CHECK(encode_texts(joined, "o wo") == Texts{"o" + kSp + "w", "o"});
  }
}

TEST_CASE("gemma4: newline runs", "[text][gemma4]") {
  SECTION("a run that is a token is taken whole, without merges") {
    const Vocab v = gemma4_vocab({}, {});
    CHECK(encode_texts(v, "a\n\nb") == Texts{"a", "\n\n", "b"});
    CHECK(encode_texts(v, "a\n\n\n") == Texts{"a", "\n\n\n"});
  }
  SECTION("a longer run is merged as any word") {
    CHECK(encode_texts(gemma4_vocab({}, {}), "\n\n\n\n") == Texts{"\n", "\n", "\n", "\n"});
    CHECK(encode_texts(gemma4_vocab({}, {"\n \n"}), "\n\n\n\n\n") == Texts{"\n\n", "\n\n", "\n"});
  }
  SECTION("lines are merged apart") {
    const Vocab v = gemma4_vocab({"ab"}, {"a b"});
    CHECK(encode_texts(v, "a\nb") == Texts{"a", "\n", "b"});
  }
}

TEST_CASE("gemma4: byte fallback", "[text][gemma4]") {
  SECTION("a character that is no token becomes its <0xXX> tokens") {
    CHECK(encode_texts(gemma4_vocab({}, {}), "a\xC3\xA9") == Texts{"a", "<0xC3>", "<0xA9>"});
  }
  SECTION("so does a merge result that is no token, byte by byte") {
    CHECK(encode_texts(gemma4_vocab({}, {"a b"}), "abe") == Texts{"<0x61>", "<0x62>", "e"});
  }
  SECTION("a byte without a token is dropped") {
    CHECK(encode_texts(gemma4_vocab({}, {}, false), "a\xC3\xA9" "b") == Texts{"a", "b"});
  }
}

TEST_CASE("gemma4: special tokens and end of generation", "[text][gemma4]") {
  const Vocab v = gemma4_vocab(kHelloPieces, kHelloMerges);
  const auto tok = Tokenizer::create(v);
  const Vocab& fixed = tok->vocab();
  const auto id = [&](const std::string& text) { return ids_of(fixed, {text})[0]; };
  CHECK(fixed.is_end_of_generation(id("<eos>")));
  CHECK(fixed.is_end_of_generation(id("<turn|>")));
  CHECK(fixed.is_end_of_generation(id("<|tool_response>")));
  CHECK_FALSE(fixed.is_end_of_generation(id("<|turn>")));
  CHECK_FALSE(fixed.is_end_of_generation(id("<|tool_call>")));
  // Beside <|tool_response>, </s> is plain text: no end, no special token.
  CHECK_FALSE(fixed.is_end_of_generation(id("</s>")));
  CHECK(fixed.types[id("</s>")] == TokenType::Normal);
  CHECK(tok->token_to_piece(id("</s>")) == "</s>");
  CHECK(tok->encode("</s>", {false, true}) == ids_of(fixed, {"<0x3C>", "<0x2F>", "<0x73>", "<0x3E>"}));
  // The end markers are control tokens: split off only with parse_special,
  // rendered only with render_special. <|tool_call> stays user-defined.
  CHECK(fixed.types[id("<|tool_response>")] == TokenType::Control);
  CHECK(tok->token_to_piece(id("<turn|>")).empty());
  CHECK(tok->token_to_piece(id("<turn|>"), true) == "<turn|>");
  CHECK(tok->encode("<|turn>hello<turn|>", {false, true}) == ids_of(fixed, {"<|turn>", "hello", "<turn|>"}));
  CHECK(tok->encode("a<|tool_call>b", kPlain) == ids_of(fixed, {"a", "<|tool_call>", "b"}));
  CHECK(tok->token_to_piece(id("<|tool_call>")) == "<|tool_call>");

  SECTION("without <|tool_response>, </s> ends generation") {
    Vocab other = v;
    other.tokens[id("<|tool_response>")] = "<|tool_result>";
    const auto t = Tokenizer::create(other);
    CHECK(t->vocab().types[id("</s>")] == TokenType::Control);
    CHECK(t->vocab().is_end_of_generation(id("</s>")));
  }
}

TEST_CASE("gemma4: decode turns U+2581 back into spaces", "[text][gemma4]") {
  const Vocab v = gemma4_vocab(kHelloPieces, kHelloMerges);
  const auto tok = Tokenizer::create(v);
  for (const std::string text :
       {"hello world", " hello  world ", "a\n\n\nb\n\n\n\n", "\xC3\xA9t\xC3\xA9 \xF0\x9F\xA6\x8A"}) {
    INFO("text '" << text << "'");
    CHECK(tok->decode(tok->encode(text, {true, false})) == text);
  }
  CHECK(tok->token_to_piece(ids_of(v, {kSp + "wor"})[0]) == " wor");
  CHECK(tok->token_to_piece(ids_of(v, {"<0x41>"})[0]) == "A");
  CHECK(tok->decode(ids_of(v, {kSp, "hello"})) == " hello");  // no space prefix to drop
}

TEST_CASE("gemma4: GGUF keys as llama.cpp reads them", "[text][gemma4]") {
  Vocab v = gemma4_vocab(kHelloPieces, kHelloMerges);
  SECTION("round trip, model \"gemma4\", BOS added even when the file says not to") {
    v.add_bos = false;
    const GgufFile f = write_and_open(v, "round_trip");
    CHECK(f.get_string("tokenizer.ggml.model") == "gemma4");
    CHECK_FALSE(f.has("tokenizer.ggml.pre"));
    const Vocab back = read_vocab(f);
    CHECK(back.kind == TokenizerKind::Gemma4);
    CHECK(back.tokens == v.tokens);
    CHECK(back.merges == v.merges);
    CHECK(back.bos_id == 2);
    CHECK(back.eos_id == 1);
    CHECK(back.add_bos);
    CHECK(Tokenizer::create(back)->encode("hello", {true, false}) == ids_of(v, {"<bos>", "hello"}));
  }
  SECTION("tokenizer.ggml.pre is ignored") {
    const Vocab back = read_vocab(write_and_open(v, "pre_ignored", "", "qwen2"));
    CHECK(texts_of(back, Tokenizer::create(back)->encode("hello world", kPlain)) ==
          Texts{"hello", kSp + "wor", "l", "d"});
  }
  SECTION("\"gpt2\" naming the gemma4 pre-tokenizer runs the same, with gpt2's defaults") {
    for (const std::string pre : {"gemma4", "granite-embed-multi-311m"}) {
      INFO("pre " << pre);
      const Vocab back = read_vocab(write_and_open(v, "gpt2_" + pre, "gpt2", pre));
      CHECK(back.kind == TokenizerKind::Bpe);
      CHECK(back.add_bos);
      const auto tok = Tokenizer::create(back);
      CHECK(texts_of(back, tok->encode("hello world\n\n", kPlain)) ==
            Texts{"hello", kSp + "wor", "l", "d", "\n\n"});
      CHECK(tok->decode(tok->encode("hello world", kPlain)) == "hello world");
    }
  }
  SECTION("merges and a BOS id are required") {
    Vocab no_bos = v;
    no_bos.bos_id = -1;
    no_bos.add_bos = false;
    try {
      read_vocab(write_and_open(no_bos, "no_bos"));
      FAIL("no error");
    } catch (const tc::gguf::ModelLoadError& e) {
      CHECK(e.item() == "tokenizer.ggml.bos_token_id");
    }
    GgufWriter no_merges;
    no_merges.set("tokenizer.ggml.model", Value(std::string("gemma4")));
    no_merges.set("tokenizer.ggml.tokens", Value::string_array(v.tokens));
    const auto path = tc::test::scratch_dir("tokenizer_gemma4_no_merges") / "vocab.gguf";
    no_merges.write(path);
    try {
      read_vocab(GgufFile::open(path));
      FAIL("no error");
    } catch (const tc::gguf::ModelLoadError& e) {
      CHECK(e.item() == "tokenizer.ggml.merges");
    }
  }
}

TEST_CASE("trainer: gemma4 layout and segmentation", "[text][trainer][gemma4]") {
  const auto out = detail::train_vocab_detailed(test::corpus(), {TokenizerKind::Gemma4, 4096});
  const Vocab& v = out.vocab;
  REQUIRE(v.n_vocab() == 4096);
  CHECK(v.kind == TokenizerKind::Gemma4);
  CHECK(v.tokens[0] == "<unk>");
  CHECK(v.tokens[3 + 0x0A] == "<0x0A>");
  CHECK(v.types[3 + 0x0A] == TokenType::Byte);
  CHECK_FALSE(v.add_space_prefix);
  CHECK(v.add_bos);
  CHECK(v.merges.size() > 3000);
  CHECK(v.tokens[259] == kSp);  // the most frequent character

  // Each training word encodes to its training segmentation (a newline run
  // that is a token is taken whole, as the tokenizer takes it).
  const auto tok = Tokenizer::create(v);
  std::map<std::string, TokenId> index;
  for (int i = 0; i < v.n_vocab(); ++i) index.emplace(v.tokens[i], i);
  size_t n_mismatch = 0;
  for (const auto& w : out.words) {
    std::string text;
    for (size_t i = 0; i < w.text.size();) {
      if (w.text.compare(i, kSp.size(), kSp) == 0) {
        text += ' ';
        i += kSp.size();
      } else {
        text += w.text[i++];
      }
    }
    auto expected = w.ids;
    if (text.find_first_not_of('\n') == std::string::npos && index.count(text)) expected = {index.at(text)};
    if (tok->encode(text, kPlain) != expected && ++n_mismatch <= 3) {
      INFO("word '" << w.text << "'");
      CHECK(texts_of(v, tok->encode(text, kPlain)) == texts_of(v, expected));
    }
  }
  CHECK(out.words.size() > 10000);
  CHECK(n_mismatch == 0);
  CHECK(tok->decode(tok->encode(test::corpus(), kPlain)) == test::corpus());
}
