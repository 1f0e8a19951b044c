// make_family_vocab: the trainer's pieces laid out with each family's
// special tokens, token types and tokenizer keys as their converted GGUF
// files have them (llama.cpp's convert_hf_to_gguf: added tokens marked
// special are control, the others user-defined with U+2581 written as a
// space; padding ids are "[PADn]" unused tokens; Gemma 4's markers that
// replies carry are user-defined).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/unicode.h"
#include "profiler/family_vocab.h"
#include "profiler/tokenizer_corpus.h"

namespace tc::profiler {
namespace {

using text::TokenType;
using text::Vocab;

constexpr int32_t kQwenLearned = 151643;  // ids below Qwen's first added token
constexpr int32_t kQwenVocab = 151936;
constexpr int32_t kGemmaVocab = 262144;
constexpr int kGemmaUnusedHead = 99;      // <unused0..98> at ids 6..104
constexpr int kGemmaUnusedTotal = 6242;   // <unused0..6241>
constexpr int kGemmaRunLength = 31;       // longest newline / space / tab run token
constexpr int32_t kBertVocab = 30522;
constexpr int kBertUnusedHead = 99;       // [unused0..98] at ids 1..99
constexpr int kBertUnusedTotal = 994;     // [unused0..993], the last at id 998
constexpr size_t kBertChars = 1000;       // most frequent characters other than CJK ideographs
constexpr size_t kBertCjkChars = 2000;    // most frequent CJK ideographs (only ever whole words)
constexpr int32_t kBertTrainerVocab = 48000;  // SPM pieces to pick the learned ones from
const std::string kSpaceMarker = "\xE2\x96\x81";  // U+2581

// Qwen2.5's added tokens and Qwen3's four more, in id order; `special`
// false makes them user-defined (matched in text even without
// parse_special).
struct AddedToken {
  const char* text;
  bool special;
};
constexpr AddedToken kQwenAdded[] = {
    {"<|endoftext|>", true},      {"<|im_start|>", true},     {"<|im_end|>", true},
    {"<|object_ref_start|>", true}, {"<|object_ref_end|>", true}, {"<|box_start|>", true},
    {"<|box_end|>", true},        {"<|quad_start|>", true},   {"<|quad_end|>", true},
    {"<|vision_start|>", true},   {"<|vision_end|>", true},   {"<|vision_pad|>", true},
    {"<|image_pad|>", true},      {"<|video_pad|>", true},    {"<tool_call>", false},
    {"</tool_call>", false},      {"<|fim_prefix|>", true},   {"<|fim_middle|>", true},
    {"<|fim_suffix|>", true},     {"<|fim_pad|>", true},      {"<|repo_name|>", true},
    {"<|file_sep|>", true},       {"<tool_response>", false}, {"</tool_response>", false},
    {"<think>", false},           {"</think>", false},
};

// Gemma's user-defined HTML tags (a selection of the ones its tokenizer has).
constexpr const char* kGemmaTags[] = {
    "<table>", "<caption>", "<thead>", "<tbody>", "<tfoot>", "<tr>", "<th>", "<td>", "</table>", "</caption>",
    "</thead>", "</tbody>", "</tfoot>", "</tr>", "</th>", "</td>", "<h1>", "<h2>", "<h3>", "<h4>", "<h5>", "<h6>",
    "</h1>", "</h2>", "</h3>", "</h4>", "</h5>", "</h6>", "<blockquote>", "</blockquote>", "<strong>", "</strong>",
    "<em>", "</em>", "<b>", "</b>", "<i>", "</i>", "<u>", "</u>", "<s>", "</s>", "<sub>", "</sub>", "<sup>",
    "</sup>", "<code>", "</code>",
};

// Gemma 4's chat, thinking and tool markers after <unused0..98>, typed as
// llama.cpp's converter writes them: the ones a reply's parser reads are
// user-defined (always rendered), the others control.
struct Marker {
  const char* text;
  TokenType type;
};
constexpr Marker kGemma4Markers[] = {
    {"<|turn>", TokenType::Control},         {"<turn|>", TokenType::Control},
    {"<|think|>", TokenType::Control},       {"<|tool>", TokenType::Control},
    {"<tool|>", TokenType::Control},         {"<|tool_call>", TokenType::UserDefined},
    {"<tool_call|>", TokenType::UserDefined}, {"<|tool_response>", TokenType::UserDefined},
    {"<tool_response|>", TokenType::UserDefined}, {"<|channel>", TokenType::UserDefined},
    {"<channel|>", TokenType::UserDefined},  {"<|\"|>", TokenType::UserDefined},
};
constexpr const char* kGemma4TailMarkers[] = {"<|image>", "<image|>", "<|audio>", "<audio|>"};

void add(Vocab& v, std::string text, TokenType type, float score = 0.0f) {
  v.tokens.push_back(std::move(text));
  v.types.push_back(type);
  v.scores.push_back(score);
}

Vocab qwen2_vocab(const std::string& text) {
  text::TrainerOptions options;
  options.kind = text::TokenizerKind::Bpe;
  options.vocab_size = kQwenLearned + 2;  // the trainer's own BOS and EOS come last and are dropped
  options.pre = "qwen2";
  for (const AddedToken& t : kQwenAdded) options.reserved.emplace_back(t.text);
  Vocab learned = text::train_vocab(text, options);

  Vocab v;
  v.kind = text::TokenizerKind::Bpe;
  v.pre = "qwen2";
  v.tokens.assign(learned.tokens.begin(), learned.tokens.begin() + kQwenLearned);
  v.types.assign(learned.types.begin(), learned.types.begin() + kQwenLearned);
  v.merges = std::move(learned.merges);
  for (const AddedToken& t : kQwenAdded) {
    v.tokens.emplace_back(t.text);
    v.types.push_back(t.special ? TokenType::Control : TokenType::UserDefined);
  }
  while (v.n_vocab() < kQwenVocab) {
    v.tokens.push_back("[PAD" + std::to_string(v.n_vocab()) + "]");
    v.types.push_back(TokenType::Unused);
  }
  v.bos_id = kQwenLearned;      // <|endoftext|>
  v.pad_id = kQwenLearned;
  v.eos_id = kQwenLearned + 2;  // <|im_end|>
  v.unk_id = -1;
  v.add_bos = false;
  v.add_eos = false;
  v.add_space_prefix = false;
  return v;
}

// The ids both Gemma families open with: <pad>, <eos>, <bos>, <unk>,
// <mask>, [multimodal] and the first unused tokens; BOS added, no space prefix.
Vocab gemma_head(text::TokenizerKind kind) {
  Vocab v;
  v.kind = kind;
  v.pad_id = 0;
  v.eos_id = 1;
  v.bos_id = 2;
  v.unk_id = 3;
  v.add_bos = true;
  v.add_eos = false;
  v.add_space_prefix = false;
  add(v, "<pad>", TokenType::Control);
  add(v, "<eos>", TokenType::Control);
  add(v, "<bos>", TokenType::Control);
  add(v, "<unk>", TokenType::Unknown);
  add(v, "<mask>", TokenType::Control);
  add(v, "[multimodal]", TokenType::Control);
  for (int i = 0; i < kGemmaUnusedHead; ++i) add(v, "<unused" + std::to_string(i) + ">", TokenType::Control);
  return v;
}

Vocab gemma3_vocab(const std::string& text) {
  Vocab v = gemma_head(text::TokenizerKind::Spm);
  add(v, "<start_of_turn>", TokenType::Control);
  add(v, "<end_of_turn>", TokenType::Control);
  // Runs of newlines, spaces (U+2581 in Gemma's model, a space in its GGUF
  // files) and tabs, then HTML tags: user-defined, scored as added tokens.
  for (int n = 1; n <= kGemmaRunLength; ++n) add(v, std::string(static_cast<size_t>(n), '\n'), TokenType::UserDefined, -1000.0f);
  for (int n = 2; n <= kGemmaRunLength; ++n) add(v, std::string(static_cast<size_t>(n), ' '), TokenType::UserDefined, -1000.0f);
  for (int n = 1; n <= kGemmaRunLength; ++n) add(v, std::string(static_cast<size_t>(n), '\t'), TokenType::UserDefined, -1000.0f);
  for (const char* tag : kGemmaTags) add(v, tag, TokenType::UserDefined, -1000.0f);
  const auto n_head = v.n_vocab();

  std::vector<std::string> tail = {"<start_of_image>", "<end_of_image>"};
  for (int i = kGemmaUnusedHead; i < kGemmaUnusedTotal; ++i) tail.push_back("<unused" + std::to_string(i) + ">");

  // The trainer's layout: <unk>, <s>, </s>, <0x00>..<0xFF>, pieces. Its
  // first three are dropped; the byte pieces and the rest are kept.
  constexpr int32_t kTrainerSpecials = 3;
  text::TrainerOptions options;
  options.kind = text::TokenizerKind::Spm;
  options.vocab_size = kGemmaVocab - n_head - static_cast<int32_t>(tail.size()) + kTrainerSpecials;
  options.reserved.assign(v.tokens.begin(), v.tokens.end());
  options.reserved.insert(options.reserved.end(), tail.begin(), tail.end());
  // The space runs as the model's pieces spell them, so no learned piece is one.
  for (int n = 2; n <= kGemmaRunLength; ++n) {
    std::string run;
    for (int k = 0; k < n; ++k) run += "\xE2\x96\x81";
    options.reserved.push_back(std::move(run));
  }
  Vocab learned = text::train_vocab(text, options);
  for (size_t i = kTrainerSpecials; i < learned.tokens.size(); ++i) {
    add(v, std::move(learned.tokens[i]), learned.types[i], learned.scores[i]);
  }
  for (auto& t : tail) add(v, std::move(t), TokenType::Control);
  if (v.n_vocab() != kGemmaVocab) throw std::logic_error("gemma3 vocab has " + std::to_string(v.n_vocab()) + " tokens");
  return v;
}

// As Gemma 3's head, with Gemma 4's markers in place of its turn tokens,
// newline runs as normal tokens that no merge reaches (llama.cpp takes such a
// run whole) and the learned part as BPE merges over U+2581-spaced text.
Vocab gemma4_vocab(const std::string& text) {
  Vocab v = gemma_head(text::TokenizerKind::Gemma4);
  for (const Marker& m : kGemma4Markers) add(v, m.text, m.type);
  for (int n = 1; n <= kGemmaRunLength; ++n) add(v, std::string(static_cast<size_t>(n), '\n'), TokenType::Normal);
  for (const char* tag : kGemmaTags) add(v, tag, TokenType::UserDefined);
  const auto n_head = v.n_vocab();

  std::vector<std::string> tail(std::begin(kGemma4TailMarkers), std::end(kGemma4TailMarkers));
  for (int i = kGemmaUnusedHead; i < kGemmaUnusedTotal; ++i) tail.push_back("<unused" + std::to_string(i) + ">");

  // The trainer's layout: <unk>, <s>, </s>, <0x00>..<0xFF>, characters,
  // pieces. Its first three are dropped; the rest and its merges are kept.
  constexpr int32_t kTrainerSpecials = 3;
  text::TrainerOptions options;
  options.kind = text::TokenizerKind::Gemma4;
  options.vocab_size = kGemmaVocab - n_head - static_cast<int32_t>(tail.size()) + kTrainerSpecials;
  options.reserved.assign(v.tokens.begin(), v.tokens.end());
  options.reserved.insert(options.reserved.end(), tail.begin(), tail.end());
  Vocab learned = text::train_vocab(text, options);
  for (size_t i = kTrainerSpecials; i < learned.tokens.size(); ++i) {
    add(v, std::move(learned.tokens[i]), learned.types[i], learned.scores[i]);
  }
  v.merges = std::move(learned.merges);
  for (auto& t : tail) add(v, std::move(t), TokenType::Control);
  if (v.n_vocab() != kGemmaVocab) throw std::logic_error("gemma4 vocab has " + std::to_string(v.n_vocab()) + " tokens");
  return v;
}

// bert-base-uncased's layout as llama.cpp's converter writes it: [PAD],
// [unused0..98], [UNK], [CLS], [SEP], [MASK] (the five control), more
// [unusedN] to id 998 (normal, as "\u2581[unusedN]"), then characters and
// word pieces with "##x" written "x" and a word start "w" written U+2581 + w.
// The pieces are the SPM trainer's, learned from the training text as BERT's
// uncased normalizer and splitter leave it (lowercase, no accents,
// punctuation and CJK ideographs apart), so they are pieces WPM can match.
Vocab bert_vocab(const std::string& text) {
  Vocab v;
  v.kind = text::TokenizerKind::Wpm;
  v.pad_id = 0;
  v.unk_id = 100;
  v.bos_id = 101;  // [CLS]
  v.sep_id = 102;
  v.mask_id = 103;
  v.eos_id = -1;
  v.add_bos = true;
  v.add_sep = true;
  v.add_eos = false;
  v.add_space_prefix = false;
  v.normalizer_lowercase = true;
  v.normalizer_strip_accents = true;
  const auto unused = [&](int i) { add(v, kSpaceMarker + "[unused" + std::to_string(i) + "]", TokenType::Normal); };
  add(v, "[PAD]", TokenType::Control);
  for (int i = 0; i < kBertUnusedHead; ++i) unused(i);
  for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) add(v, s, TokenType::Control);
  for (int i = kBertUnusedHead; i < kBertUnusedTotal; ++i) unused(i);

