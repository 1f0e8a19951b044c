// The harmony reply parser's state machine (see harmony_split.h).
#include "server/harmony_split.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/text/vocab_harmony.h"
#include "server/partial_marker.h"

namespace tc::server {
namespace {

using text::kHarmonyCall;
using text::kHarmonyChannel;
using text::kHarmonyConstrain;
using text::kHarmonyEnd;
using text::kHarmonyMessage;
using text::kHarmonyReturn;
using text::kHarmonyStart;

constexpr size_t kMaxHeader = 256;
constexpr std::string_view kFunctions = "functions.";
constexpr std::string_view kTo = "to=";
// What ends a body; <|start|> also opens the next message.
constexpr std::string_view kBodyEnds[] = {kHarmonyEnd, kHarmonyReturn, kHarmonyCall, kHarmonyStart};
// Every marker, for telling a possible marker start from text.
constexpr std::string_view kMarkers[] = {kHarmonyStart,   kHarmonyEnd,    kHarmonyMessage, kHarmonyChannel,
                                         kHarmonyConstrain, kHarmonyReturn, kHarmonyCall};

bool is_header_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' || c == '_' ||
         c == '.' || c == ':' || c == '=' || c == '-' || c == '/';
}

// Whether `s` is a proper prefix of a marker (a marker may still complete it).
bool is_marker_prefix(std::string_view s) {
  return std::any_of(std::begin(kMarkers), std::end(kMarkers),
                     [&](std::string_view m) { return s.size() < m.size() && m.starts_with(s); });
}

// A header's recipient (its first `to=X` but to=assistant, which gpt-oss
// sometimes writes before its real channel) and its channel (the first
// word after its last <|channel|>).
struct Header {
  std::string recipient;
  std::string channel;
};

Header parse_header(std::string_view h) {
  Header out;
  bool after_channel = false;
  size_t i = 0;
  while (i < h.size()) {
    if (h.substr(i).starts_with(kHarmonyChannel)) {
      after_channel = true;
      i += kHarmonyChannel.size();
      continue;
    }
    if (h.substr(i).starts_with(kHarmonyConstrain)) {
      after_channel = false;
      i += kHarmonyConstrain.size();
      continue;
    }
    if (h[i] == ' ') {
      ++i;
      continue;
    }
    const size_t end = std::min(h.find(' ', i), h.find('<', i));
    const std::string_view word = h.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    i += word.size();
    if (word.starts_with(kTo)) {
      const std::string_view who = word.substr(kTo.size());
      if (out.recipient.empty() && who != "assistant") out.recipient = std::string(who);
      continue;
    }
    if (after_channel) out.channel = std::string(word);
    after_channel = false;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \n\t\r";
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

}  // namespace

std::string harmony_prompt_tail(std::string_view prompt) {
  const size_t at = prompt.rfind(kHarmonyStart);
  return at == std::string_view::npos ? std::string() : std::string(prompt.substr(at));
}

HarmonyStream::HarmonyStream(std::string_view prompt_tail, bool split_reasoning, std::vector<std::string> names)
    : split_reasoning_(split_reasoning), names_(std::move(names)) {
  // The prompt's part of the first message sets the state; what it would
  // give, and any tail it holds back, is the prompt's, not the reply's.
  push(prompt_tail);
  raw_.clear();
  buf_.clear();
}

HarmonyParts HarmonyStream::push(std::string_view text) {
  HarmonyParts out;
  buf_.append(text);
  run(out, false);
  return out;
}

HarmonyParts HarmonyStream::finish() {
  HarmonyParts out;
  run(out, true);
  return out;
}

void HarmonyStream::run(HarmonyParts& out, bool at_end) {
  while (true) {
    switch (state_) {
      case State::Between: {
        // Text before a message's <|start|> is no message: content as written.
        const size_t start = buf_.find(kHarmonyStart);
        if (start == std::string::npos) {
          const size_t keep = at_end ? 0 : partial_marker_suffix(buf_, kBodyEnds);
          out.content.append(buf_, 0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        out.content.append(buf_, 0, start);
        buf_.erase(0, start + kHarmonyStart.size());
        raw_ = kHarmonyStart;
        header_.clear();
        state_ = State::Header;
        continue;
      }
      case State::Header: {
        // Up to <|message|>: header characters and the two header markers;
        // anything else ends it as no header (at `bad`).
        size_t i = 0;
        size_t bad = std::string::npos;
        bool opened = false;
        while (i < buf_.size()) {
          const std::string_view rest = std::string_view(buf_).substr(i);
          if (rest[0] == '<') {
            if (rest.starts_with(kHarmonyMessage)) {
              opened = true;
              break;
            }
            if (rest.starts_with(kHarmonyChannel) || rest.starts_with(kHarmonyConstrain)) {
              i += rest.starts_with(kHarmonyChannel) ? kHarmonyChannel.size() : kHarmonyConstrain.size();
            } else if (!at_end && is_marker_prefix(rest)) {
              break;  // may still become one: wait
            } else {
              bad = i;
              break;
            }
          } else if (is_header_char(rest[0])) {
            ++i;
          } else {
            bad = i;
            break;
          }
          if (header_.size() + i > kMaxHeader) {
            bad = i;
            break;
          }
        }
        if (opened) {
          header_.append(buf_, 0, i);
          raw_.append(buf_, 0, i + kHarmonyMessage.size());
          buf_.erase(0, i + kHarmonyMessage.size());
          open_body(out);
          continue;
        }
        if (bad == std::string::npos && !at_end) {
          header_.append(buf_, 0, i);
          raw_.append(buf_, 0, i);
          buf_.erase(0, i);
          return;
        }
        // Not a header (or the reply ended in one): its text is content,
        // and what follows is read as text between messages.
        if (bad == std::string::npos) bad = buf_.size();
        out.content += raw_;
        out.content.append(buf_, 0, bad);
        buf_.erase(0, bad);
        raw_.clear();
        header_.clear();
        state_ = State::Between;
        continue;
      }
      case State::Body: {
        size_t end = std::string::npos;
        std::string_view marker;
        for (const std::string_view m : kBodyEnds) {
          const size_t at = buf_.find(m);
          if (at < end) {
            end = at;
            marker = m;
          }
        }
        if (end == std::string::npos) {
          const size_t keep = at_end ? 0 : partial_marker_suffix(buf_, kBodyEnds);
          emit(out, std::string_view(buf_).substr(0, buf_.size() - keep));
          buf_.erase(0, buf_.size() - keep);
          if (!at_end) return;
          close_message(out, {});
          state_ = State::Between;
          continue;
        }
        emit(out, std::string_view(buf_).substr(0, end));
        // A <|start|> stays for Between, which opens the next message with it.
        if (marker == kHarmonyStart) marker = {};
        buf_.erase(0, end + marker.size());
        close_message(out, marker);
        state_ = State::Between;
        continue;
      }
    }
  }
}

void HarmonyStream::open_body(HarmonyParts& out) {
  const Header h = parse_header(header_);
  header_.clear();
  body_.clear();
  if (!h.recipient.empty()) {
    const bool declared = h.recipient.starts_with(kFunctions) &&
                          std::binary_search(names_.begin(), names_.end(), h.recipient.substr(kFunctions.size()));
    kind_ = declared ? Kind::Call : Kind::Dropped;
    if (declared) call_name_ = h.recipient.substr(kFunctions.size());
  } else {
    kind_ = h.channel == "analysis" ? Kind::Reasoning : Kind::Content;
  }
  if (kind_ == Kind::Reasoning && !split_reasoning_) out.content += raw_;
  if (kind_ != Kind::Call) raw_.clear();
  state_ = State::Body;
}

void HarmonyStream::emit(HarmonyParts& out, std::string_view text) {
  switch (kind_) {
    case Kind::Reasoning:
      (split_reasoning_ ? out.reasoning : out.content).append(text);
      break;
    case Kind::Content:
      out.content.append(text);
      break;
    case Kind::Call:
      body_.append(text);
      break;
    case Kind::Dropped:
      break;
  }
}

void HarmonyStream::close_message(HarmonyParts& out, std::string_view terminator) {
  if (kind_ == Kind::Reasoning && !split_reasoning_) out.content.append(terminator);
  if (kind_ == Kind::Call) {
    using nlohmann::json;
    const json args = json::parse(trim(body_), nullptr, /*allow_exceptions=*/false);
    if (args.is_object()) {
      out.calls.push_back({call_name_, args.dump(-1, ' ', false, json::error_handler_t::replace), ""});
    } else {
      out.content += raw_ + body_;
      out.content.append(terminator);
    }
  }
  raw_.clear();
  body_.clear();
  kind_ = Kind::Content;
}

HarmonyParts split_harmony(std::string_view reply, std::string_view prompt_tail, bool split_reasoning,
                           const std::vector<std::string>& names) {
  HarmonyStream stream(prompt_tail, split_reasoning, names);
  HarmonyParts out = stream.push(reply);
  HarmonyParts rest = stream.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  out.calls.insert(out.calls.end(), rest.calls.begin(), rest.calls.end());
  return out;
}

}  // namespace tc::server
