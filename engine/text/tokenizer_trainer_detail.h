// The trainer with its view of the text exposed, for tests: every distinct
// training word with its count and the tokens it ended up as. Encoding a
// word must give back those tokens (the SPM scores are chosen so that it
// does). Same determinism as train_vocab.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer_trainer.h"
#include "engine/text/vocab.h"

namespace tc::text::detail {

struct TrainedWord {
  std::string text;           // SPM, Gemma 4: normalized (spaces as U+2581); BPE: raw bytes
  int64_t count = 0;          // occurrences in the text
  std::vector<TokenId> ids;   // its final segmentation; -1 for a symbol left out of the vocab
};

struct TrainOutput {
  Vocab vocab;
  std::vector<TrainedWord> words;  // sorted by text
};

TrainOutput train_vocab_detailed(std::string_view text, const TrainerOptions& options);

}  // namespace tc::text::detail
