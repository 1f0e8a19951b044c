// The harmony token rules (see vocab_harmony.h).
#include "engine/text/vocab_harmony.h"

namespace tc::text {
namespace {

TokenId find(const Vocab& vocab, std::string_view text) {
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    if (vocab.tokens[i] == text) return static_cast<TokenId>(i);
  }
  return -1;
}

}  // namespace

bool is_harmony_vocab(const Vocab& vocab) {
  return find(vocab, kHarmonyChannel) >= 0 && find(vocab, kHarmonyMessage) >= 0;
}

void apply_harmony_token_rules(Vocab& vocab) {
  TokenId channel = -1, message = -1, start = -1, constrain = -1, end = -1, ret = -1, call = -1;
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    const std::string& t = vocab.tokens[i];
    if (t.size() < 7 || t[0] != '<' || t[1] != '|') continue;  // "<|end|>" is the shortest
    const auto id = static_cast<TokenId>(i);
    if (t == kHarmonyChannel) channel = id;
    else if (t == kHarmonyMessage) message = id;
    else if (t == kHarmonyStart) start = id;
    else if (t == kHarmonyConstrain) constrain = id;
    else if (t == kHarmonyEnd) end = id;
    else if (t == kHarmonyReturn) ret = id;
    else if (t == kHarmonyCall) call = id;
  }
  if (channel < 0 || message < 0) return;
  if (vocab.types.size() != vocab.tokens.size()) vocab.types.assign(vocab.tokens.size(), TokenType::Normal);
  for (const TokenId id : {channel, message, start, constrain}) {
    if (id >= 0) vocab.types[static_cast<size_t>(id)] = TokenType::UserDefined;
  }
  if (ret >= 0 && call >= 0 && end >= 0) {
    vocab.types[static_cast<size_t>(end)] = TokenType::UserDefined;
    if (vocab.eot_id == end) vocab.eot_id = -1;
  }
}

}  // namespace tc::text
