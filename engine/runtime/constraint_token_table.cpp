// ConstraintTokenTable's construction (see constraint_token_table.h).
#include "engine/runtime/constraint_token_table.h"

#include <algorithm>

#include "engine/text/json_lexers.h"

namespace tc::runtime {
namespace {

// Whole characters that a string's lexer reads as they are: no quote, no
// escape, ending between characters.
bool string_safe(const std::string& bytes) {
  text::JsonStringLexer lexer;
  for (char c : bytes) {
    if (c == '\\' || lexer.push(static_cast<uint8_t>(c)) != text::JsonStringLexer::Step::Continue) return false;
  }
  return !bytes.empty() && lexer.at_boundary();
}

}  // namespace

std::shared_ptr<const ConstraintTokenTable> ConstraintTokenTable::from(const text::Tokenizer& tokenizer,
                                                                       int32_t n_vocab) {
  auto table = std::make_shared<ConstraintTokenTable>();
  const text::Vocab& vocab = tokenizer.vocab();
  table->bytes.resize(static_cast<size_t>(n_vocab));
  table->kind.resize(static_cast<size_t>(n_vocab), Kind::Never);
  table->plain.resize(static_cast<size_t>(n_vocab), 0);
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
    table->plain[i] = string_safe(table->bytes[i]) ? 1 : 0;
  }
  for (size_t i = 0; i < table->kind.size(); ++i) {
    if (table->kind[i] == Kind::Text) table->trie_order.push_back(static_cast<int32_t>(i));
    if (table->kind[i] == Kind::EndOfGeneration) table->end_of_generation.push_back(static_cast<int32_t>(i));
  }
  const auto& bytes = table->bytes;
  std::sort(table->trie_order.begin(), table->trie_order.end(),
            [&](int32_t a, int32_t b) { return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)]; });
  table->trie_shared.resize(table->trie_order.size(), 0);
  for (size_t k = 0; k < table->trie_order.size(); ++k) {
    const std::string& cur = bytes[static_cast<size_t>(table->trie_order[k])];
    table->max_text_bytes = std::max(table->max_text_bytes, cur.size());
    if (k == 0) continue;
    const std::string& prev = bytes[static_cast<size_t>(table->trie_order[k - 1])];
    const auto diff = std::mismatch(prev.begin(), prev.end(), cur.begin(), cur.end());
    table->trie_shared[k] = static_cast<uint32_t>(diff.first - prev.begin());
  }
  return table;
}

}  // namespace tc::runtime
