// Vocabulary learning for generated models. Both kinds learn merges by pair
// frequency over the distinct words of the text, with incremental pair
// counts: each merge only revisits the words that contain the merged pair
// (pair -> words index), so a 32000-token vocab trains in seconds.
//
// SPM: the text is normalized as the SPM tokenizer does (spaces -> U+2581,
// one U+2581 in front); words are runs of U+2581 followed by characters of
// one class (letters, numbers, punctuation and symbols, ...), with newline
// runs as words of their own (see word_boundary). A piece learned at
// step k scores -k, and a merge is applied to the words exactly as the
// tokenizer will apply it (every adjacent pair whose concatenation is a
// piece, highest score first, leftmost first), so encoding a training word
// reproduces its training segmentation.
//
// BPE: byte-level, words from the pre-tokenizer the options name (default
// "llama3"); merges are listed in rank order and applied to the words by
// rank, as the tokenizer does.
//
// Gemma 4: SPM's normalized text and words (without the space prefix),
// learned and listed as BPE merges by rank.
#include "engine/text/tokenizer_trainer.h"
#include "engine/text/tokenizer_trainer_detail.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/text/pre_tokenizer.h"
#include "engine/text/tokenizer_impl.h"
#include "engine/text/unicode.h"

namespace tc::text {
namespace {

constexpr char32_t kSpaceMarkerCpt = 0x2581;
constexpr int32_t kSpmFixedTokens = 3 + 256;  // <unk>, <s>, </s>, <0x00>..<0xFF>
constexpr const char* kBpeBos = "<|begin_of_text|>";
constexpr const char* kBpeEos = "<|end_of_text|>";

using PairKey = uint64_t;
PairKey pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
int32_t pair_left(PairKey k) { return static_cast<int32_t>(k >> 32); }
int32_t pair_right(PairKey k) { return static_cast<int32_t>(k & 0xFFFFFFFFu); }

struct Word {
  std::string text;
  std::vector<int32_t> syms;
  int64_t freq = 0;
};

// How the tokenizer that will use the vocab picks merges (the trainer
// applies merges to its words the same way).
enum class MergeMode {
  BpeRanks,   // BPE: adjacent pairs that are merges, lowest rank first
  SpmScores,  // SPM: adjacent pairs whose concatenation is a piece, best score first
};

struct Merge {
  int32_t left;
  int32_t right;
  int32_t result;   // symbol id of the concatenation
  bool new_symbol;  // false when the concatenation already was a symbol
};

// Learns merges over `words`, whose symbols index `symbols` (the initial
// alphabet). Ties between equally frequent pairs go to the pair whose
// (left, right) texts sort first.
class MergeLearner {
 public:
  MergeLearner(std::vector<std::string> symbols, std::vector<Word> words, MergeMode mode,
               std::unordered_set<std::string> blocked)
      : mode_(mode), sym_text_(std::move(symbols)), words_(std::move(words)),
        blocked_(std::move(blocked)) {
    sym_rank_.assign(sym_text_.size(), -1);
    for (size_t i = 0; i < sym_text_.size(); ++i) {
      sym_index_.emplace(sym_text_[i], static_cast<int32_t>(i));
    }
    word_stamp_.assign(words_.size(), 0);
    for (size_t w = 0; w < words_.size(); ++w) {
      const Word& word = words_[w];
      for (size_t i = 0; i + 1 < word.syms.size(); ++i) {
        const PairKey k = pair_key(word.syms[i], word.syms[i + 1]);
        auto [it, inserted] = counts_.try_emplace(k, 0);
        if (inserted) note_new_pair(k);
        it->second += word.freq;
        auto& list = where_[k];
        if (list.empty() || list.back() != static_cast<int32_t>(w)) {
          list.push_back(static_cast<int32_t>(w));
        }
      }
    }
    for (const auto& [k, c] : counts_) push(k, c);
  }

