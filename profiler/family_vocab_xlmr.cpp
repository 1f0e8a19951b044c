// The XLM-RoBERTa-like unigram vocab (VocabFamily::Xlmr): the training text
// normalized as the vocab's own normalizer does it (the NFKC-like charsmap
// of charsmap_builder.h, extra whitespace removed), SPM pieces learned from
// it, then scores re-estimated as a unigram model's log-probabilities: the
// text segmented by the Viterbi search with the current scores, each piece's
// count turned into log((count + 0.1) / (total + 0.1 * n)), three rounds
// from scores -log(2 + trainer rank). Laid out as llama.cpp's converter
// writes XLM-R (<s>, <pad>, </s>, <unk>, pieces by score, <mask>).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/ugm_normalizer.h"
#include "profiler/charsmap_builder.h"
#include "profiler/family_vocab.h"

namespace tc::profiler::detail {

namespace {

using text::TokenId;
using text::TokenType;
using text::Vocab;

constexpr int32_t kXlmrVocab = 64000;
constexpr int32_t kHeadTokens = 4;          // <s>, <pad>, </s>, <unk>
constexpr int32_t kTrainerFixedTokens = 259;  // the trainer's <unk>, <s>, </s>, <0x00>..<0xFF>
constexpr int kScoreRounds = 3;
constexpr double kCountPrior = 0.1;
constexpr size_t kChunkBytes = 1 << 16;
const std::string kSpaceMarker = "\xE2\x96\x81";  // U+2581

// Counts of each piece in the Viterbi segmentation of `normalized` (already
// normalized: U+2581 for spaces) under `scores`. The text is cut before a
// U+2581 about every 64 KB: no piece spans one except at its start.
std::vector<double> piece_counts(const std::vector<std::string>& pieces, const std::vector<float>& scores,
                                 const std::string& normalized) {
  Vocab v;
  v.kind = text::TokenizerKind::Ugm;
  v.tokens.push_back("<unk>");
  v.types.push_back(TokenType::Unknown);
  v.scores.push_back(0.0f);
  v.tokens.insert(v.tokens.end(), pieces.begin(), pieces.end());
  v.types.resize(v.tokens.size(), TokenType::Normal);
  v.scores.insert(v.scores.end(), scores.begin(), scores.end());
  v.unk_id = 0;
  v.eos_id = -1;
  v.add_bos = false;
  v.add_eos = false;
  v.add_space_prefix = false;
  const auto tok = text::Tokenizer::create(std::move(v));
  std::vector<double> counts(pieces.size(), 0.0);
  for (size_t at = 0; at < normalized.size();) {
    size_t end = normalized.find(kSpaceMarker, std::min(normalized.size(), at + kChunkBytes));
    if (end == std::string::npos) end = normalized.size();
    for (const TokenId id : tok->encode(std::string_view(normalized).substr(at, end - at), {false, false})) {
      if (id > 0) counts[static_cast<size_t>(id - 1)] += 1.0;
    }
    at = end;
  }
  return counts;
}

}  // namespace

text::Vocab xlmr_vocab(const std::string& training_text) {
  Vocab v;
  v.kind = text::TokenizerKind::Ugm;
  v.pre = "default";
  v.bos_id = 0;
  v.pad_id = 1;
  v.eos_id = 2;
  v.unk_id = 3;
  v.sep_id = 2;
  v.add_bos = true;
  v.add_eos = true;
  v.add_space_prefix = true;
  v.remove_extra_whitespaces = true;
  v.precompiled_charsmap = build_precompiled_charsmap(compat_normalization_rules());

  // The text as the tokenizer will see it, and for the trainer with spaces
  // again (it puts U+2581 back, and the one in front).
  const std::string normalized = text::UgmNormalizer(v).normalize(training_text);
  std::string spaced;
  spaced.reserve(normalized.size());
  for (size_t i = 0; i < normalized.size();) {
    if (normalized.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
      if (i > 0) spaced.push_back(' ');
      i += kSpaceMarker.size();
    } else {
      spaced.push_back(normalized[i++]);
    }
  }

  const int32_t n_pieces = kXlmrVocab - kHeadTokens - 1;
  text::TrainerOptions options;
  options.kind = text::TokenizerKind::Spm;
  options.vocab_size = n_pieces + kTrainerFixedTokens;
  options.reserved = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  const Vocab learned = text::train_vocab(spaced, options);
  std::vector<std::string> pieces;
  std::vector<float> scores;
  for (size_t i = 0; i < learned.tokens.size(); ++i) {
    if (learned.types[i] != TokenType::Normal) continue;  // <unk>, <s>, </s>, bytes, padding
    pieces.push_back(learned.tokens[i]);
    scores.push_back(-static_cast<float>(std::log(2.0 - static_cast<double>(learned.scores[i]))));
  }
  if (static_cast<int32_t>(pieces.size()) != n_pieces) {
    throw std::logic_error("xlmr vocab: the text gave " + std::to_string(pieces.size()) + " pieces, not " +
                           std::to_string(n_pieces));
  }
  for (int round = 0; round < kScoreRounds; ++round) {
    const std::vector<double> counts = piece_counts(pieces, scores, normalized);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    const double denominator = total + kCountPrior * static_cast<double>(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) {
      scores[i] = static_cast<float>(std::log((counts[i] + kCountPrior) / denominator));
    }
  }

  std::vector<size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  const auto add = [&](std::string text, TokenType type, float score) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
    v.scores.push_back(score);
  };
  add("<s>", TokenType::Control, 0.0f);
  add("<pad>", TokenType::Control, 0.0f);
  add("</s>", TokenType::Control, 0.0f);
  add("<unk>", TokenType::Unknown, 0.0f);
  for (const size_t i : order) add(std::move(pieces[i]), TokenType::Normal, scores[i]);
  add("<mask>", TokenType::Control, 0.0f);
  v.mask_id = v.n_vocab() - 1;
  return v;
}

}  // namespace tc::profiler::detail
