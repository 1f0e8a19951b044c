// JsonPrefix: the byte-level state machine (see json_prefix.h).
#include "engine/text/json_prefix.h"

namespace tc::text {

namespace {

constexpr std::string_view kLiterals[3] = {"true", "false", "null"};


}  // namespace

bool JsonPrefix::open(bool array) {
  if (depth_ >= kMaxDepth) return false;
  if (array) {
    stack_ |= uint64_t{1} << depth_;
  } else {
    stack_ &= ~(uint64_t{1} << depth_);
  }
  ++depth_;
  state_ = array ? State::ArrayFirst : State::ObjectFirst;
  return true;
}

bool JsonPrefix::close(bool array) {
  if (depth_ == 0 || ((stack_ >> (depth_ - 1)) & 1) != static_cast<uint64_t>(array)) return false;
  --depth_;
  end_value();
  return true;
}

void JsonPrefix::end_value() { state_ = depth_ == 0 ? State::Done : State::AfterValue; }

bool JsonPrefix::push_value_start(uint8_t byte) {
  switch (byte) {
    case '{':
      return open(false);
    case '[':
      return open(true);
    case '"':
      key_ = false;
      string_ = JsonStringLexer();
      state_ = State::String;
      return true;
    case 't':
    case 'f':
    case 'n':
      literal_ = byte == 't' ? 0 : byte == 'f' ? 1 : 2;
      literal_pos_ = 1;
      state_ = State::Literal;
      return true;
    default:
      if (!JsonNumberLexer::starts(byte)) return false;
      number_ = JsonNumberLexer();
      number_.push(byte);
      state_ = State::Number;
      return true;
  }
}

bool JsonPrefix::push(uint8_t byte) {
  switch (state_) {
    case State::String:
      switch (string_.push(byte)) {
        case JsonStringLexer::Step::Reject:
          return false;
        case JsonStringLexer::Step::Continue:
          return true;
        case JsonStringLexer::Step::End:
          if (key_) {
            state_ = State::Colon;
          } else {
            end_value();
          }
          return true;
      }
      return false;
    case State::Number: {
      if (number_.push(byte)) return true;
      if (!number_.complete()) return false;
      // The number ends here: the byte is what follows a value.
      const JsonPrefix saved = *this;
      end_value();
      if (push(byte)) return true;
      *this = saved;
      return false;
    }
    default:
      break;
  }
  if (JsonGap::is_whitespace(byte) && state_ != State::Literal) {
    // Whitespace between tokens.
    return state_ != State::Done && gap_.push(byte);
  }
  const JsonPrefix saved = *this;
  gap_.reset();
  if (push_structure(byte)) return true;
  *this = saved;
  return false;
}

// A byte outside strings and numbers that is not whitespace between tokens.
bool JsonPrefix::push_structure(uint8_t byte) {
  switch (state_) {
    case State::Start:
      return byte == '{' && open(false);
    case State::ObjectFirst:
      if (byte == '}') return close(false);
      [[fallthrough]];  // otherwise a key, as after a comma
    case State::ObjectKey:
      if (byte != '"') return false;
      key_ = true;
      string_ = JsonStringLexer();
      state_ = State::String;
      return true;
    case State::Colon:
      if (byte != ':') return false;
      state_ = State::Value;
      return true;
    case State::Value:
      return push_value_start(byte);
    case State::ArrayFirst:
      return byte == ']' ? close(true) : push_value_start(byte);
    case State::AfterValue: {
      const bool array = ((stack_ >> (depth_ - 1)) & 1) != 0;
      if (byte == ',') {
        state_ = array ? State::Value : State::ObjectKey;
        return true;
      }
      return byte == (array ? ']' : '}') && close(array);
    }
    case State::Literal: {
      const std::string_view word = kLiterals[literal_];
      if (byte != static_cast<uint8_t>(word[literal_pos_])) return false;
      if (++literal_pos_ == word.size()) end_value();
      return true;
    }
    case State::String:
    case State::Number:
    case State::Done:
      return false;
  }
  return false;
}

bool JsonPrefix::push(std::string_view bytes) {
  return push_each(bytes, [this](uint8_t byte) { return push(byte); });
}

bool JsonPrefix::accepts(std::string_view bytes) const {
  JsonPrefix copy = *this;
  return copy.push(bytes);
}

}  // namespace tc::text
