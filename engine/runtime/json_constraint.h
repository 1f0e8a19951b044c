// JSON mode: constrains a sequence's tokens so that its generated text is
// one JSON object (OpenAI's response_format {"type": "json_object"},
// Ollama's format "json"). Before each draw, every token whose bytes would
// break the JSON prefix gets logit -inf; end-of-generation tokens are
// allowed only once the object is closed, and then nothing else is.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/text/json_prefix.h"
#include "engine/text/tokenizer.h"

namespace tc::runtime {

// Each token's bytes, computed once per model and shared by its sequences.
struct JsonTokenTable {
  enum class Kind : uint8_t {
    Text,             // ordinary bytes: allowed where they fit
    EndOfGeneration,  // allowed only when the object is complete
    Never,            // control tokens and empty pieces: never allowed
  };
  std::vector<std::string> bytes;  // [n_vocab]: the token's text as it decodes mid-sequence
  std::vector<Kind> kind;          // [n_vocab]

  // n_vocab: the logits' length (the model's output rows; ids the tokenizer
  // does not know are never allowed).
  static std::shared_ptr<const JsonTokenTable> from(const text::Tokenizer& tokenizer, int32_t n_vocab);
};

class JsonConstraint {
 public:
  explicit JsonConstraint(std::shared_ptr<const JsonTokenTable> table);

  // Sets logits[t] = -inf for every token t that cannot come next.
  // logits: f32 [n_vocab]. Tokens already at -inf are not examined.
  void mask(std::span<float> logits) const;
  // Appends a generated token (one mask() allowed) to the text.
  void accept(text::TokenId token);
  // The text is one whole JSON object.
  bool complete() const { return prefix_.complete(); }
  void reset() { prefix_ = text::JsonPrefix(); }

 private:
  std::shared_ptr<const JsonTokenTable> table_;
  text::JsonPrefix prefix_;
};

}  // namespace tc::runtime
