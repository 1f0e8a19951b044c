// Our tokenizers against llama.cpp's own (libllama, loaded from npm
// @node-llama-cpp/linux-x64): vocabs trained on the shipped corpus (SPM, and
// BPE with each supported pre-tokenizer, at 4096 and 32000 tokens) are
// written as vocab-only GGUF files, loaded by both, and must give the same
// token ids for corpus lines, a long slice and seeded random mixes of tricky
// fragments, and the same piece for every token id. Skips with a warning
// without the library.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/vocab.h"
#include "tests/oracle/llama_tokenizer_oracle.h"
#include "tests/oracle/tokenizer_oracle_checks.h"
#include "tests/test_util.h"

namespace {

using tc::oracle::check_encodings;
using tc::oracle::check_pieces;
using tc::oracle::LlamaVocab;
using tc::oracle::oracle_texts;
using tc::oracle::require_valid_utf8;
using tc::oracle::tokenizer_corpus_text;
using tc::text::Tokenizer;
using tc::text::TokenizerKind;
using tc::text::Vocab;

using namespace std::string_literals;

// Random texts in the default run, per vocab: sized so that the four test
// cases stay under ~30 s together on one core. The [.slow] sweep uses more.
constexpr int kDefaultRandomTexts = 3000;
constexpr int kSlowRandomTexts = 40000;

const char* kind_name(TokenizerKind kind) { return kind == TokenizerKind::Spm ? "spm" : "bpe"; }

// Trains one vocab of `kind` and `size`, and compares our tokenizer with
// llama.cpp's on it for each pre-tokenizer (BPE) on `texts`.
void compare_with_llama(TokenizerKind kind, int32_t size, const std::vector<std::string>& texts) {
  require_valid_utf8(texts);
  const Vocab base = tc::text::train_vocab(tokenizer_corpus_text(), {kind, size});
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
  texts.push_back(tokenizer_corpus_text());
  for (const int32_t size : {4096, 32000}) {
    for (const auto kind : {TokenizerKind::Spm, TokenizerKind::Bpe}) {
      compare_with_llama(kind, size, texts);
    }
  }
}
