// Fill-in-the-middle tokens and the end-of-generation set against llama.cpp's
// loader (libllama's llama_vocab_fim_* and llama_vocab_is_eog) on the same
// vocab-only files: Qwen2's vocabulary (<|fim_prefix|> ... <|file_sep|>,
// found by text), a trained SPM vocabulary with CodeLlama's "▁<PRE>",
// "▁<SUF>", "▁<MID>" and "▁<EOT>" appended as normal tokens (found by text
// and made control tokens), and one whose roles the tokenizer.ggml.fim_*
// keys name (the older prefix/suffix/middle keys winning, as llama.cpp
// reads them). A prompt with the markers tokenizes to the same ids. Skips
// with a warning without libllama.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/vocab.h"
#include "profiler/family_vocab.h"
#include "tests/oracle/llama_tokenizer_oracle.h"
#include "tests/oracle/tokenizer_oracle_checks.h"
#include "tests/test_util.h"

namespace {

using tc::oracle::LlamaVocab;
using tc::text::FimTokens;
using tc::text::TokenId;
using tc::text::Tokenizer;
using tc::text::TokenType;
using tc::text::Vocab;

// Our tokenizer over the file (as the engine reads it) and llama.cpp's agree
// on the six FIM roles and on which ids end a generation.
std::unique_ptr<Tokenizer> check_against_llama(const std::filesystem::path& path) {
  auto ours = Tokenizer::create(tc::text::read_vocab(tc::gguf::GgufFile::open(path)));
  const LlamaVocab ref(path);
  REQUIRE(ref.n_tokens() == ours->n_vocab());
  const FimTokens& a = ours->vocab().fim;
  const FimTokens b = ref.fim();
  CHECK(a.pre == b.pre);
  CHECK(a.suf == b.suf);
  CHECK(a.mid == b.mid);
  CHECK(a.pad == b.pad);
  CHECK(a.rep == b.rep);
  CHECK(a.sep == b.sep);
  int mismatches = 0;
  for (TokenId id = 0; id < ours->n_vocab(); ++id) {
    if (ours->vocab().is_end_of_generation(id) != ref.is_eog(id)) {
      if (++mismatches <= 5) FAIL_CHECK("id " << id << " '" << ours->vocab().tokens[id] << "': ours ends "
                                              << ours->vocab().is_end_of_generation(id) << ", llama.cpp's "
                                              << ref.is_eog(id));
    }
  }
  CHECK(mismatches == 0);
  // A FIM prompt written as text with its markers parses to the same ids.
  if (a.can_infill()) {
    const std::string prompt = ours->token_to_piece(a.pre, true) + "def add(a, b):\n    return" +
                               ours->token_to_piece(a.suf, true) + "\n\nprint(add(1, 2))\n" +
                               ours->token_to_piece(a.mid, true);
    CHECK(ours->encode(prompt, {false, true}) == ref.tokenize(prompt, false, true));
  }
  return ours;
}

Vocab trained_spm() {
  return tc::text::train_vocab(tc::oracle::tokenizer_corpus_text(), {tc::text::TokenizerKind::Spm, 1024});
}

TokenId append_token(Vocab& v, const std::string& text, TokenType type) {
  v.tokens.push_back(text);
  v.types.push_back(type);
  if (!v.scores.empty()) v.scores.push_back(0.0f);
  return v.n_vocab() - 1;
}

}  // namespace

TEST_CASE("Qwen2's FIM tokens and generation ends are llama.cpp's", "[oracle][text][llama][fim]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  const Vocab vocab = tc::profiler::make_family_vocab(tc::profiler::VocabFamily::Qwen2);
  const auto path = tc::test::scratch_dir("fim_oracle_qwen2") / "qwen2.gguf";
  tc::oracle::write_vocab_only_gguf(vocab, path);
  const auto ours = check_against_llama(path);
  const FimTokens& fim = ours->vocab().fim;
  REQUIRE(fim.can_infill());
  CHECK(ours->vocab().tokens[fim.pre] == "<|fim_prefix|>");
  CHECK(ours->vocab().tokens[fim.sep] == "<|file_sep|>");
  CHECK(ours->vocab().is_end_of_generation(fim.pad));
  CHECK_FALSE(ours->vocab().is_end_of_generation(fim.mid));
}

TEST_CASE("CodeLlama's FIM markers found by text, as llama.cpp finds them", "[oracle][text][llama][fim]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  Vocab vocab = trained_spm();
  const TokenId pre = append_token(vocab, "\xE2\x96\x81<PRE>", TokenType::Normal);
  append_token(vocab, "\xE2\x96\x81<SUF>", TokenType::Normal);
  const TokenId mid = append_token(vocab, "\xE2\x96\x81<MID>", TokenType::Normal);
  append_token(vocab, "\xE2\x96\x81<EOT>", TokenType::Normal);
  const auto path = tc::test::scratch_dir("fim_oracle_codellama") / "codellama.gguf";
  tc::oracle::write_vocab_only_gguf(vocab, path);
  const auto ours = check_against_llama(path);
  CHECK(ours->vocab().fim.pre == pre);
  CHECK(ours->vocab().fim.mid == mid);
  CHECK(ours->vocab().types[pre] == TokenType::Control);
  CHECK(ours->token_to_piece(pre).empty());  // a control token: no text unless asked
}

TEST_CASE("FIM roles named by keys, the older keys winning, as llama.cpp reads them", "[oracle][text][llama][fim]") {
  TC_LLAMA_ORACLE_REQUIRE_OR_SKIP();
  Vocab vocab = trained_spm();
  const TokenId p = append_token(vocab, "<code_pre>", TokenType::Control);
  const TokenId s = append_token(vocab, "<code_suf>", TokenType::Control);
  const TokenId m = append_token(vocab, "<code_mid>", TokenType::Control);
  const TokenId pad = append_token(vocab, "<code_pad>", TokenType::Control);
  const TokenId old_mid = append_token(vocab, "<old_mid>", TokenType::Control);
  vocab.fim.pre = p;
  vocab.fim.suf = s;
  vocab.fim.mid = m;
  vocab.fim.pad = pad;
  tc::gguf::GgufWriter w;
  tc::oracle::set_vocab_only_model_keys(w);
  tc::text::write_vocab(vocab, w);
  w.set("tokenizer.ggml.middle_token_id", tc::gguf::Value(static_cast<uint32_t>(old_mid)));
  const auto path = tc::test::scratch_dir("fim_oracle_keys") / "keys.gguf";
  w.write(path);
  const auto ours = check_against_llama(path);
  CHECK(ours->vocab().fim.pre == p);
  CHECK(ours->vocab().fim.mid == old_mid);
  CHECK(ours->vocab().is_end_of_generation(pad));
}
