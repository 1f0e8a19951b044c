// JSON mode's token mask (see json_constraint.h). Per draw, the bytes that
// may come next are found once (256 tries of the prefix), which rules out
// most tokens by their first byte; the rest are tried whole on a copy of
// the prefix.
#include "engine/runtime/json_constraint.h"

#include <algorithm>
#include <array>
#include <limits>

#include "kernels/check.h"

namespace tc::runtime {

std::shared_ptr<const JsonTokenTable> JsonTokenTable::from(const text::Tokenizer& tokenizer, int32_t n_vocab) {
  auto table = std::make_shared<JsonTokenTable>();
  const text::Vocab& vocab = tokenizer.vocab();
  table->bytes.resize(static_cast<size_t>(n_vocab));
  table->kind.resize(static_cast<size_t>(n_vocab), Kind::Never);
  for (text::TokenId id = 0; id < std::min(n_vocab, tokenizer.n_vocab()); ++id) {
    const auto i = static_cast<size_t>(id);
    if (vocab.is_end_of_generation(id)) {
      table->kind[i] = Kind::EndOfGeneration;
      continue;
    }
    const text::TokenType type = vocab.types.empty() ? text::TokenType::Normal : vocab.types[i];
    if (type == text::TokenType::Control || type == text::TokenType::Unused) continue;
    table->bytes[i] = tokenizer.token_to_piece(id);
    if (!table->bytes[i].empty()) table->kind[i] = Kind::Text;
  }
  return table;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonTokenTable> table) : table_(std::move(table)) {
  TC_CHECK(table_ != nullptr, "JsonConstraint needs a token table");
}

void JsonConstraint::mask(std::span<float> logits) const {
  TC_CHECK(logits.size() == table_->bytes.size(), "JsonConstraint::mask: logits size != n_vocab");
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  const bool done = prefix_.complete();
  std::array<bool, 256> first{};
  for (int b = 0; b < 256; ++b) {
    text::JsonPrefix copy = prefix_;
    first[static_cast<size_t>(b)] = copy.push(static_cast<uint8_t>(b));
  }
  for (size_t t = 0; t < logits.size(); ++t) {
    if (logits[t] == kMinusInf) continue;
    bool allowed = false;
    switch (table_->kind[t]) {
      case JsonTokenTable::Kind::EndOfGeneration:
        allowed = done;
        break;
      case JsonTokenTable::Kind::Text: {
        const std::string& bytes = table_->bytes[t];
        allowed = first[static_cast<uint8_t>(bytes[0])] && (bytes.size() == 1 || prefix_.accepts(bytes));
        break;
      }
      case JsonTokenTable::Kind::Never:
        break;
    }
    if (!allowed) logits[t] = kMinusInf;
  }
}

void JsonConstraint::accept(text::TokenId token) {
  TC_CHECK(token >= 0 && static_cast<size_t>(token) < table_->bytes.size(), "JsonConstraint::accept: bad token id");
  const auto t = static_cast<size_t>(token);
  if (table_->kind[t] != JsonTokenTable::Kind::Text) return;
  // A token mask() let through always fits; one it did not (a caller that
  // appends something else) leaves the prefix where the bytes stop fitting.
  prefix_.push(table_->bytes[t]);
}

}  // namespace tc::runtime
