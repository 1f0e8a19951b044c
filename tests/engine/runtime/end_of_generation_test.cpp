// Vocab::is_end_of_generation and the eot id's round trip through GGUF.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/vocab.h"
#include "tests/test_util.h"

using tc::text::TokenType;
using tc::text::Vocab;

namespace {

Vocab chat_vocab() {
  Vocab v;
  v.kind = tc::text::TokenizerKind::Spm;
  const std::vector<std::pair<std::string, TokenType>> tokens = {
      {"<unk>", TokenType::Unknown},         {"<s>", TokenType::Control},
      {"</s>", TokenType::Control},          {"<|im_end|>", TokenType::Control},
      {"<|eot_id|>", TokenType::Control},    {"hello", TokenType::Normal},
      {"<|end|>", TokenType::Normal},        {"<end_of_turn>", TokenType::Control},
      {"<|endoftext|>", TokenType::Control}, {"<|im_start|>", TokenType::Control},
      {"<|end_of_text|>", TokenType::Control},
  };
  for (const auto& [text, type] : tokens) {
    v.tokens.push_back(text);
    v.types.push_back(type);
    v.scores.push_back(0.0f);
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

}  // namespace

TEST_CASE("vocab: end-of-generation tokens", "[engine][vocab]") {
  Vocab v = chat_vocab();
  CHECK(v.eot_id == -1);
  CHECK(v.is_end_of_generation(2));   // eos
  CHECK(v.is_end_of_generation(3));   // <|im_end|>
  CHECK(v.is_end_of_generation(4));   // <|eot_id|>
  CHECK(v.is_end_of_generation(7));   // <end_of_turn>
  CHECK(v.is_end_of_generation(8));   // <|endoftext|>
  CHECK(v.is_end_of_generation(10));  // <|end_of_text|>
  CHECK_FALSE(v.is_end_of_generation(0));
  CHECK_FALSE(v.is_end_of_generation(1));
  CHECK_FALSE(v.is_end_of_generation(5));
  CHECK_FALSE(v.is_end_of_generation(6));  // the text, but a normal token
  CHECK_FALSE(v.is_end_of_generation(9));
  CHECK_FALSE(v.is_end_of_generation(-1));
  CHECK_FALSE(v.is_end_of_generation(11));
  v.eot_id = 5;
  CHECK(v.is_end_of_generation(5));
}

TEST_CASE("vocab: the eot id round-trips through GGUF", "[engine][vocab]") {
  const auto dir = tc::test::scratch_dir("vocab_eot");
  for (const int eot : {-1, 4}) {
    INFO("eot " << eot);
    Vocab v = chat_vocab();
    v.eot_id = eot;
    tc::gguf::GgufWriter w;
    tc::text::write_vocab(v, w);
    const auto path = dir / (eot < 0 ? "no_eot.gguf" : "eot.gguf");
    w.write(path);
    const auto back = tc::text::read_vocab(tc::gguf::GgufFile::open(path));
    CHECK(back.eot_id == eot);
    CHECK(back.eos_id == 2);
  }
}