  // Learns until `max_new_symbols` new symbols exist or no pair is left.
  void learn(int64_t max_new_symbols) {
    int64_t n_new = 0;
    while (n_new < max_new_symbols && !heap_.empty()) {
      const HeapEntry top = heap_.top();
      heap_.pop();
      const auto it = counts_.find(top.key);
      const int64_t current = it == counts_.end() ? 0 : it->second;
      if (current != top.count) {
        if (current > 0) push(top.key, current);  // stale entry: requeue
        continue;
      }
      if (current <= 0 || blocked_keys_.count(top.key)) continue;
      const int32_t a = pair_left(top.key);
      const int32_t b = pair_right(top.key);
      std::string joined = sym_text_[static_cast<size_t>(a)] + sym_text_[static_cast<size_t>(b)];
      if (blocked_.count(joined)) {
        blocked_keys_.insert(top.key);
        continue;
      }
      int32_t result;
      bool is_new = false;
      if (const auto found = sym_index_.find(joined); found != sym_index_.end()) {
        if (mode_ == MergeMode::SpmScores) {  // cannot happen: such pairs are merged eagerly
          blocked_keys_.insert(top.key);
          continue;
        }
        result = found->second;
      } else {
        result = static_cast<int32_t>(sym_text_.size());
        sym_text_.push_back(joined);
        sym_rank_.push_back(static_cast<int32_t>(merges_.size()));
        sym_index_.emplace(std::move(joined), result);
        is_new = true;
        ++n_new;
      }
      merge_rank_.emplace(top.key, std::pair{static_cast<int32_t>(merges_.size()), result});
      merges_.push_back({a, b, result, is_new});
      apply(top.key);
    }
  }

  const std::vector<Merge>& merges() const { return merges_; }
  const std::string& text(int32_t sym) const { return sym_text_[static_cast<size_t>(sym)]; }
  const std::vector<Word>& words() const { return words_; }

 private:
  struct HeapEntry {
    int64_t count;
    PairKey key;
  };
  struct HeapOrder {
    const MergeLearner* self;
    // true when x ranks below y: fewer occurrences, or texts sorting later.
    bool operator()(const HeapEntry& x, const HeapEntry& y) const {
      if (x.count != y.count) return x.count < y.count;
      const std::string& xl = self->text(pair_left(x.key));
      const std::string& yl = self->text(pair_left(y.key));
      if (xl != yl) return xl > yl;
      return self->text(pair_right(x.key)) > self->text(pair_right(y.key));
    }
  };

  void push(PairKey k, int64_t count) {
    if (count > 0 && !blocked_keys_.count(k)) heap_.push({count, k});
  }

  void note_new_pair(PairKey k) {
    if (mode_ != MergeMode::SpmScores) return;
    concat_pairs_[text(pair_left(k)) + text(pair_right(k))].push_back(k);
  }

  // The words that may contain `key` (for SPM: any pair with the same text).
  std::vector<int32_t> candidate_words(PairKey key) {
    std::vector<int32_t> out;
    const auto collect = [&](PairKey k) {
      const auto it = where_.find(k);
      if (it == where_.end()) return;
      for (const int32_t w : it->second) {
        if (word_stamp_[static_cast<size_t>(w)] == stamp_) continue;
        word_stamp_[static_cast<size_t>(w)] = stamp_;
        out.push_back(w);
      }
    };
    ++stamp_;
    if (mode_ == MergeMode::SpmScores) {
      const auto it = concat_pairs_.find(text(pair_left(key)) + text(pair_right(key)));
      if (it != concat_pairs_.end()) {
        for (const PairKey k : it->second) collect(k);
      }
    } else {
      collect(key);
    }
    return out;
  }

  // The merge the tokenizer would apply to the adjacent symbols a b: its
  // priority (lower first) and result, or rank -1 when there is none. SPM
  // looks the concatenation up among the pieces; BPE looks the pair up
  // among the merges.
  std::pair<int32_t, int32_t> merge_of(int32_t a, int32_t b, std::string& buf) const {
    if (mode_ == MergeMode::BpeRanks) {
      const auto it = merge_rank_.find(pair_key(a, b));
      return it == merge_rank_.end() ? std::pair{-1, -1} : it->second;
    }
    buf.assign(text(a));
    buf += text(b);
    const auto it = sym_index_.find(buf);
    if (it == sym_index_.end()) return {-1, -1};
    return {sym_rank_[static_cast<size_t>(it->second)], it->second};
  }

