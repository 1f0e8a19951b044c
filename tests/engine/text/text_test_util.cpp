// Implementation of the text test helpers.
#include "tests/engine/text/text_test_util.h"

#include <catch2/catch.hpp>

#include <map>
#include <mutex>

#include "tests/test_util.h"

namespace tc::text::test {

const std::string& corpus() {
  static const std::string text =
      tc::test::read_file(tc::test::source_dir() / "profiler" / "data" / "tokenizer_corpus.txt");
  return text;
}

namespace {

struct Trained {
  Vocab vocab;
  std::unique_ptr<Tokenizer> tokenizer;
};

const Trained& trained(TokenizerKind kind, int32_t vocab_size) {
  static std::mutex mu;
  static std::map<std::pair<int, int32_t>, Trained> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{static_cast<int>(kind), vocab_size}];
  if (!slot.tokenizer) {
    slot.vocab = train_vocab(corpus(), {kind, vocab_size});
    slot.tokenizer = Tokenizer::create(slot.vocab);
  }
  return slot;
}

}  // namespace

const Vocab& trained_vocab(TokenizerKind kind, int32_t vocab_size) {
  return trained(kind, vocab_size).vocab;
}

const Tokenizer& trained_tokenizer(TokenizerKind kind, int32_t vocab_size) {
  return *trained(kind, vocab_size).tokenizer;
}

Vocab spm_vocab(const std::vector<std::pair<std::string, float>>& pieces) {
  Vocab v;
  v.kind = TokenizerKind::Spm;
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  const auto add = [&](std::string text, TokenType type, float score) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
    v.scores.push_back(score);
  };
  add("<unk>", TokenType::Unknown, 0);
  add("<s>", TokenType::Control, 0);
  add("</s>", TokenType::Control, 0);
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    add(std::string{'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'}, TokenType::Byte, 0);
  }
  for (const auto& [text, score] : pieces) add(text, TokenType::Normal, score);
  return v;
}

std::vector<TokenId> ids_of(const Vocab& vocab, const std::vector<std::string>& texts) {
  std::vector<TokenId> ids;
  for (const auto& t : texts) {
    const auto it = std::find(vocab.tokens.begin(), vocab.tokens.end(), t);
    INFO("token '" << t << "'");
    REQUIRE(it != vocab.tokens.end());
    ids.push_back(static_cast<TokenId>(it - vocab.tokens.begin()));
  }
  return ids;
}

std::vector<std::string> texts_of(const Vocab& vocab, const std::vector<TokenId>& ids) {
  std::vector<std::string> out;
  for (const TokenId id : ids) {
    if (id >= 0 && id < vocab.n_vocab()) {
      out.push_back(vocab.tokens[static_cast<size_t>(id)]);
    } else {
      out.push_back(std::to_string(id));  // not a token id
    }
  }
  return out;
}

}  // namespace tc::text::test
