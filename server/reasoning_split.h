// Reasoning split: a thinking model's reply (Qwen3, QwQ, DeepSeek-R1 and
// its distills) opens with its reasoning in <think>...</think>; clients
// show that apart from the answer when it comes as OpenAI-style
// `reasoning_content` (llama.cpp's server, vLLM) or Ollama's `thinking`.
// The rule is llama.cpp's "deepseek" reasoning format: reasoning only at the
// start of the reply (after leading whitespace), or from the first token when
// the prompt itself ends by opening it (templates that append "<think>\n");
// a reply whose reasoning never closes is all reasoning; whitespace after
// </think> is dropped; a <think> later in the reply is content.
#pragma once

#include <string>
#include <string_view>

namespace tc::server {

inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

struct ReasoningParts {
  std::string reasoning;
  std::string content;
};

// Whether a rendered chat prompt ends inside an opened reasoning block: its
// last non-whitespace text is <think>.
bool prompt_opens_reasoning(std::string_view prompt);

// Splits a whole reply.
ReasoningParts split_reasoning(std::string_view reply, bool opened_by_prompt);

// The same split over a reply that arrives in pieces: each push returns
// what can be told apart so far (text that may still be part of a tag is
// held back); finish() returns the rest. The pieces' concatenation equals
// split_reasoning of the whole reply, however it was cut.
class ReasoningStream {
 public:
  explicit ReasoningStream(bool opened_by_prompt);
  ReasoningParts push(std::string_view text);
  ReasoningParts finish();

 private:
  enum class State { Start, Reasoning, AfterReasoning, Content };
  State state_;
  std::string held_;  // Start: the reply so far; Reasoning: a possible start of </think>
};

}  // namespace tc::server
