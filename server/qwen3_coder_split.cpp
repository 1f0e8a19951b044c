// The Qwen3-Coder reply parser's state machine (see qwen3_coder_split.h).
#include "server/qwen3_coder_split.h"

#include <algorithm>

#include "server/partial_marker.h"
#include "server/reasoning_split.h"

namespace tc::server {
namespace {

constexpr std::string_view kBlanks = " \t\n\r";
constexpr std::string_view kCallOpen = "<tool_call>";

}  // namespace

bool is_qwen3_coder_template(std::string_view source) {
  return source.find(kCallOpen) != std::string_view::npos &&
         source.find(kQwen3CoderFunction) != std::string_view::npos &&
         source.find("<parameter=") != std::string_view::npos;
}

Qwen3CoderStream::Qwen3CoderStream(bool opens_reasoning, bool split_reasoning, Qwen3CoderTools tools)
    : tools_(std::move(tools)),
      state_(!split_reasoning ? State::Content : opens_reasoning ? State::Reasoning : State::Start) {}

Qwen3CoderParts Qwen3CoderStream::push(std::string_view text) {
  Qwen3CoderParts out;
  buf_.append(text);
  run(out, false);
  return out;
}

Qwen3CoderParts Qwen3CoderStream::finish() {
  Qwen3CoderParts out;
  run(out, true);
  return out;
}

void Qwen3CoderStream::end_call(Qwen3CoderParts& out) {
  if (call_.status() == Qwen3CoderCallReader::Status::Done) {
    out.calls.push_back(call_.call());
    buf_.insert(0, raw_, call_.length());
    state_ = State::AfterCall;
  } else {
    // No call (or one cut short): its text is content as written, read
    // again from after its marker.
    out.content += marker_;
    buf_.insert(0, raw_);
    state_ = State::Content;
  }
  raw_.clear();
}

void Qwen3CoderStream::run(Qwen3CoderParts& out, bool at_end) {
  const bool calls = !tools_.names.empty();
  while (true) {
    switch (state_) {
      case State::Start: {
        // A <think> may open the reply, after blanks.
        const size_t first = std::min(buf_.find_first_not_of(kBlanks), buf_.size());
        const std::string_view rest = std::string_view(buf_).substr(first);
        if (!at_end && rest.size() < kThinkOpen.size() && kThinkOpen.starts_with(rest)) return;
        if (rest.starts_with(kThinkOpen)) {
          buf_.erase(0, first + kThinkOpen.size());
          state_ = State::Reasoning;
        } else {
          state_ = State::Content;
        }
        continue;
      }
      case State::Reasoning: {
        const size_t close = buf_.find(kThinkClose), call = buf_.find(kCallOpen);
        if (close == std::string::npos && call == std::string::npos) {
          const size_t keep = at_end ? 0 : partial_marker_suffix(buf_, {kThinkClose, kCallOpen});
          out.reasoning.append(buf_, 0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        const size_t end = std::min(close, call);
        out.reasoning.append(buf_, 0, end);
        // </think> is dropped; a <tool_call> stays, to be read as a call.
        buf_.erase(0, close < call ? close + kThinkClose.size() : call);
        state_ = close < call ? State::AfterReasoning : State::Content;
        continue;
      }
      case State::AfterReasoning:
      case State::AfterCall:
        // The blanks after </think> or after a call: dropped.
        buf_.erase(0, std::min(buf_.find_first_not_of(kBlanks), buf_.size()));
        if (buf_.empty()) return;
        state_ = State::Content;
        continue;
      case State::Content: {
        if (!calls) {
          out.content += buf_;
          buf_.clear();
          return;
        }
        const size_t open = buf_.find(kCallOpen), function = buf_.find(kQwen3CoderFunction);
        if (open == std::string::npos && function == std::string::npos) {
          const size_t keep = at_end ? 0 : partial_marker_suffix(buf_, {kCallOpen, kQwen3CoderFunction});
          out.content.append(buf_, 0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        const size_t at = std::min(open, function);
        marker_ = at == open ? kCallOpen : kQwen3CoderFunction;
        out.content.append(buf_, 0, at);
        buf_.erase(0, at + marker_.size());
        raw_.clear();
        call_ = Qwen3CoderCallReader(at == open);
        state_ = State::Call;
        continue;
      }
      case State::Call: {
        auto status = call_.status();
        size_t i = 0;
        while (i < buf_.size() && status == Qwen3CoderCallReader::Status::More) status = call_.push(buf_[i++], tools_);
        raw_.append(buf_, 0, i);
        buf_.erase(0, i);
        if (status == Qwen3CoderCallReader::Status::More) {
          if (!at_end) return;
          call_.finish();
        }
        end_call(out);
        continue;
      }
    }
  }
}

Qwen3CoderParts split_qwen3_coder(std::string_view reply, bool opens_reasoning, bool split_reasoning,
                                  const Qwen3CoderTools& tools) {
  Qwen3CoderStream stream(opens_reasoning, split_reasoning, tools);
  Qwen3CoderParts out = stream.push(reply);
  Qwen3CoderParts rest = stream.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  out.calls.insert(out.calls.end(), rest.calls.begin(), rest.calls.end());
  return out;
}

}  // namespace tc::server
