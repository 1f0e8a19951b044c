// Byte-at-a-time lexers shared by the constrained-output automata
// (JsonPrefix, JsonSchemaPrefix, ToolCallPrefix): a string's body after its
// opening quote, a number, and the whitespace between tokens. Small
// trivially copyable values, so trying a byte is a copy.
//
// Stricter than RFC 8259 where a strict parser would trip: strings must be
// valid UTF-8 (no overlong forms, no surrogates) and \u escapes of
// surrogates are refused; a number's integer part has at most
// kMaxIntegerDigits digits and its exponent at most kMaxExponentDigits (so
// no number overflows a double).
#pragma once

#include <cstdint>
#include <string_view>

namespace tc::text {

// Feeds `bytes` to `push_byte` one at a time: false at the first it
// refuses (what each automaton's push(string_view) does).
template <class PushByte>
bool push_each(std::string_view bytes, PushByte&& push_byte) {
  for (char c : bytes) {
    if (!push_byte(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

// The body of a JSON string, after its opening quote.
class JsonStringLexer {
 public:
  enum class Step : uint8_t { Reject, Continue, End };  // End: the closing quote was read

  // Reads one byte. On Reject the lexer is unchanged.
  Step push(uint8_t byte);
  // Characters read (a UTF-8 sequence or an escape counts once), for length limits.
  uint32_t length() const { return length_; }
  // Between characters (not inside an escape or a UTF-8 sequence).
  bool at_boundary() const { return state_ == State::Body; }

 private:
  enum class State : uint8_t {
    Body,    // between characters
    Escape,  // after '\'
    Hex,     // inside a \u escape: hex_left_ of its four hex digits to read
    Utf8,    // inside a multi-byte UTF-8 character (utf8_left_ bytes to go)
  };
  State state_ = State::Body;
  uint8_t hex_left_ = 0;    // Hex: digits still to read
  uint8_t hex_first_ = 0;   // Hex: the first digit read (for the surrogate check)
  uint8_t utf8_left_ = 0;   // Utf8: continuation bytes still to read
  uint8_t utf8_lo_ = 0x80;  // Utf8: the next continuation byte's range
  uint8_t utf8_hi_ = 0xbf;
  uint32_t length_ = 0;
};

// A JSON number, from its first byte.
class JsonNumberLexer {
 public:
  static constexpr int kMaxIntegerDigits = 20;
  static constexpr int kMaxExponentDigits = 2;

  // Whether `byte` can open a number ('-' or a digit).
  static bool starts(uint8_t byte) { return byte == '-' || (byte >= '0' && byte <= '9'); }
  // `integer`: no fraction and no exponent (JSON Schema's "integer").
  explicit JsonNumberLexer(bool integer = false) : integer_(integer) {}

  // Reads one byte (the first must satisfy starts()). False, and the lexer
  // unchanged, when the byte cannot continue the number; whether the number
  // may end before it is complete().
  bool push(uint8_t byte);
  // The bytes so far are a whole number (more digits might still follow).
  bool complete() const {
    return state_ == State::Zero || state_ == State::Int || state_ == State::Frac || state_ == State::ExpDigits;
  }

 private:
  enum class State : uint8_t {
    Start,      // nothing read
    Minus,      // after '-': a digit
    Zero,       // a leading 0: '.', 'e'/'E' or the end
    Int,        // integer digits
    Dot,        // after '.': a digit
    Frac,       // fraction digits
    Exp,        // after 'e': sign or digit
    ExpSign,    // after the exponent's sign: a digit
    ExpDigits,  // exponent digits
  };
  State state_ = State::Start;
  uint8_t digits_ = 0;  // Int / ExpDigits: digits read
  bool integer_;
};

// The whitespace between two tokens (or before a value): none, one space,
// or a newline and at most kMaxIndent spaces or tabs. That is what compact
// and indented JSON writers produce, and leaves a model that does not know
// JSON no room to pad.
class JsonGap {
 public:
  static constexpr int kMaxIndent = 20;

  static bool is_whitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
  // Reads a whitespace byte: false (unchanged) when the gap cannot take it.
  bool push(uint8_t byte) {
    switch (state_) {
      case State::None:
        if (byte != ' ' && byte != '\n') return false;
        state_ = byte == ' ' ? State::Space : State::Newline;
        return true;
      case State::Space:
        return false;
      case State::Newline:
        if ((byte != ' ' && byte != '\t') || indent_ >= kMaxIndent) return false;
        ++indent_;
        return true;
    }
    return false;
  }
  // A token came: the next gap starts empty.
  void reset() { *this = JsonGap(); }

 private:
  enum class State : uint8_t { None, Space, Newline };
  State state_ = State::None;
  uint8_t indent_ = 0;
};

}  // namespace tc::text
