// Gemma 4's tool call syntax into JSON, byte by byte (see gemma4_call_reader.h).
#include "server/gemma4_call_reader.h"

#include <algorithm>
#include <cmath>

namespace tc::server {
namespace {

using nlohmann::json;

constexpr std::string_view kPrefix = "call:";

bool is_blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whether some declared name begins with `s`.
bool begins_a_name(const std::vector<std::string>& names, const std::string& s) {
  const auto it = std::lower_bound(names.begin(), names.end(), s);
  return it != names.end() && it->starts_with(s);
}

}  // namespace

Gemma4CallReader::Status Gemma4CallReader::status() const {
  if (at_ == At::Done) return Status::Done;
  return at_ == At::Invalid ? Status::Invalid : Status::More;
}

Gemma4CallReader::Status Gemma4CallReader::fail() {
  at_ = At::Invalid;
  stack_.clear();
  text_.clear();
  return Status::Invalid;
}

Gemma4CallReader::Status Gemma4CallReader::push(char c, const std::vector<std::string>& names) {
  if (at_ == At::Done || at_ == At::Invalid) return status();
  return step(c, names);
}

Gemma4CallReader::Status Gemma4CallReader::step(char c, const std::vector<std::string>& names) {
  switch (at_) {
    case At::Prefix:
      if (c != kPrefix[pos_]) return fail();
      if (++pos_ == kPrefix.size()) at_ = At::Name;
      return Status::More;
    case At::Name:
      if (c == '{') {
        if (!std::binary_search(names.begin(), names.end(), name_)) return fail();
        stack_.push_back({json::object(), {}});
        at_ = At::KeyStart;
        first_key_ = true;
        return Status::More;
      }
      name_ += c;
      return begins_a_name(names, name_) ? Status::More : fail();
    case At::KeyStart:
      if (is_blank(c)) return Status::More;
      if (c == '}') return first_key_ ? close() : fail();
      if (c == ':') return fail();
      text_.assign(1, c);
      at_ = At::Key;
      return Status::More;
    case At::Key:
      if (c == '}') return fail();
      if (c != ':') {
        text_ += c;
        return Status::More;
      }
      stack_.back().key = std::move(text_);
      text_.clear();
      at_ = At::ValueStart;
      first_item_ = false;
      return Status::More;
    case At::ValueStart:
      if (is_blank(c)) return Status::More;
      if (c == ']' && first_item_) return close();
      return value_start(c);
    case At::OpenQuote:
      if (c != kGemma4Quote[pos_]) return fail();
      if (++pos_ == kGemma4Quote.size()) {
        at_ = At::String;
        pos_ = 0;
        text_.clear();
      }
      return Status::More;
    case At::String:
      if (c == kGemma4Quote[pos_]) {
        if (++pos_ < kGemma4Quote.size()) return Status::More;
        add_value(json(std::move(text_)));
        text_.clear();
        return Status::More;
      }
      // Not the marker after all: what matched of it is text, and this
      // byte may begin it again.
      text_.append(kGemma4Quote.substr(0, pos_));
      pos_ = 0;
      if (c == kGemma4Quote[0]) {
        pos_ = 1;
      } else {
        text_ += c;
      }
      return Status::More;
    case At::Number: {
      if (number_byte(c)) {
        text_ += c;
        return Status::More;
      }
      if (!number_whole()) return fail();
      const json number = json::parse(text_, nullptr, /*allow_exceptions=*/false);
      text_.clear();
      if (number.is_discarded() || (number.is_number_float() && !std::isfinite(number.get<double>()))) return fail();
      add_value(number);
      return after_value(c);
    }
    case At::Literal:
      if (c != literal_[pos_]) return fail();
      if (++pos_ == literal_.size()) add_value(json::parse(literal_));
      return Status::More;
    case At::AfterValue:
      return after_value(c);
    case At::Close:
      if (c != kGemma4CallClose[pos_]) return fail();
      if (++pos_ == kGemma4CallClose.size()) {
        at_ = At::Done;
        return Status::Done;
      }
      return Status::More;
    case At::Done:
    case At::Invalid:
      break;
  }
  return fail();
}

Gemma4CallReader::Status Gemma4CallReader::value_start(char c) {
  if (c == kGemma4Quote[0]) {
    at_ = At::OpenQuote;
    pos_ = 1;
    return Status::More;
  }
  if (c == '{' || c == '[') {
    if (stack_.size() >= kMaxDepth) return fail();
    stack_.push_back({c == '{' ? json::object() : json::array(), {}});
    at_ = c == '{' ? At::KeyStart : At::ValueStart;
    first_key_ = first_item_ = true;
    return Status::More;
  }
  if (c == '-' || is_digit(c)) {
    at_ = At::Number;
    num_ = Num::Minus;
    text_.clear();
    if (c != '-') number_byte(c);
    text_ += c;
    return Status::More;
  }
  for (const std::string_view word : {std::string_view("true"), std::string_view("false"), std::string_view("null")}) {
    if (c == word[0]) {
      at_ = At::Literal;
      literal_ = word;
      pos_ = 1;
      return Status::More;
    }
  }
  return fail();
}

Gemma4CallReader::Status Gemma4CallReader::after_value(char c) {
  at_ = At::AfterValue;
  if (is_blank(c)) return Status::More;
  const bool object = stack_.back().value.is_object();
  if (c == ',') {
    at_ = object ? At::KeyStart : At::ValueStart;
    first_key_ = first_item_ = false;
    return Status::More;
  }
  if (c == (object ? '}' : ']')) return close();
  return fail();
}

bool Gemma4CallReader::number_byte(char c) {
  const bool digit = is_digit(c);
  switch (num_) {
    case Num::Minus:
      if (!digit) return false;
      num_ = c == '0' ? Num::Zero : Num::Int;
      return true;
    case Num::Zero:
    case Num::Int:
      if (digit && num_ == Num::Int) return true;
      if (c == '.') num_ = Num::Dot;
      else if (c == 'e' || c == 'E') num_ = Num::E;
      else return false;
      return true;
    case Num::Dot:
    case Num::Frac:
      if (digit) {
        num_ = Num::Frac;
        return true;
      }
      if (num_ == Num::Frac && (c == 'e' || c == 'E')) {
        num_ = Num::E;
        return true;
      }
      return false;
    case Num::E:
      if (c == '+' || c == '-') {
        num_ = Num::ESign;
        return true;
      }
      [[fallthrough]];
    case Num::ESign:
    case Num::Exp:
      if (!digit) return false;
      num_ = Num::Exp;
      return true;
  }
  return false;
}

bool Gemma4CallReader::number_whole() const {
  return num_ == Num::Zero || num_ == Num::Int || num_ == Num::Frac || num_ == Num::Exp;
}

void Gemma4CallReader::add_value(json value) {
  Frame& top = stack_.back();
  if (top.value.is_object()) {
    top.value[top.key] = std::move(value);
  } else {
    top.value.push_back(std::move(value));
  }
  at_ = At::AfterValue;
}

Gemma4CallReader::Status Gemma4CallReader::close() {
  json value = std::move(stack_.back().value);
  stack_.pop_back();
  if (stack_.empty()) {
    arguments_ = std::move(value);
    at_ = At::Close;
    pos_ = 0;
    return Status::More;
  }
  add_value(std::move(value));
  return Status::More;
}

ToolCall Gemma4CallReader::call() const {
  return {name_, arguments_.dump(-1, ' ', false, json::error_handler_t::replace), ""};
}

}  // namespace tc::server
