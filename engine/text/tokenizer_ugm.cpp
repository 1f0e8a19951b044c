// Unigram (`tokenizer.ggml.model` = "t5": SentencePiece's unigram model, the
// tokenizer of T5 and of XLM-RoBERTa's embedding and reranking models), the
// algorithm of llama.cpp's llm_tokenizer_ugm_session: each text fragment is
// normalized (UgmNormalizer), then a Viterbi search over its bytes picks
// the segmentation whose token scores sum highest. From each character
// start, every normal, user-defined (score 0) or unused token the text
// continues with is a candidate (a trie walk); a character no single token
// covers may also be <unk> with the lowest normal score minus 10. Sums are
// doubles and ties keep the first candidate found, as there; runs of <unk>
// become one. There is no byte fallback: byte tokens only render.
//
// Which tokens are candidates, which are user-defined and the lowest score
// come from the token types the vocab was given, before TokenizerBase turns
// end-of-generation markers into control tokens (llama.cpp builds its
// tokenizer before that step; a user-defined marker it makes control keeps
// its user-defined score there).
//
// Input is not sanitized first: invalid UTF-8 is replaced by the
// normalizer exactly as llama.cpp's is.
#include <algorithm>
#include <cfloat>
#include <string>
#include <vector>

#include "engine/text/byte_trie.h"
#include "engine/text/tokenizer_impl.h"
#include "engine/text/ugm_normalizer.h"

namespace tc::text::detail {
namespace {

constexpr float kUnknownPenalty = 10.0f;

// The length of the UTF-8 sequence a lead byte announces, by its high four
// bits, as llama.cpp's unicode_len_utf8 (1 for continuation bytes).
size_t lead_length(char c) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[static_cast<uint8_t>(c) >> 4];
}

// What the search needs from the vocab as given (see the file comment).
struct UgmTables {
  explicit UgmTables(const Vocab& vocab) : normalizer(vocab) {
    const size_t n = vocab.tokens.size();
    const auto type = [&](size_t i) { return vocab.types.empty() ? TokenType::Normal : vocab.types[i]; };
    float min_score = FLT_MAX;
    std::vector<std::pair<std::string_view, int32_t>> keys;
    keys.reserve(n);
    given_user_defined.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      const TokenType t = type(i);
      const float s = vocab.scores.empty() ? 0.0f : vocab.scores[i];
      if (t == TokenType::Normal) min_score = std::min(min_score, s);
      if (t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Unused) {
        keys.emplace_back(vocab.tokens[i], static_cast<int32_t>(i));
      }
      given_user_defined[i] = t == TokenType::UserDefined;
    }
    unknown_score = min_score - kUnknownPenalty;  // float arithmetic, as there
    tokens = ByteTrie(std::move(keys));
  }

  UgmNormalizer normalizer;
  ByteTrie tokens;                       // candidates: normal, user-defined and unused tokens
  std::vector<bool> given_user_defined;  // per id
  float unknown_score;
};

class UgmTokenizer final : public TokenizerBase {
 public:
  explicit UgmTokenizer(Vocab vocab) : UgmTokenizer(UgmTables(vocab), std::move(vocab)) {}

  std::vector<TokenId> encode(std::string_view text, EncodeOptions options) const override {
    std::vector<TokenId> out;
    if (options.add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
    for (const Fragment& f : partition(text, options.parse_special)) {
      if (f.token >= 0) {
        out.push_back(f.token);
      } else {
        tokenize(tables_.normalizer.normalize(f.text), out);
      }
    }
    if (options.add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
    return out;
  }

 private:
  // `vocab` is only moved from after `tables` is made from it.
  UgmTokenizer(UgmTables tables, Vocab&& vocab) : TokenizerBase(std::move(vocab)), tables_(std::move(tables)) {
    const size_t n = vocab_.tokens.size();
    search_scores_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      // llama.cpp asks at tokenize time: a given user-defined token stays one
      // unless Gemma 4's rule made it a normal token.
      const bool user_defined = tables_.given_user_defined[i] && vocab_.types[i] != TokenType::Normal;
      search_scores_[i] = user_defined ? 0.0 : (vocab_.scores.empty() ? 0.0 : static_cast<double>(vocab_.scores[i]));
    }
    build_pieces();
  }

  void append_normal_piece(const std::string& token_text, std::string& out) const override {
    append_unmarked(token_text, out);
  }

  // The best segmentation ending at a byte offset so far: its last token,
  // where that token starts, and the summed score.
  struct Best {
    TokenId token;
    size_t start;
    double score;
  };

  void tokenize(const std::string& text, std::vector<TokenId>& out) const {
    const size_t n = text.size();
    if (n == 0) return;
    const TokenId unk = vocab_.unk_id;
    std::vector<Best> best(n + 1, Best{unk, 0, -DBL_MAX});
    best[0] = {unk, 0, 0.0};
    for (size_t at = 0; at < n;) {
      const size_t char_len = std::min(lead_length(text[at]), n - at);
      const double base = best[at].score;
      bool whole_char_token = false;
      int32_t node = tables_.tokens.child(ByteTrie::kRoot, static_cast<uint8_t>(text[at]));
      for (size_t end = at + 1; node != ByteTrie::kNone; ++end) {
        if (const int32_t id = tables_.tokens.value(node); id >= 0) {
          if (end - at == char_len) whole_char_token = true;
          const double score = base + search_scores_[static_cast<size_t>(id)];
          if (score > best[end].score) best[end] = {id, at, score};
        }
        if (end == n) break;
        node = tables_.tokens.child(node, static_cast<uint8_t>(text[end]));
      }
      if (!whole_char_token) {
        const double score = base + tables_.unknown_score;
        Best& b = best[at + char_len];
        if (score > b.score) b = {unk, at, score};
      }
      at += char_len;
    }
    // Back from the end; a run of <unk> gives one.
    const size_t first = out.size();
    bool prev_unknown = false;
    for (size_t end = n;;) {
      const Best& b = best[end];
      const bool unknown = b.token == unk;
      if (!(prev_unknown && unknown) && b.token >= 0) out.push_back(b.token);
      if (b.start == 0) break;
      prev_unknown = unknown;
      end = b.start;
    }
    std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  }

  UgmTables tables_;
  std::vector<double> search_scores_;  // per id: 0 for user-defined tokens, else the score
};

}  // namespace

std::unique_ptr<Tokenizer> make_ugm_tokenizer(Vocab vocab) {
  return std::make_unique<UgmTokenizer>(std::move(vocab));
}

}  // namespace tc::text::detail