  std::string normalized;
  normalized.reserve(text.size());
  std::unordered_map<char32_t, size_t> counts;
  for (const std::string& word : text::wpm_words(text::utf8_sanitize(text), true, true)) {
    normalized += word;
    normalized += ' ';
    for (size_t pos = 0; pos < word.size();) ++counts[text::utf8_decode(word, pos)];
  }
  // The shipped corpus's characters first (its CJK among the synthetic
  // text's random ideographs), then by frequency.
  std::unordered_set<char32_t> in_corpus;
  for (const std::string& word : text::wpm_words(text::utf8_sanitize(tokenizer_corpus()), true, true)) {
    for (size_t pos = 0; pos < word.size();) in_corpus.insert(text::utf8_decode(word, pos));
  }
  std::vector<std::pair<char32_t, size_t>> by_count(counts.begin(), counts.end());
  std::sort(by_count.begin(), by_count.end(), [&](const auto& a, const auto& b) {
    const bool ca = in_corpus.count(a.first) > 0, cb = in_corpus.count(b.first) > 0;
    if (ca != cb) return ca;
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  // Characters WPM makes one-character words of: punctuation, ASCII symbols, CJK ideographs.
  const auto alone = [](char32_t c) {
    const text::Category cat = text::category(c);
    return cat == text::Category::Punctuation || (c < 0x7F && cat == text::Category::Symbol) || text::is_bert_cjk(c);
  };
  std::vector<char32_t> chars, cjk;
  for (const auto& [c, n] : by_count) {
    auto& list = text::is_bert_cjk(c) ? cjk : chars;
    if (list.size() < (text::is_bert_cjk(c) ? kBertCjkChars : kBertChars)) list.push_back(c);
  }
  std::unordered_set<std::string> taken(v.tokens.begin(), v.tokens.end());
  const auto add_new = [&](std::string t) {
    if (v.n_vocab() < kBertVocab && taken.insert(t).second) add(v, std::move(t), TokenType::Normal);
  };
  for (const char32_t c : chars) add_new(kSpaceMarker + text::utf8_encode(c));
  for (const char32_t c : cjk) add_new(kSpaceMarker + text::utf8_encode(c));
  for (const char32_t c : chars) {
    if (!alone(c)) add_new(text::utf8_encode(c));
  }

  text::TrainerOptions options;
  options.kind = text::TokenizerKind::Spm;
  options.vocab_size = kBertTrainerVocab;
  const Vocab learned = text::train_vocab(normalized, options);
  for (size_t i = 0; i < learned.tokens.size() && v.n_vocab() < kBertVocab; ++i) {
    if (learned.types[i] != TokenType::Normal) continue;  // <unk>, <s>, </s>, bytes, padding
    const std::string& t = learned.tokens[i];
    const bool start = t.compare(0, kSpaceMarker.size(), kSpaceMarker) == 0;
    const std::string body = start ? t.substr(kSpaceMarker.size()) : t;
    // One word as BERT's splitter leaves it, with no U+2581 inside, that
    // the character lists above do not already cover.
    if (body.empty() || body.find(kSpaceMarker) != std::string::npos) continue;
    const std::vector<std::string> words = text::wpm_words(body, true, true);
    if (words.size() != 1 || words[0] != body) continue;
    size_t pos = 0;
    if (alone(text::utf8_decode(body, pos))) continue;
    add_new(t);
  }
  for (int i = kBertUnusedTotal; v.n_vocab() < kBertVocab; ++i) unused(i);
  v.scores.clear();  // converted BERT files carry no scores
  return v;
}

}  // namespace

std::string_view vocab_family_name(VocabFamily family) {
  switch (family) {
    case VocabFamily::Qwen2:
      return "qwen2";
    case VocabFamily::Gemma3:
      return "gemma3";
    case VocabFamily::Gemma4:
      return "gemma4";
    case VocabFamily::Bert:
      return "bert";
    case VocabFamily::Xlmr:
      return "xlmr";
  }
  return "?";
}

std::optional<VocabFamily> vocab_family_from_name(std::string_view name) {
  if (name == "qwen2") return VocabFamily::Qwen2;
  if (name == "gemma3") return VocabFamily::Gemma3;
  if (name == "gemma4") return VocabFamily::Gemma4;
  if (name == "bert") return VocabFamily::Bert;
  if (name == "xlmr") return VocabFamily::Xlmr;
  return std::nullopt;
}

text::Vocab make_family_vocab(VocabFamily family, uint64_t seed) {
  const std::string text = family_training_text(seed);
  switch (family) {
    case VocabFamily::Qwen2:
      return qwen2_vocab(text);
    case VocabFamily::Gemma3:
      return gemma3_vocab(text);
    case VocabFamily::Gemma4:
      return gemma4_vocab(text);
    case VocabFamily::Bert:
      return bert_vocab(text);
    case VocabFamily::Xlmr:
      return detail::xlmr_vocab(text);
  }
  throw std::invalid_argument("unknown vocab family");
}

}  // namespace tc::profiler
