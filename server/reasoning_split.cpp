// The reasoning split's state machine (see reasoning_split.h).
#include "server/reasoning_split.h"

#include <algorithm>

#include "server/partial_marker.h"

namespace tc::server {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

}  // namespace

bool prompt_opens_reasoning(std::string_view prompt) {
  while (!prompt.empty() && is_space(prompt.back())) prompt.remove_suffix(1);
  return prompt.ends_with(kThinkOpen);
}

ReasoningParts split_reasoning(std::string_view reply, bool opened_by_prompt) {
  ReasoningStream stream(opened_by_prompt);
  ReasoningParts out = stream.push(reply);
  ReasoningParts rest = stream.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  return out;
}

ReasoningStream::ReasoningStream(bool opened_by_prompt)
    : state_(opened_by_prompt ? State::Reasoning : State::Start) {}

ReasoningParts ReasoningStream::push(std::string_view text) {
  ReasoningParts out;
  held_.append(text);
  while (true) {
    switch (state_) {
      case State::Start: {
        const std::string_view s = trim_left(held_);
        if (s.size() < kThinkOpen.size() && kThinkOpen.starts_with(s)) return out;  // may still open
        if (s.starts_with(kThinkOpen)) {
          held_.erase(0, held_.size() - s.size() + kThinkOpen.size());
          state_ = State::Reasoning;
          continue;
        }
        state_ = State::Content;
        continue;
      }
      case State::Reasoning: {
        const size_t close = held_.find(kThinkClose);
        if (close == std::string::npos) {
          const size_t keep = partial_marker_suffix(held_, {kThinkClose});
          out.reasoning.append(held_, 0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
          return out;
        }
        out.reasoning.append(held_, 0, close);
        held_.erase(0, close + kThinkClose.size());
        state_ = State::AfterReasoning;
        continue;
      }
      case State::AfterReasoning: {
        const std::string_view s = trim_left(held_);
        if (s.empty()) {
          held_.clear();
          return out;
        }
        held_ = std::string(s);
        state_ = State::Content;
        continue;
      }
      case State::Content:
        out.content += held_;
        held_.clear();
        return out;
    }
  }
}

ReasoningParts ReasoningStream::finish() {
  ReasoningParts out;
  if (state_ == State::Reasoning) out.reasoning = std::move(held_);
  if (state_ == State::Start || state_ == State::Content) out.content = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace tc::server
