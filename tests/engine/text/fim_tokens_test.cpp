// Fill-in-the-middle tokens (fim_tokens.h): the keys written and read back,
// an out-of-range id refused naming its key, the roles found by text in a
// Tokenizer's vocab (made control tokens), the pad/repo/separator tokens
// ending a generation, and the message naming the missing roles. The same
// ids as llama.cpp's loader: tests/oracle/fim_tokens_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_load_error.h"
#include "engine/text/fim_tokens.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"
#include "tests/engine/text/text_test_util.h"
#include "tests/test_util.h"

using namespace tc::text;
using tc::text::test::ids_of;
using tc::text::test::spm_vocab;

namespace {

// A small SPM vocab with `extra` appended as normal tokens.
Vocab vocab_with(const std::vector<std::string>& extra) {
  Vocab v = spm_vocab({{"\xE2\x96\x81", -1}, {"a", -2}, {"b", -3}, {"c", -4}});
  for (const auto& t : extra) {
    v.tokens.push_back(t);
    v.types.push_back(TokenType::Normal);
    v.scores.push_back(0.0f);
  }
  return v;
}

Vocab round_trip(const Vocab& v, const std::string& name) {
  tc::gguf::GgufWriter w;
  write_vocab(v, w);
  const auto path = tc::test::scratch_dir("fim_tokens_" + name) / "vocab.gguf";
  w.write(path);
  return read_vocab(tc::gguf::GgufFile::open(path));
}

}  // namespace

TEST_CASE("FIM ids written as keys read back, and none read where none were written", "[text][vocab][fim]") {
  Vocab v = vocab_with({"<x_pre>", "<x_suf>", "<x_mid>", "<x_sep>"});
  const auto ids = ids_of(v, {"<x_pre>", "<x_suf>", "<x_mid>", "<x_sep>"});
  v.fim.pre = ids[0];
  v.fim.suf = ids[1];
  v.fim.mid = ids[2];
  v.fim.sep = ids[3];
  const Vocab back = round_trip(v, "keys");
  CHECK(back.fim.pre == ids[0]);
  CHECK(back.fim.suf == ids[1]);
  CHECK(back.fim.mid == ids[2]);
  CHECK(back.fim.pad == -1);
  CHECK(back.fim.rep == -1);
  CHECK(back.fim.sep == ids[3]);
  CHECK(back.fim.can_infill());
  // Named by keys, the tokens keep their type, and <x_sep> ends a generation.
  const auto tok = Tokenizer::create(back);
  CHECK(tok->vocab().types[ids[0]] == TokenType::Normal);
  CHECK(tok->vocab().is_end_of_generation(ids[3]));
  CHECK_FALSE(tok->vocab().is_end_of_generation(ids[0]));

  const Vocab none = round_trip(vocab_with({}), "none");
  CHECK_FALSE(none.fim.can_infill());
  CHECK(none.fim.missing() == "prefix and suffix and middle");
}

TEST_CASE("an FIM key out of range is refused naming the key", "[text][vocab][fim]") {
  const Vocab v = vocab_with({});
  tc::gguf::GgufWriter w;
  write_vocab(v, w);
  w.set("tokenizer.ggml.fim_mid_token_id", tc::gguf::Value(static_cast<uint32_t>(v.n_vocab())));
  const auto path = tc::test::scratch_dir("fim_tokens_range") / "vocab.gguf";
  w.write(path);
  try {
    (void)read_vocab(tc::gguf::GgufFile::open(path));
    FAIL("an out-of-range fim_mid_token_id was accepted");
  } catch (const tc::gguf::ModelLoadError& e) {
    CHECK_THAT(e.what(), Catch::Contains("tokenizer.ggml.fim_mid_token_id") && Catch::Contains("out of range"));
  }
}

TEST_CASE("FIM roles found by text become control tokens, and pad, repo and separator end a generation",
          "[text][vocab][fim]") {
  const Vocab v = vocab_with({"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>",
                              "<|file_sep|>", "<PRE>"});
  const auto ids = ids_of(v, {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>",
                              "<|file_sep|>", "<PRE>"});
  const Vocab plain_read = round_trip(v, "text");
  CHECK(plain_read.fim.pre == -1);  // only keys here: text is a Tokenizer's doing
  const auto tok = Tokenizer::create(plain_read);
  const Vocab& r = tok->vocab();
  CHECK(r.fim.pre == ids[0]);  // the lowest matching id: <|fim_prefix|> before <PRE>
  CHECK(r.fim.mid == ids[1]);
  CHECK(r.fim.suf == ids[2]);
  CHECK(r.fim.pad == ids[3]);
  CHECK(r.fim.rep == ids[4]);
  CHECK(r.fim.sep == ids[5]);
  for (int i = 0; i < 6; ++i) CHECK(r.types[ids[i]] == TokenType::Control);
  CHECK(r.types[ids[6]] == TokenType::Normal);  // not chosen: left as the file says
  CHECK(r.is_end_of_generation(ids[3]));
  CHECK(r.is_end_of_generation(ids[4]));
  CHECK(r.is_end_of_generation(ids[5]));
  CHECK_FALSE(r.is_end_of_generation(ids[0]));
  CHECK_FALSE(r.is_end_of_generation(ids[1]));
  // Control now: split off with parse_special, never rendered as text.
  EncodeOptions special;
  special.add_special = false;
  special.parse_special = true;
  CHECK(tok->encode("<|fim_prefix|>", special) == std::vector<TokenId>{ids[0]});
  CHECK(tok->token_to_piece(ids[0]).empty());
  CHECK(tok->token_to_piece(ids[0], true) == "<|fim_prefix|>");
}

TEST_CASE("missing FIM roles are named, and DeepSeek's and CodeLlama's texts are recognised", "[text][vocab][fim]") {
  const auto tok = Tokenizer::create(vocab_with({"<|fim_prefix|>"}));
  CHECK_FALSE(tok->vocab().fim.can_infill());
  CHECK(tok->vocab().fim.missing() == "suffix and middle");
  // DeepSeek's markers, CodeLlama's (led by U+2581) and StarCoder2's; "<pre>" is none.
  const std::string deepseek_hole = "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>";
  const Vocab others = vocab_with({"<pre>", deepseek_hole, "\xE2\x96\x81<MID>", "<fim_prefix>"});
  const auto ids = ids_of(others, {deepseek_hole, "\xE2\x96\x81<MID>", "<fim_prefix>"});
  const auto found = Tokenizer::create(others);
  CHECK(found->vocab().fim.suf == ids[0]);
  CHECK(found->vocab().fim.mid == ids[1]);
  CHECK(found->vocab().fim.pre == ids[2]);
  CHECK(found->vocab().types[ids_of(others, {"<pre>"})[0]] == TokenType::Normal);
}
