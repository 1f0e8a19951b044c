// Gemma4CallPrefix: "call:", a declared name, the arguments checked as the
// JSON they stand for, "<tool_call|>" (see gemma4_call_prefix.h).
#include "engine/text/gemma4_call_prefix.h"

namespace tc::text {
namespace {

constexpr int kMaxDepth = 64;

bool is_blank(uint8_t b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }

// What may begin a value other than a string or a container, or end an empty array.
bool is_value_byte(uint8_t b) {
  return (b >= '0' && b <= '9') || b == '-' || b == 't' || b == 'f' || b == 'n' || b == ']';
}

}  // namespace

Gemma4CallPrefix::Gemma4CallPrefix(const ToolCallGrammar* grammar)
    : grammar_(checked(grammar, "Gemma4CallPrefix needs a grammar")), name_(grammar_->names.size()) {}

bool Gemma4CallPrefix::in_free_string() const {
  return part_ == Part::Arguments && at_ == At::String && pos_ == 0 && StepCallPrefix::in_free_string(arguments_);
}

bool Gemma4CallPrefix::open(bool array) {
  if (depth_ >= kMaxDepth || !feed(array ? "[" : "{")) return false;
  if (array) arrays_ |= uint64_t{1} << depth_;
  else arrays_ &= ~(uint64_t{1} << depth_);
  ++depth_;
  at_ = array ? At::Value : At::KeyStart;
  return true;
}

void Gemma4CallPrefix::close() {
  --depth_;
  at_ = At::Other;
  if (depth_ == 0) {
    part_ = Part::Tail;  // the arguments' object is whole
    pos_ = 0;
  }
}

bool Gemma4CallPrefix::step(uint8_t byte) {
  switch (part_) {
    case Part::Head:
    case Part::Tail: {
      const std::string_view fixed = part_ == Part::Head ? kHead : kTail;
      if (static_cast<uint8_t>(fixed[pos_]) != byte) return false;
      if (++pos_ == fixed.size()) {
        part_ = part_ == Part::Head ? Part::Name : Part::Done;
        pos_ = 0;
      }
      return true;
    }
    case Part::Name:
      if (byte != '{') return name_.push(grammar_->names, byte);
      if (!name_.whole(grammar_->names)) return false;
      if (!grammar_->arguments.empty() && grammar_->arguments[name_.lo] != nullptr) {
        arguments_ = JsonSchemaPrefix(grammar_->arguments[name_.lo].get());
      }
      part_ = Part::Arguments;
      return open(false);
    case Part::Arguments:
      return step_arguments(byte);
    case Part::Done:
      return false;
  }
  return false;
}

bool Gemma4CallPrefix::step_arguments(uint8_t byte) {
  switch (at_) {
    case At::KeyStart:
      if (is_blank(byte)) return feed(std::string_view(reinterpret_cast<const char*>(&byte), 1));
      if (byte == '}') {
        if (!feed("}")) return false;
        close();
        return true;
      }
      if (byte == ':' || !feed("\"")) return false;
      at_ = At::Key;
      return feed_text(byte);
    case At::Key:
      if (byte == '}') return false;
      if (byte != ':') return feed_text(byte);
      at_ = At::Value;
      return feed("\":");
    case At::Value:
      if (byte == kQuote[0]) {
        // A string's marker begins: the arguments must take a string here.
        if (!could_feed("\"")) return false;
        at_ = At::Quote;
        pos_ = 1;
        return true;
      }
      if (byte == '{' || byte == '[') return open(byte == '[');
      // No JSON string: a number, a literal, or the ']' of an empty array.
      if (!is_blank(byte) && !is_value_byte(byte)) return false;
      if (!is_blank(byte)) at_ = At::Other;
      [[fallthrough]];
    case At::Other: {
      if (!feed(std::string_view(reinterpret_cast<const char*>(&byte), 1))) return false;
      if (byte == '}' || byte == ']') {
        close();
      } else if (byte == ',') {
        at_ = (arrays_ >> (depth_ - 1)) & 1 ? At::Value : At::KeyStart;
      }
      return true;
    }
    case At::Quote:
      if (byte != static_cast<uint8_t>(kQuote[pos_])) return false;
      if (++pos_ < kQuote.size()) return true;
      pos_ = 0;
      at_ = At::String;
      return feed("\"");
    case At::String:
      return step_string(byte);
  }
  return false;
}

bool Gemma4CallPrefix::step_string(uint8_t byte) {
  if (pos_ > 0) {
    if (byte == static_cast<uint8_t>(kQuote[pos_])) {
      if (++pos_ < kQuote.size()) {
        // Still either the closing marker or text.
        std::string literal;
        for (const char c : kQuote.substr(0, pos_)) literal += c == '"' ? std::string("\\\"") : std::string(1, c);
        return could_feed("\"") || could_feed(literal);
      }
      pos_ = 0;
      at_ = At::Other;
      return feed("\"");
    }
    // Not the marker: what matched of it is text.
    for (const char c : kQuote.substr(0, pos_)) {
      if (!feed_text(static_cast<uint8_t>(c))) return false;
    }
    pos_ = 0;
  }
  if (byte == static_cast<uint8_t>(kQuote[0])) {
    pos_ = 1;
    return could_feed("\"") || could_feed("<");
  }
  return feed_text(byte);
}

}  // namespace tc::text
