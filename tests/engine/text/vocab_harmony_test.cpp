// The harmony token rules (gpt-oss's o200k_harmony vocabulary) on a small
// vocab written to and read from GGUF, as a converted gpt-oss file carries
// its special tokens (all control): <|return|> and <|call|> end the
// generation, <|end|> does not, and <|start|>, <|channel|>, <|message|>,
// <|constrain|> and <|end|> are rendered into the text. Vocabularies that
// are not harmony keep their rules (Phi-3's <|end|> still ends a turn).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "engine/text/vocab_harmony.h"
#include "tests/engine/text/text_test_util.h"
#include "tests/test_util.h"

using namespace tc::text;
using tc::text::test::ids_of;
using tc::text::test::spm_vocab;

namespace {

// A byte-fallback SPM vocab with `specials` appended as control tokens,
// written to GGUF and read back.
Vocab vocab_with(const std::vector<std::string>& specials, const std::string& name) {
  Vocab v = spm_vocab({{"\xE2\x96\x81", -1}, {"a", -1}, {"b", -1}});  // U+2581: the space
  v.add_space_prefix = false;
  for (const auto& s : specials) {
    v.tokens.push_back(s);
    v.types.push_back(TokenType::Control);
    v.scores.push_back(0);
  }
  tc::gguf::GgufWriter w;
  write_vocab(v, w);
  const auto path = tc::test::scratch_dir("vocab_harmony_" + name) / "vocab.gguf";
  w.write(path);
  return read_vocab(tc::gguf::GgufFile::open(path));
}

const std::vector<std::string> kHarmonyTokens = {"<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                                                 "<|start|>",     "<|end|>",    "<|message|>",   "<|call|>"};

TokenId id_of(const Vocab& v, const std::string& text) { return ids_of(v, {text})[0]; }

}  // namespace

TEST_CASE("harmony vocab: <|return|> and <|call|> end the generation but <|end|> does not", "[text][vocab][harmony]") {
  const Vocab file = vocab_with(kHarmonyTokens, "eog");
  CHECK(is_harmony_vocab(file));
  const auto tok = Tokenizer::create(file);
  const Vocab& v = tok->vocab();
  CHECK(v.is_end_of_generation(id_of(v, "<|return|>")));
  CHECK(v.is_end_of_generation(id_of(v, "<|call|>")));
  CHECK(v.is_end_of_generation(id_of(v, "<|endoftext|>")));
  for (const char* marker : {"<|end|>", "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"}) {
    INFO(marker);
    CHECK_FALSE(v.is_end_of_generation(id_of(v, marker)));
    CHECK(v.types[static_cast<size_t>(id_of(v, marker))] == TokenType::UserDefined);
  }
  CHECK(v.types[static_cast<size_t>(id_of(v, "<|return|>"))] == TokenType::Control);
  // The file's vocab itself is as written; the rules are the tokenizer's.
  CHECK(file.types[static_cast<size_t>(id_of(file, "<|end|>"))] == TokenType::Control);
}

TEST_CASE("harmony vocab: the markers are rendered but the ends are not", "[text][vocab][harmony]") {
  const auto tok = Tokenizer::create(vocab_with(kHarmonyTokens, "render"));
  const Vocab& v = tok->vocab();
  const std::string text = "<|channel|>analysis<|message|>ab<|end|><|start|>assistant<|channel|>commentary "
                           "to=functions.f <|constrain|>json<|message|>{}";
  // User-defined tokens are split off even without parse_special.
  EncodeOptions plain;
  plain.add_special = false;
  std::vector<TokenId> ids = tok->encode(text, plain);
  for (const char* marker : {"<|channel|>", "<|message|>", "<|end|>", "<|start|>", "<|constrain|>"}) {
    INFO(marker);
    CHECK(std::find(ids.begin(), ids.end(), id_of(v, marker)) != ids.end());
  }
  ids.push_back(id_of(v, "<|call|>"));
  CHECK(tok->decode(ids) == text);
  StreamingDetokenizer stream(*tok);
  std::string streamed;
  for (const TokenId id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  CHECK(streamed == text);
  CHECK(tok->token_to_piece(id_of(v, "<|return|>")).empty());
  CHECK(tok->token_to_piece(id_of(v, "<|return|>"), true) == "<|return|>");
}

TEST_CASE("harmony vocab: an eot id naming <|end|> is cleared", "[text][vocab][harmony]") {
  Vocab file = vocab_with(kHarmonyTokens, "eot");
  file.eot_id = id_of(file, "<|end|>");
  const auto tok = Tokenizer::create(file);
  CHECK(tok->vocab().eot_id == -1);
  CHECK_FALSE(tok->vocab().is_end_of_generation(id_of(file, "<|end|>")));
}

TEST_CASE("harmony vocab: other vocabularies keep their rules", "[text][vocab][harmony]") {
  // Phi-3: <|end|> ends the turn; nothing is harmony.
  {
    const Vocab file = vocab_with({"<|end|>", "<|user|>", "<|assistant|>"}, "phi3");
    CHECK_FALSE(is_harmony_vocab(file));
    const auto tok = Tokenizer::create(file);
    CHECK(tok->vocab().is_end_of_generation(id_of(file, "<|end|>")));
    CHECK(tok->token_to_piece(id_of(file, "<|end|>")).empty());
  }
  // Markers without <|return|> and <|call|>: rendered, but <|end|> still ends.
  {
    const Vocab file = vocab_with({"<|start|>", "<|end|>", "<|message|>", "<|channel|>"}, "partial");
    CHECK(is_harmony_vocab(file));
    const auto tok = Tokenizer::create(file);
    CHECK(tok->vocab().is_end_of_generation(id_of(file, "<|end|>")));
    CHECK(tok->token_to_piece(id_of(file, "<|channel|>")) == "<|channel|>");
  }
  // A lone <|start|> (no <|channel|>): left a control token.
  {
    const Vocab file = vocab_with({"<|start|>", "<|message|>"}, "lone");
    const auto tok = Tokenizer::create(file);
    CHECK(tok->token_to_piece(id_of(file, "<|start|>")).empty());
  }
}
