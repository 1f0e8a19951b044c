// JsonPrefix: the byte-level state machine (see json_prefix.h).
#include "engine/text/json_prefix.h"

namespace tc::text {

namespace {

constexpr std::string_view kLiterals[3] = {"true", "false", "null"};

bool is_whitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
bool is_hex(uint8_t b) { return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

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

// A byte that cannot continue the number: the number must be whole, and the
// byte is then what follows a value.
bool JsonPrefix::end_number(uint8_t byte) {
  if (state_ != State::NumZero && state_ != State::NumInt && state_ != State::NumFrac &&
      state_ != State::NumExpDigits) {
    return false;
  }
  end_value();
  return push(byte);
}

// After a number's integer or fraction digits: its exponent, or its end.
bool JsonPrefix::after_digits(uint8_t byte) {
  if (byte == 'e' || byte == 'E') {
    state_ = State::NumExp;
    return true;
  }
  return end_number(byte);
}

bool JsonPrefix::push_value_start(uint8_t byte) {
  switch (byte) {
    case '{':
      return open(false);
    case '[':
      return open(true);
    case '"':
      key_ = false;
      state_ = State::String;
      return true;
    case '-':
      state_ = State::NumMinus;
      return true;
    case '0':
      state_ = State::NumZero;
      return true;
    case 't':
    case 'f':
    case 'n':
      literal_ = byte == 't' ? 0 : byte == 'f' ? 1 : 2;
      literal_pos_ = 1;
      state_ = State::Literal;
      return true;
    default:
      if (byte >= '1' && byte <= '9') {
        state_ = State::NumInt;
        digits_ = 1;
        return true;
      }
      return false;
  }
}

bool JsonPrefix::push(uint8_t byte) {
  const JsonPrefix saved = *this;
  bool ok = false;
  const bool in_string = state_ == State::String || state_ == State::Escape || state_ == State::Hex ||
                         state_ == State::Utf8;
  if (!in_string && is_whitespace(byte) && state_ != State::Literal && state_ != State::NumMinus &&
      state_ != State::NumDot && state_ != State::NumExp && state_ != State::NumExpSign) {
    // Whitespace between tokens (it also ends a number).
    if (whitespace_run_ >= max_whitespace_run_ || state_ == State::Done) return false;
    if (state_ == State::Start && whitespace_run_ >= kMaxLeadingWhitespace) return false;
    ++whitespace_run_;
    if (state_ == State::NumZero || state_ == State::NumInt || state_ == State::NumFrac ||
        state_ == State::NumExpDigits) {
      end_value();
    }
    return true;
  }
  if (!in_string) whitespace_run_ = 0;
  switch (state_) {
    case State::Start:
      ok = byte == '{' && open(false);
      break;
    case State::ObjectFirst:
      if (byte == '}') {
        ok = close(false);
        break;
      }
      [[fallthrough]];  // otherwise a key, as after a comma
    case State::ObjectKey:
      if (byte == '"') {
        key_ = true;
        state_ = State::String;
        ok = true;
      }
      break;
    case State::Colon:
      if (byte == ':') {
        state_ = State::Value;
        ok = true;
      }
      break;
    case State::Value:
      ok = push_value_start(byte);
      break;
    case State::ArrayFirst:
      ok = byte == ']' ? close(true) : push_value_start(byte);
      break;
    case State::AfterValue: {
      const bool array = ((stack_ >> (depth_ - 1)) & 1) != 0;
      if (byte == ',') {
        state_ = array ? State::Value : State::ObjectKey;
        ok = true;
      } else if (byte == (array ? ']' : '}')) {
        ok = close(array);
      }
      break;
    }
    case State::String:
      if (byte == '"') {
        if (key_) {
          state_ = State::Colon;
        } else {
          end_value();
        }
        ok = true;
      } else if (byte == '\\') {
        state_ = State::Escape;
        ok = true;
      } else if (byte < 0x20) {
        ok = false;  // control characters must be escaped
      } else if (byte < 0x80) {
        ok = true;
      } else {
        // UTF-8 lead byte: the continuation count and the range the first
        // continuation byte must fall in (excluding overlong forms and
        // surrogates, as a strict decoder does).
        utf8_lo_ = 0x80;
        utf8_hi_ = 0xbf;
        if (byte >= 0xc2 && byte <= 0xdf) {
          utf8_left_ = 1;
        } else if (byte >= 0xe0 && byte <= 0xef) {
          utf8_left_ = 2;
          if (byte == 0xe0) utf8_lo_ = 0xa0;
          if (byte == 0xed) utf8_hi_ = 0x9f;
        } else if (byte >= 0xf0 && byte <= 0xf4) {
          utf8_left_ = 3;
          if (byte == 0xf0) utf8_lo_ = 0x90;
          if (byte == 0xf4) utf8_hi_ = 0x8f;
        } else {
          break;
        }
        state_ = State::Utf8;
        ok = true;
      }
      break;
    case State::Utf8:
      if (byte >= utf8_lo_ && byte <= utf8_hi_) {
        utf8_lo_ = 0x80;
        utf8_hi_ = 0xbf;
        if (--utf8_left_ == 0) state_ = State::String;
        ok = true;
      }
      break;
    case State::Escape:
      if (byte == 'u') {
        state_ = State::Hex;
        hex_left_ = 4;
        ok = true;
      } else if (byte == '"' || byte == '\\' || byte == '/' || byte == 'b' || byte == 'f' || byte == 'n' ||
                 byte == 'r' || byte == 't') {
        state_ = State::String;
        ok = true;
      }
      break;
    case State::Hex:
      if (is_hex(byte)) {
        const auto lower = static_cast<uint8_t>(byte | 0x20);
        if (hex_left_ == 4) hex_first_ = lower;
        // \uD800-\uDFFF: surrogates, refused.
        const bool high_nibble = (lower >= '8' && lower <= '9') || lower >= 'a';
        if (hex_left_ == 3 && hex_first_ == 'd' && high_nibble) break;
        if (--hex_left_ == 0) state_ = State::String;
        ok = true;
      }
      break;
    case State::NumMinus:
      if (byte == '0') {
        state_ = State::NumZero;
        ok = true;
      } else if (byte >= '1' && byte <= '9') {
        state_ = State::NumInt;
        digits_ = 1;
        ok = true;
      }
      break;
    case State::NumZero:
    case State::NumInt:
      if (state_ == State::NumInt && is_digit(byte)) {
        ok = ++digits_ <= kMaxIntegerDigits;
      } else if (byte == '.') {
        state_ = State::NumDot;
        ok = true;
      } else {
        ok = after_digits(byte);
      }
      break;
    case State::NumDot:
      if (is_digit(byte)) {
        state_ = State::NumFrac;
        ok = true;
      }
      break;
    case State::NumFrac:
      ok = is_digit(byte) || after_digits(byte);
      break;
    case State::NumExp:
      if (byte == '+' || byte == '-') {
        state_ = State::NumExpSign;
        ok = true;
        break;
      }
      [[fallthrough]];  // a digit, as after a sign
    case State::NumExpSign:
      if (is_digit(byte)) {
        state_ = State::NumExpDigits;
        digits_ = 1;
        ok = true;
      }
      break;
    case State::NumExpDigits:
      ok = is_digit(byte) ? ++digits_ <= kMaxExponentDigits : end_number(byte);
      break;
    case State::Literal: {
      const std::string_view word = kLiterals[literal_];
      if (byte == static_cast<uint8_t>(word[literal_pos_])) {
        if (++literal_pos_ == word.size()) end_value();
        ok = true;
      }
      break;
    }
    case State::Done:
      ok = false;
      break;
  }
  if (!ok) *this = saved;
  return ok;
}

bool JsonPrefix::push(std::string_view bytes) {
  for (char c : bytes) {
    if (!push(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool JsonPrefix::accepts(std::string_view bytes) const {
  JsonPrefix copy = *this;
  return copy.push(bytes);
}

}  // namespace tc::text
