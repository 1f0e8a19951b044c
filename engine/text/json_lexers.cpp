// JSON string and number lexers (see json_lexers.h).
#include "engine/text/json_lexers.h"

namespace tc::text {
namespace {

bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
bool is_hex(uint8_t b) { return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

}  // namespace

JsonStringLexer::Step JsonStringLexer::push(uint8_t byte) {
  switch (state_) {
    case State::Body:
      if (byte == '"') return Step::End;
      if (byte == '\\') {
        state_ = State::Escape;
        return Step::Continue;
      }
      if (byte < 0x20) return Step::Reject;  // control characters must be escaped
      if (byte < 0x80) {
        ++length_;
        return Step::Continue;
      }
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
        return Step::Reject;
      }
      state_ = State::Utf8;
      return Step::Continue;
    case State::Utf8:
      if (byte < utf8_lo_ || byte > utf8_hi_) return Step::Reject;
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xbf;
      if (--utf8_left_ == 0) {
        state_ = State::Body;
        ++length_;
      }
      return Step::Continue;
    case State::Escape:
      if (byte == 'u') {
        state_ = State::Hex;
        hex_left_ = 4;
        return Step::Continue;
      }
      if (byte == '"' || byte == '\\' || byte == '/' || byte == 'b' || byte == 'f' || byte == 'n' || byte == 'r' ||
          byte == 't') {
        state_ = State::Body;
        ++length_;
        return Step::Continue;
      }
      return Step::Reject;
    case State::Hex: {
      if (!is_hex(byte)) return Step::Reject;
      const auto lower = static_cast<uint8_t>(byte | 0x20);
      // \uD800-\uDFFF: surrogates, refused.
      const bool high_nibble = (lower >= '8' && lower <= '9') || lower >= 'a';
      if (hex_left_ == 3 && hex_first_ == 'd' && high_nibble) return Step::Reject;
      if (hex_left_ == 4) hex_first_ = lower;
      if (--hex_left_ == 0) {
        state_ = State::Body;
        ++length_;
      }
      return Step::Continue;
    }
  }
  return Step::Reject;
}

bool JsonNumberLexer::push(uint8_t byte) {
  switch (state_) {
    case State::Start:
      if (byte == '-') {
        state_ = State::Minus;
        return true;
      }
      [[fallthrough]];  // a digit, as after '-'
    case State::Minus:
      if (byte == '0') {
        state_ = State::Zero;
        return true;
      }
      if (byte >= '1' && byte <= '9') {
        state_ = State::Int;
        digits_ = 1;
        return true;
      }
      return false;
    case State::Zero:
    case State::Int:
      if (state_ == State::Int && is_digit(byte)) {
        if (digits_ >= kMaxIntegerDigits) return false;
        ++digits_;
        return true;
      }
      if (integer_) return false;
      if (byte == '.') {
        state_ = State::Dot;
        return true;
      }
      [[fallthrough]];  // an exponent, as after a fraction
    case State::Frac:
      if (state_ == State::Frac && is_digit(byte)) return true;
      if (byte == 'e' || byte == 'E') {
        state_ = State::Exp;
        return true;
      }
      return false;
    case State::Dot:
      if (!is_digit(byte)) return false;
      state_ = State::Frac;
      return true;
    case State::Exp:
      if (byte == '+' || byte == '-') {
        state_ = State::ExpSign;
        return true;
      }
      [[fallthrough]];  // a digit, as after a sign
    case State::ExpSign:
      if (!is_digit(byte)) return false;
      state_ = State::ExpDigits;
      digits_ = 1;
      return true;
    case State::ExpDigits:
      if (!is_digit(byte) || digits_ >= kMaxExponentDigits) return false;
      ++digits_;
      return true;
  }
  return false;
}

}  // namespace tc::text
