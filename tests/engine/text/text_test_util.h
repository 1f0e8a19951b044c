// Helpers for the text tests: the shipped corpus and tokenizers trained on
// it (trained once per test binary and cached), and small hand-built vocabs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/vocab.h"

namespace tc::text::test {

// Encoding without BOS or EOS.
inline const EncodeOptions kPlain{false, false};
// U+2581, SentencePiece's word boundary.
inline const std::string kSp = "\xE2\x96\x81";

// profiler/data/tokenizer_corpus.txt
const std::string& corpus();

// Trained on the corpus; cached per (kind, size).
const Vocab& trained_vocab(TokenizerKind kind, int32_t vocab_size);
const Tokenizer& trained_tokenizer(TokenizerKind kind, int32_t vocab_size);

// An SPM vocab laid out as llama's: <unk>, <s>, </s>, <0x00>..<0xFF>, then
// `pieces` (Normal) with their scores.
Vocab spm_vocab(const std::vector<std::pair<std::string, float>>& pieces);

// The ids of `texts` in `vocab` (REQUIREs each to exist).
std::vector<TokenId> ids_of(const Vocab& vocab, const std::vector<std::string>& texts);
// The token texts of `ids`, for readable failure messages.
std::vector<std::string> texts_of(const Vocab& vocab, const std::vector<TokenId>& ids);

}  // namespace tc::text::test