  // Whether the adjacent symbols a b are a pair the newest merge applies to:
  // the merged pair itself, or for SPM any pair spelling the new piece.
  bool is_newest_pair(int32_t a, int32_t b) const {
    const Merge& m = merges_.back();
    if (mode_ == MergeMode::BpeRanks) return a == m.left && b == m.right;
    const std::string& piece = text(m.result);
    const std::string& l = text(a);
    const std::string& r = text(b);
    return l.size() + r.size() == piece.size() && piece.compare(0, l.size(), l) == 0 &&
           piece.compare(l.size(), r.size(), r) == 0;
  }

  // Brings a word to what the tokenizer makes of it once the newest merge
  // exists: starting from its segmentation so far (in which no known merge
  // applies), repeatedly apply the best-ranked merge, leftmost first. This
  // is usually just the newest merge; a merge can enable an older one. So
  // at first only the newest merge's pairs apply, and after each merge only
  // the two pairs beside the merged symbol are looked up again.
  // Returns whether anything changed.
  bool merge_word(Word& word) {
    auto& s = word.syms;
    if (s.size() < 2) return false;
    const auto newest_rank = static_cast<int32_t>(merges_.size()) - 1;
    auto& ranks = pair_ranks_;  // pair (i, i + 1): {rank, result}, rank -1 when none
    ranks.assign(s.size() - 1, {-1, -1});
    bool any = false;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (is_newest_pair(s[i], s[i + 1])) {
        ranks[i] = {newest_rank, merges_.back().result};
        any = true;
      }
    }
    if (!any) return false;
    std::string buf;
    for (;;) {
      int32_t best_rank = -1;
      size_t best_i = 0;
      for (size_t i = 0; i < ranks.size(); ++i) {
        const int32_t rank = ranks[i].first;
        if (rank >= 0 && (best_rank < 0 || rank < best_rank)) {
          best_rank = rank;
          best_i = i;
        }
      }
      if (best_rank < 0) return true;
      s[best_i] = ranks[best_i].second;
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(best_i) + 1);
      ranks.erase(ranks.begin() + static_cast<std::ptrdiff_t>(best_i));
      if (best_i > 0) ranks[best_i - 1] = merge_of(s[best_i - 1], s[best_i], buf);
      if (best_i < ranks.size()) ranks[best_i] = merge_of(s[best_i], s[best_i + 1], buf);
    }
  }

  void apply(PairKey key) {
    std::unordered_map<PairKey, int64_t> delta;
    std::vector<PairKey> before;
    for (const int32_t w : candidate_words(key)) {
      Word& word = words_[static_cast<size_t>(w)];
      before.clear();
      for (size_t i = 0; i + 1 < word.syms.size(); ++i) {
        before.push_back(pair_key(word.syms[i], word.syms[i + 1]));
      }
      if (!merge_word(word)) continue;
      for (const PairKey k : before) delta[k] -= word.freq;
      for (size_t i = 0; i + 1 < word.syms.size(); ++i) {
        const PairKey k = pair_key(word.syms[i], word.syms[i + 1]);
        delta[k] += word.freq;
        if (std::find(before.begin(), before.end(), k) == before.end()) {
          auto& list = where_[k];
          if (list.empty() || list.back() != w) list.push_back(w);
        }
      }
    }
    // Deterministic order is not needed here: counts commute and the heap
    // breaks ties by text.
    for (const auto& [k, d] : delta) {
      if (d == 0) continue;
      auto [it, inserted] = counts_.try_emplace(k, 0);
      if (inserted) note_new_pair(k);
      it->second += d;
      if (d > 0) push(k, it->second);
    }
  }

