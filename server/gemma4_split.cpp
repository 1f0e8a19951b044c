// The Gemma 4 reply parser's state machine (see gemma4_split.h).
#include "server/gemma4_split.h"

#include <algorithm>

#include "server/partial_marker.h"

namespace tc::server {
namespace {

constexpr std::string_view kBlanks = " \t\n\r";

// Whether `s` may still become `word` (a proper prefix of it, or empty).
bool may_become(std::string_view s, std::string_view word) { return s.size() < word.size() && word.starts_with(s); }

}  // namespace

bool is_gemma4_template(std::string_view source) {
  return source.find(kGemma4CallOpen) != std::string_view::npos ||
         source.find(kGemma4ChannelOpen) != std::string_view::npos;
}

bool prompt_opens_gemma4_thought(std::string_view prompt) {
  const size_t last = prompt.find_last_not_of(kBlanks);
  if (last == std::string_view::npos) return false;
  prompt = prompt.substr(0, last + 1);
  if (!prompt.ends_with(kGemma4Thought)) return false;
  return prompt.substr(0, prompt.size() - kGemma4Thought.size()).ends_with(kGemma4ChannelOpen);
}

std::vector<int32_t> gemma4_marker_ids(const std::vector<std::string>& pieces) {
  constexpr std::string_view kMarkers[] = {kGemma4ChannelOpen, kGemma4ChannelClose, kGemma4CallOpen,
                                           kGemma4CallClose,   kGemma4Quote,        "<|turn>"};
  std::vector<int32_t> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& p = pieces[i];
    if (p.size() < 5 || p.size() > 12 || p[0] != '<') continue;
    if (std::find(std::begin(kMarkers), std::end(kMarkers), p) != std::end(kMarkers)) {
      out.push_back(static_cast<int32_t>(i));
    }
  }
  return out;
}

Gemma4Stream::Gemma4Stream(bool opens_thought, bool split_reasoning, std::vector<std::string> names)
    : split_reasoning_(split_reasoning),
      names_(std::move(names)),
      state_(opens_thought ? State::Blank : State::Start) {}

Gemma4Parts Gemma4Stream::push(std::string_view text) {
  Gemma4Parts out;
  buf_.append(text);
  run(out, false);
  return out;
}

Gemma4Parts Gemma4Stream::finish() {
  Gemma4Parts out;
  run(out, true);
  return out;
}

void Gemma4Stream::run(Gemma4Parts& out, bool at_end) {
  const bool calls = !names_.empty();
  while (true) {
    switch (state_) {
      case State::Start:
        // The model turn's opening, when the model writes it itself: dropped.
        if (!at_end && may_become(buf_, kGemma4TurnModel)) return;
        if (buf_.starts_with(kGemma4TurnModel)) buf_.erase(0, kGemma4TurnModel.size());
        state_ = State::Content;
        continue;
      case State::Content: {
        size_t at = std::string::npos;
        std::string_view marker;
        for (const std::string_view m : {kGemma4ChannelOpen, kGemma4ChannelClose, kGemma4CallOpen}) {
          if (m == kGemma4CallOpen && !calls) continue;
          const size_t found = buf_.find(m);
          if (found < at) {
            at = found;
            marker = m;
          }
        }
        if (at == std::string::npos) {
          size_t keep = 0;
          if (!at_end) {
            keep = calls ? partial_marker_suffix(buf_, {kGemma4ChannelOpen, kGemma4ChannelClose, kGemma4CallOpen})
                         : partial_marker_suffix(buf_, {kGemma4ChannelOpen, kGemma4ChannelClose});
          }
          out.content.append(buf_, 0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        out.content.append(buf_, 0, at);
        buf_.erase(0, at + marker.size());
        if (marker == kGemma4ChannelOpen) {
          raw_ = kGemma4ChannelOpen;
          state_ = State::Channel;
        } else if (marker == kGemma4CallOpen) {
          raw_.clear();
          call_ = Gemma4CallReader();
          state_ = State::Call;
        }  // else a <channel|> outside a thought: dropped
        continue;
      }
      case State::Channel:
        // After <|channel>: a thought, more <|channel> markers (dropped
        // before a thought), or none of these (content as written).
        if (buf_.starts_with(kGemma4Thought)) {
          buf_.erase(0, kGemma4Thought.size());
          if (!split_reasoning_) out.content += std::string(kGemma4ChannelOpen) + std::string(kGemma4Thought);
          raw_.clear();
          state_ = State::Blank;
          continue;
        }
        if (buf_.starts_with(kGemma4ChannelOpen)) {
          raw_ += kGemma4ChannelOpen;
          buf_.erase(0, kGemma4ChannelOpen.size());
          continue;
        }
        if (!at_end && (may_become(buf_, kGemma4Thought) || may_become(buf_, kGemma4ChannelOpen))) return;
        out.content += raw_;
        raw_.clear();
        state_ = State::Content;
        continue;
      case State::Blank: {
        // The blanks after `thought`: left out of the reasoning.
        const size_t n = std::min(buf_.find_first_not_of(kBlanks), buf_.size());
        if (!split_reasoning_) out.content.append(buf_, 0, n);
        buf_.erase(0, n);
        if (buf_.empty()) return;
        state_ = State::Thought;
        continue;
      }
      case State::Thought: {
        std::string& sink = split_reasoning_ ? out.reasoning : out.content;
        const size_t end = buf_.find(kGemma4ChannelClose);
        if (end == std::string::npos) {
          const size_t keep = at_end ? 0 : partial_marker_suffix(buf_, {kGemma4ChannelClose});
          sink.append(buf_, 0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        sink.append(buf_, 0, end);
        if (!split_reasoning_) out.content += kGemma4ChannelClose;
        buf_.erase(0, end + kGemma4ChannelClose.size());
        state_ = State::Content;
        continue;
      }
      case State::Call: {
        auto status = call_.status();
        size_t i = 0;
        while (i < buf_.size() && status == Gemma4CallReader::Status::More) status = call_.push(buf_[i++], names_);
        raw_.append(buf_, 0, i);
        buf_.erase(0, i);
        if (status == Gemma4CallReader::Status::Done) {
          out.calls.push_back(call_.call());
          raw_.clear();
          state_ = State::Content;
          continue;
        }
        if (status == Gemma4CallReader::Status::More && !at_end) return;
        // No call (or one cut short): its text is content as written, read
        // again from after its marker.
        out.content += kGemma4CallOpen;
        buf_.insert(0, raw_);
        raw_.clear();
        state_ = State::Content;
        continue;
      }
    }
  }
}

Gemma4Parts split_gemma4(std::string_view reply, bool opens_thought, bool split_reasoning,
                         const std::vector<std::string>& names) {
  Gemma4Stream stream(opens_thought, split_reasoning, names);
  Gemma4Parts out = stream.push(reply);
  Gemma4Parts rest = stream.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  out.calls.insert(out.calls.end(), rest.calls.begin(), rest.calls.end());
  return out;
}

}  // namespace tc::server
