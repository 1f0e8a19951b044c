// DRY: the breakers of a vocabulary and the per-step penalty (see
// dry_penalty.h).
#include "engine/runtime/dry_penalty.h"

#include <algorithm>
#include <cmath>

#include "engine/text/tokenizer.h"

namespace tc::runtime {
namespace {

constexpr size_t kMaxBreakerBytes = 40;
constexpr size_t kMaxTailTokens = 20;

// A token's text as llama.cpp's detokenizer gives it for the token alone:
// control tokens rendered, SentencePiece's added leading space dropped.
std::string token_text(const text::Tokenizer& tokenizer, TokenId id) {
  std::string word = tokenizer.token_to_piece(id, true);
  const auto& vocab = tokenizer.vocab();
  if (vocab.kind == text::TokenizerKind::Spm && vocab.add_space_prefix && !word.empty() && word.front() == ' ') {
    word.erase(0, 1);
  }
  return word;
}

void add_tail(DryBreakers& out, TokenId head, std::vector<TokenId> tail) {
  auto [a, b] = out.tails.equal_range(head);
  for (; a != b; ++a) {
    if (a->second == tail) return;
  }
  out.tails.emplace(head, std::move(tail));
}

}  // namespace

bool DryBreakers::is_single_token_breaker(TokenId id) const {
  auto [a, b] = tails.equal_range(id);
  for (; a != b; ++a) {
    if (a->second.empty()) return true;
  }
  return false;
}

std::shared_ptr<const DryBreakers> make_dry_breakers(const text::Tokenizer& tokenizer,
                                                     const std::vector<std::string>& breakers) {
  auto out = std::make_shared<DryBreakers>();
  std::vector<std::string> words(static_cast<size_t>(tokenizer.n_vocab()));
  for (TokenId id = 0; id < tokenizer.n_vocab(); ++id) words[static_cast<size_t>(id)] = token_text(tokenizer, id);
  text::EncodeOptions plain;
  plain.add_special = false;
  plain.parse_special = false;
  for (std::string breaker : breakers) {
    if (breaker.empty()) continue;
    if (breaker.size() > kMaxBreakerBytes) breaker.resize(kMaxBreakerBytes);
    for (TokenId id = 0; id < tokenizer.n_vocab(); ++id) {
      const std::string& word = words[static_cast<size_t>(id)];
      if (word.find(breaker) != std::string::npos) {
        add_tail(*out, id, {});
        continue;
      }
      // The word ends with the breaker's first `rest` bytes: the breaker is
      // whole if the tokens of its remainder follow.
      for (size_t pos = word.find(breaker.front()); pos != std::string::npos;
           pos = word.find(breaker.front(), pos + 1)) {
        const size_t rest = word.size() - pos;
        if (rest >= breaker.size() || word.compare(pos, rest, breaker, 0, rest) != 0) continue;
        std::vector<TokenId> tail = tokenizer.encode(breaker.substr(rest), plain);
        if (tail.size() > kMaxTailTokens) tail.resize(kMaxTailTokens);
        add_tail(*out, id, std::move(tail));
      }
    }
  }
  return out;
}

void apply_dry_penalty(std::span<const TokenId> history, const DryParams& params, const DryBreakers* breakers,
                       std::span<float> logits, std::vector<int32_t>& scratch) {
  const auto n = static_cast<int32_t>(history.size());
  if (params.multiplier == 0.0f || n <= params.allowed_length) return;
  // back(j): the j-th token from the end (back(0) the latest).
  const auto back = [&](int32_t j) { return history[static_cast<size_t>(n - 1 - j)]; };

  // 1. The latest whole breaker bounds how far back a repetition may reach.
  int32_t limit = n;
  if (breakers != nullptr) {
    for (int32_t i = 0; i < n && limit == n; ++i) {
      auto [a, b] = breakers->tails.equal_range(back(i));
      int32_t longest = -1;
      for (; a != b; ++a) {
        const auto& tail = a->second;
        const auto len = static_cast<int32_t>(tail.size());
        if (len <= longest || len > i) continue;
        bool whole = true;
        for (int32_t o = 0; o < len && whole; ++o) whole = tail[static_cast<size_t>(o)] == back(i - o - 1);
        if (whole) longest = len;
      }
      if (longest >= 0) limit = i - longest;
    }
  }
  if (limit < params.allowed_length) return;

  // 2. Z-function of the reversed window: z[k] is how many tokens ending k
  // tokens before the latest one equal the tokens ending at the latest one.
  std::vector<int32_t>& z = scratch;
  z.assign(static_cast<size_t>(n), 0);
  for (int32_t k = 1, left = 0, right = 0; k < n; ++k) {
    int32_t len = k < right ? std::min(right - k, z[static_cast<size_t>(k - left)]) : 0;
    while (k + len < n && back(len) == back(k + len)) ++len;
    z[static_cast<size_t>(k)] = len;
    if (k + len > right) {
      left = k;
      right = k + len;
    }
  }

  // 3. The token after each such earlier occurrence would continue the
  // repetition: the longest one per token.
  std::unordered_map<TokenId, int32_t> longest;
  for (int32_t k = 1; k < n; ++k) {
    const int32_t len = std::min(z[static_cast<size_t>(k)], limit);
    if (len < params.allowed_length) continue;
    const TokenId next = back(k - 1);
    auto [it, fresh] = longest.emplace(next, len);
    if (!fresh) it->second = std::max(it->second, len);
  }

  // 4. The penalties; the exponent bounded so that base^exponent stays finite.
  const int32_t max_exponent = params.base > 1.000001f ? static_cast<int32_t>(88.7228391f / std::log(params.base)) : 0;
  for (const auto& [token, len] : longest) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) continue;
    if (breakers != nullptr && breakers->is_single_token_breaker(token)) continue;
    int32_t exponent = len - params.allowed_length;
    if (max_exponent > 0) exponent = std::min(exponent, max_exponent);
    logits[static_cast<size_t>(token)] -= params.multiplier * std::pow(params.base, static_cast<float>(exponent));
  }
}

}  // namespace tc::runtime