  MergeMode mode_;
  std::vector<std::string> sym_text_;
  std::vector<int32_t> sym_rank_;  // merge step that created the symbol, -1 for the alphabet
  detail::TokenIndex sym_index_;
  std::vector<Word> words_;
  std::unordered_set<std::string> blocked_;
  std::unordered_set<PairKey> blocked_keys_;
  std::unordered_map<PairKey, int64_t> counts_;
  std::unordered_map<PairKey, std::vector<int32_t>> where_;
  std::unordered_map<std::string, std::vector<PairKey>> concat_pairs_;
  std::vector<uint32_t> word_stamp_;
  uint32_t stamp_ = 0;
  std::vector<Merge> merges_;
  std::unordered_map<PairKey, std::pair<int32_t, int32_t>> merge_rank_;  // BPE: rank, result
  std::vector<std::pair<int32_t, int32_t>> pair_ranks_;  // merge_word's scratch
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, HeapOrder> heap_{HeapOrder{this}};
};

// Distinct words with their counts, in sorted order (deterministic).
std::vector<std::pair<std::string, int64_t>> count_words(const std::vector<std::string_view>& words) {
  std::unordered_map<std::string_view, int64_t> counts;
  for (const std::string_view w : words) ++counts[w];
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(counts.size());
  for (const auto& [w, c] : counts) out.emplace_back(std::string(w), c);
  std::sort(out.begin(), out.end());
  return out;
}

// The words with their segmentation as token ids.
std::vector<detail::TrainedWord> trained_words(const MergeLearner& learner, const Vocab& v) {
  detail::TokenIndex index;
  for (size_t i = 0; i < v.tokens.size(); ++i) index.emplace(v.tokens[i], static_cast<TokenId>(i));
  std::vector<detail::TrainedWord> out;
  out.reserve(learner.words().size());
  for (const Word& w : learner.words()) {
    detail::TrainedWord t{w.text, w.freq, {}};
    for (const int32_t sym : w.syms) {
      const auto it = index.find(learner.text(sym));
      t.ids.push_back(it == index.end() ? -1 : it->second);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Next "<unused_N>" name that is not a token yet.
std::string next_unused_name(int64_t& n, const detail::TokenIndex& taken) {
  for (;;) {
    std::string name = "<unused_" + std::to_string(n++) + ">";
    if (!taken.count(name)) return name;
  }
}

// Character classes that SPM pieces do not mix, like SentencePiece's
// split_by_unicode_script / split_by_number (letters with their marks,
// numbers, other whitespace, everything else).
int char_class(char32_t c) {
  switch (category(c)) {
    case Category::Letter:
    case Category::Mark:
      return 0;
    case Category::Number:
      return 1;
    default:
      return is_whitespace(c) ? 2 : 3;
  }
}

// Whether an SPM training word ends between `prev` and `c`. The rule only
// looks at the two characters, so no learned piece ever contains such a
// pair, and the tokenizer (which sees the whole text) cannot merge across a
// boundary either.
bool word_boundary(char32_t prev, char32_t c) {
  if (c == kSpaceMarkerCpt) return prev != kSpaceMarkerCpt;  // a word starts with its spaces
  if (prev == kSpaceMarkerCpt) return false;                 // ... which attach to what follows
  if ((c == '\n') != (prev == '\n')) return true;            // newline runs stand alone
  return char_class(prev) != char_class(c);
}

// The SPM fixed tokens: <unk>, <s>, </s>, <0x00>..<0xFF>.
void add_spm_fixed_tokens(Vocab& v) {
  const auto add = [&](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
    v.scores.push_back(0.0f);
  };
  add("<unk>", TokenType::Unknown);
  add("<s>", TokenType::Control);
  add("</s>", TokenType::Control);
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(std::string{'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'}, TokenType::Byte);
}

// The text as an SPM-style tokenizer sees it (spaces as U+2581, one more in
// front with `space_prefix`), cut into words at word_boundary; the alphabet
// is its characters, most frequent first.
struct SpmStyleWords {
  std::vector<std::string> alphabet;
  std::vector<Word> words;
};

SpmStyleWords spm_style_words(std::string_view raw, bool space_prefix) {
  std::vector<char32_t> cpts;
  if (space_prefix) cpts.push_back(kSpaceMarkerCpt);
  for (const char32_t c : utf8_to_codepoints(raw)) cpts.push_back(c == ' ' ? kSpaceMarkerCpt : c);
  std::unordered_map<char32_t, int64_t> char_freq;
  for (const char32_t c : cpts) ++char_freq[c];
  std::vector<std::pair<char32_t, int64_t>> chars(char_freq.begin(), char_freq.end());
  std::sort(chars.begin(), chars.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  });
  SpmStyleWords out;
  std::unordered_map<char32_t, int32_t> char_sym;
  for (const auto& [c, f] : chars) {
    char_sym.emplace(c, static_cast<int32_t>(out.alphabet.size()));
    out.alphabet.push_back(utf8_encode(c));
  }

  std::vector<std::string_view> word_views;
  std::string normalized;
  std::vector<size_t> starts;  // byte offsets of word starts in `normalized`
  for (size_t i = 0; i < cpts.size(); ++i) {
    if (i == 0 || word_boundary(cpts[i - 1], cpts[i])) starts.push_back(normalized.size());
    utf8_append(normalized, cpts[i]);
  }
  starts.push_back(normalized.size());
  for (size_t i = 0; i + 1 < starts.size(); ++i) {
    word_views.push_back(std::string_view(normalized).substr(starts[i], starts[i + 1] - starts[i]));
  }
  for (auto& [text, freq] : count_words(word_views)) {
    Word w;
    w.freq = freq;
    for (const char32_t c : utf8_to_codepoints(text)) w.syms.push_back(char_sym.at(c));
    w.text = std::move(text);
    out.words.push_back(std::move(w));
  }
  return out;
}

// The alphabet's characters that become tokens, most frequent first, at most
// `max_chars`; a reserved one (the caller's own token, e.g. a user-defined
// "\n") is left to the caller.
std::vector<size_t> char_tokens(const std::vector<std::string>& alphabet, const std::vector<std::string>& reserved,
                                int64_t max_chars) {
  const std::unordered_set<std::string> reserved_set(reserved.begin(), reserved.end());
  std::vector<size_t> out;
  for (size_t i = 0; i < alphabet.size() && static_cast<int64_t>(out.size()) < max_chars; ++i) {
    if (!reserved_set.count(alphabet[i])) out.push_back(i);
  }
  return out;
}

// Appends the characters and the learned pieces, scored as SPM scores them
// (piece k: -k; the characters after the last piece), then pads with
// "<unused_N>" to vocab_size.
void add_chars_and_pieces(Vocab& v, const std::vector<std::string>& alphabet, const std::vector<size_t>& chars,
                          std::vector<std::string> pieces, int32_t vocab_size) {
  const auto add = [&](std::string text, TokenType type, float score) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
    v.scores.push_back(score);
  };
  const auto n_pieces = static_cast<int64_t>(pieces.size());
  for (size_t i = 0; i < chars.size(); ++i) {
    add(alphabet[chars[i]], TokenType::Normal, -static_cast<float>(n_pieces + static_cast<int64_t>(i)));
  }
  for (int64_t k = 0; k < n_pieces; ++k) {
    add(std::move(pieces[static_cast<size_t>(k)]), TokenType::Normal, -static_cast<float>(k));
  }
  detail::TokenIndex taken;
  for (size_t i = 0; i < v.tokens.size(); ++i) taken.emplace(v.tokens[i], static_cast<TokenId>(i));
  int64_t unused = 0;
  while (v.n_vocab() < vocab_size) add(next_unused_name(unused, taken), TokenType::Unused, 0.0f);
}

void check_spm_style_size(int32_t vocab_size, const char* what) {
  if (vocab_size < kSpmFixedTokens) {
    throw std::invalid_argument("vocab_size " + std::to_string(vocab_size) + " is too small for " + what +
                                ": it needs at least " + std::to_string(kSpmFixedTokens) +
                                " tokens (<unk>, <s>, </s> and 256 byte pieces)");
  }
}

detail::TrainOutput train_spm(std::string_view raw, int32_t vocab_size,
                              const std::vector<std::string>& reserved) {
  check_spm_style_size(vocab_size, "an SPM vocab");
  Vocab v;
  v.kind = TokenizerKind::Spm;
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  v.add_eos = false;
  v.add_space_prefix = true;
  add_spm_fixed_tokens(v);

  SpmStyleWords text = spm_style_words(raw, true);
  const std::vector<size_t> chars = char_tokens(text.alphabet, reserved, vocab_size - kSpmFixedTokens);
  const int64_t max_pieces = vocab_size - kSpmFixedTokens - static_cast<int64_t>(chars.size());

  // A learned piece must never let two symbols spell a fixed or reserved
  // token ("<s>", "<0x41>", ...), or plain text could encode to a control
  // token: no piece may be a proper prefix or suffix of one, nor one itself.
  std::unordered_set<std::string> blocked(reserved.begin(), reserved.end());
  const auto block_affixes = [&](const std::string& t) {
    for (size_t len = 2; len < t.size(); ++len) {
      blocked.insert(t.substr(0, len));
      blocked.insert(t.substr(t.size() - len));
    }
  };
  for (int32_t i = 0; i < kSpmFixedTokens; ++i) block_affixes(v.tokens[static_cast<size_t>(i)]);
  for (const std::string& t : reserved) block_affixes(t);

  MergeLearner learner(text.alphabet, std::move(text.words), MergeMode::SpmScores, std::move(blocked));
  learner.learn(max_pieces);
  std::vector<std::string> pieces;
  for (const Merge& m : learner.merges()) {
    if (m.new_symbol) pieces.push_back(learner.text(m.result));
  }
  add_chars_and_pieces(v, text.alphabet, chars, std::move(pieces), vocab_size);
  std::vector<detail::TrainedWord> trained = trained_words(learner, v);
  return {std::move(v), std::move(trained)};
}

// Gemma 4's kind: SPM's text, words and fixed tokens, but merges by rank
// (listed) as its BPE applies them, and no space prefix. Merges never join
// across a word boundary (the boundary rule looks at two characters only),
// so the tokenizer, which merges whole lines, segments as training did.
detail::TrainOutput train_gemma4(std::string_view raw, int32_t vocab_size,
                                 const std::vector<std::string>& reserved) {
  check_spm_style_size(vocab_size, "a gemma4 vocab");
  Vocab v;
  v.kind = TokenizerKind::Gemma4;
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  v.add_eos = false;
  v.add_space_prefix = false;
  add_spm_fixed_tokens(v);

  SpmStyleWords text = spm_style_words(raw, false);
  const std::vector<size_t> chars = char_tokens(text.alphabet, reserved, vocab_size - kSpmFixedTokens);
  const int64_t max_pieces = vocab_size - kSpmFixedTokens - static_cast<int64_t>(chars.size());

  // Merges only make what they are learned for: blocking the texts
  // themselves keeps every token text unique.
  std::unordered_set<std::string> blocked(reserved.begin(), reserved.end());
  blocked.insert(v.tokens.begin(), v.tokens.end());
  MergeLearner learner(text.alphabet, std::move(text.words), MergeMode::BpeRanks, std::move(blocked));
  learner.learn(max_pieces);
  std::vector<std::string> pieces;
  for (const Merge& m : learner.merges()) {
    v.merges.push_back(learner.text(m.left) + " " + learner.text(m.right));
    if (m.new_symbol) pieces.push_back(learner.text(m.result));
  }
  add_chars_and_pieces(v, text.alphabet, chars, std::move(pieces), vocab_size);
  std::vector<detail::TrainedWord> trained = trained_words(learner, v);
  return {std::move(v), std::move(trained)};
}

detail::TrainOutput train_bpe(std::string_view raw, int32_t vocab_size, const std::string& pre_name,
                              const std::vector<std::string>& reserved) {
  const auto pre = pre_tokenizer_from_name(pre_name);
  if (!pre) {
    throw std::invalid_argument("unsupported pre-tokenizer '" + pre_name + "'; supported: " +
                                std::string(supported_pre_tokenizer_names()));
  }
  if (*pre == PreTokenizer::Gemma4) {
    throw std::invalid_argument("pre-tokenizer '" + pre_name + "' is not byte-level: train TokenizerKind::Gemma4");
  }
  if (vocab_size < 256 + 2) {
    throw std::invalid_argument("vocab_size " + std::to_string(vocab_size) +
                                " is too small for a byte-level BPE vocab: it needs at least 258 "
                                "tokens (256 bytes, " + kBpeBos + ", " + kBpeEos + ")");
  }
  Vocab v;
  v.kind = TokenizerKind::Bpe;
  v.pre = pre_name;
  v.add_bos = true;
  v.add_eos = false;
  v.add_space_prefix = false;

  std::vector<std::string> alphabet;
  for (int b = 0; b < 256; ++b) alphabet.emplace_back(byte_to_unicode_utf8(static_cast<uint8_t>(b)));

  const std::string text = utf8_sanitize(raw);
  std::vector<Word> words;
  for (auto& [word, freq] : count_words(pre_tokenize(*pre, text))) {
    Word w;
    w.freq = freq;
    for (const char c : word) w.syms.push_back(static_cast<uint8_t>(c));
    w.text = std::move(word);
    words.push_back(std::move(w));
  }

  // Learned tokens are byte-char text: reserved texts are blocked as such.
  std::unordered_set<std::string> blocked{kBpeBos, kBpeEos};
  for (const std::string& t : reserved) {
    std::string chars;
    for (const char c : t) chars += byte_to_unicode_utf8(static_cast<uint8_t>(c));
    blocked.insert(std::move(chars));
  }
  MergeLearner learner(alphabet, std::move(words), MergeMode::BpeRanks, std::move(blocked));
  learner.learn(vocab_size - 256 - 2);

  for (auto& a : alphabet) v.tokens.push_back(std::move(a));
  for (const Merge& m : learner.merges()) {
    v.merges.push_back(learner.text(m.left) + " " + learner.text(m.right));
    if (m.new_symbol) v.tokens.push_back(learner.text(m.result));
  }
  v.types.assign(v.tokens.size(), TokenType::Normal);
  detail::TokenIndex taken;
  for (size_t i = 0; i < v.tokens.size(); ++i) taken.emplace(v.tokens[i], static_cast<TokenId>(i));
  taken.emplace(kBpeBos, -1);
  taken.emplace(kBpeEos, -1);
  int64_t unused = 0;
  while (v.n_vocab() < vocab_size - 2) {
    v.tokens.push_back(next_unused_name(unused, taken));
    v.types.push_back(TokenType::Unused);
  }
  v.bos_id = v.n_vocab();
  v.tokens.emplace_back(kBpeBos);
  v.types.push_back(TokenType::Control);
  v.eos_id = v.n_vocab();
  v.tokens.emplace_back(kBpeEos);
  v.types.push_back(TokenType::Control);
  std::vector<detail::TrainedWord> trained = trained_words(learner, v);
  return {std::move(v), std::move(trained)};
}

}  // namespace

namespace detail {

TrainOutput train_vocab_detailed(std::string_view text, const TrainerOptions& options) {
  switch (options.kind) {
    case TokenizerKind::Spm:
      return train_spm(text, options.vocab_size, options.reserved);
    case TokenizerKind::Bpe:
      return train_bpe(text, options.vocab_size, options.pre, options.reserved);
    case TokenizerKind::Gemma4:
      return train_gemma4(text, options.vocab_size, options.reserved);
    case TokenizerKind::Wpm:
      throw std::invalid_argument("the trainer learns no WordPiece vocab: lay one out from SPM pieces "
                                  "(profiler/family_vocab's bert family)");
    case TokenizerKind::Ugm:
      throw std::invalid_argument("the trainer learns no unigram vocab: score SPM pieces "
                                  "(profiler/family_vocab's xlmr family)");
  }
  throw std::invalid_argument("unknown tokenizer kind");
}

}  // namespace detail

Vocab train_vocab(std::string_view text, const TrainerOptions& options) {
  return detail::train_vocab_detailed(text, options).vocab;
}

}  // namespace tc::text
