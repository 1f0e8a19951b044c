// Qwen3CoderCallPrefix: <function=NAME>, each <parameter=KEY> with its
// value checked as the JSON it stands for, </function></tool_call> (see
// qwen3_coder_call_prefix.h).
#include "engine/text/qwen3_coder_call_prefix.h"

namespace tc::text {
namespace {

bool is_blank(uint8_t b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }

}  // namespace

Qwen3CoderCallPrefix::Qwen3CoderCallPrefix(const ToolCallGrammar* grammar)
    : grammar_(checked(grammar, "Qwen3CoderCallPrefix needs a grammar")), name_(grammar_->names.size()) {}

bool Qwen3CoderCallPrefix::in_free_string() const {
  return part_ == Part::Value && text_ && pos_ == 0 && !at_start_ && StepCallPrefix::in_free_string(arguments_);
}

bool Qwen3CoderCallPrefix::could_take_text(std::string_view raw) const {
  Qwen3CoderCallPrefix copy = *this;
  for (const char c : raw) {
    if (!copy.feed_text(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool Qwen3CoderCallPrefix::value_whole() const {
  return json_depth_ == 0 && !json_string_ && (could_feed(",") || could_feed("}"));
}

bool Qwen3CoderCallPrefix::fixed(std::string_view text, uint8_t byte, Part next) {
  if (static_cast<uint8_t>(text[pos_]) != byte) return false;
  if (++pos_ == text.size()) {
    part_ = next;
    pos_ = 0;
    blanks_ = 0;
  }
  return true;
}

bool Qwen3CoderCallPrefix::blank(uint8_t byte) {
  if (pos_ != 0 || !is_blank(byte) || blanks_ >= kMaxBlanks) return false;
  ++blanks_;
  return true;
}

bool Qwen3CoderCallPrefix::step(uint8_t byte) {
  switch (part_) {
    case Part::Open:
      return blank(byte) || fixed(kFunction, byte, Part::Name);
    case Part::Name:
      if (byte != '>') return name_.push(grammar_->names, byte);
      if (!name_.whole(grammar_->names)) return false;
      function_ = name_.lo;
      if (!grammar_->arguments.empty() && grammar_->arguments[function_] != nullptr) {
        arguments_ = JsonSchemaPrefix(grammar_->arguments[function_].get());
      } else {
        raw_all_ = true;
      }
      part_ = Part::Body;
      blanks_ = 0;
      return feed("{");
    case Part::Body:
      if (blank(byte)) return true;
      if (byte != '<') return false;
      // A parameter or the end must be able to come.
      if (!could_feed(first_ ? "\"" : ",\"") && !could_feed("}")) return false;
      part_ = Part::Tag;
      pos_ = 1;
      return true;
    case Part::Tag:
      return step_tag(byte);
    case Part::Key:
      return step_key(byte);
    case Part::Newline:
      if (byte != '\n') return false;
      part_ = Part::Value;
      at_start_ = true;
      pos_ = 0;
      json_depth_ = 0;
      json_string_ = json_escape_ = false;
      return !text_ || feed("\"");
    case Part::Value:
      return text_ ? step_text(byte) : step_json(byte);
    case Part::Close:
      return blank(byte) || fixed(kCallEnd, byte, Part::Done);
    case Part::Done:
      return false;
  }
  return false;
}

bool Qwen3CoderCallPrefix::step_tag(uint8_t byte) {
  if (pos_ == 1) {
    // "<p" or "</": which tag this is, if the arguments can take it.
    parameter_ = byte == static_cast<uint8_t>(kParameter[1]);
    if (parameter_ ? !could_feed(first_ ? "\"" : ",\"") : !could_feed("}")) return false;
  }
  const std::string_view tag = parameter_ ? kParameter : kFunctionEnd;
  if (static_cast<uint8_t>(tag[pos_]) != byte) return false;
  if (++pos_ < tag.size()) return true;
  pos_ = 0;
  blanks_ = 0;
  if (!parameter_) {
    part_ = Part::Close;
    return feed("}");
  }
  part_ = Part::Key;
  key_len_ = 0;
  text_key_ = !grammar_->text_parameters.empty();
  if (text_key_) name_ = NameMatch(grammar_->text_parameters[function_].size());
  const bool first = first_;
  first_ = false;
  return feed(first ? "\"" : ",\"");
}

bool Qwen3CoderCallPrefix::step_key(uint8_t byte) {
  if (byte == '>') {
    if (key_len_ == 0 || !feed("\":")) return false;
    const bool text = raw_all_ || (text_key_ && name_.whole(grammar_->text_parameters[function_]));
    // (A text parameter whose schema takes no string, should there be one, is written as JSON.)
    text_ = text && could_feed("\"");
    part_ = Part::Newline;
    return true;
  }
  if (byte == '<' || byte < 0x20 || key_len_ >= kMaxKeyBytes) return false;
  if (!feed_text(byte)) return false;
  ++key_len_;
  if (text_key_ && !name_.push(grammar_->text_parameters[function_], byte)) text_key_ = false;
  return true;
}

bool Qwen3CoderCallPrefix::step_text(uint8_t byte) {
  if (pos_ > 0) {
    if (byte == static_cast<uint8_t>(kValueEnd[pos_])) {
      if (++pos_ == kValueEnd.size()) {
        part_ = Part::Body;
        pos_ = 0;
        blanks_ = 0;
        return feed("\"");
      }
      // Still either the value's end or text.
      return could_feed("\"") || could_take_text(kValueEnd.substr(end_from_, pos_ - end_from_));
    }
    // Not the end after all: what matched of it is text, and this byte is read afresh.
    for (const char c : kValueEnd.substr(end_from_, pos_ - end_from_)) {
      if (!feed_text(static_cast<uint8_t>(c))) return false;
    }
    pos_ = 0;
    at_start_ = false;
  }
  if (byte == '\n' || (at_start_ && byte == '<')) {
    // The value's end may begin: "\n</parameter>", or "</parameter>" where the value starts.
    end_from_ = byte == '\n' ? 0 : 1;
    pos_ = static_cast<uint8_t>(end_from_ + 1);
    return could_feed("\"") || could_take_text(kValueEnd.substr(end_from_, 1));
  }
  at_start_ = false;
  return feed_text(byte);
}

bool Qwen3CoderCallPrefix::step_json(uint8_t byte) {
  if (pos_ > 0) {
    if (byte == static_cast<uint8_t>(kValueEnd[pos_])) {
      // After "\n", a '<' can only be the value's end: the value must be whole.
      if (pos_ == 1 && !value_whole()) return false;
      if (++pos_ == kValueEnd.size()) {
        part_ = Part::Body;
        pos_ = 0;
        blanks_ = 0;
      }
      return true;
    }
    if (pos_ > 1) return false;
    // "\n" then something else: a blank of the JSON.
    pos_ = 0;
    if (!feed("\n")) return false;
  }
  if (byte == '\n') {
    pos_ = 1;
    return value_whole() || could_feed("\n");
  }
  // The value's own bytes: outside its strings, a ',' or a closing
  // bracket of no container of its own would be the arguments object's.
  if (json_string_) {
    if (json_escape_) json_escape_ = false;
    else if (byte == '\\') json_escape_ = true;
    else if (byte == '"') json_string_ = false;
  } else if (byte == '"') {
    json_string_ = true;
  } else if (byte == '{' || byte == '[') {
    if (json_depth_ == UINT8_MAX) return false;
    ++json_depth_;
  } else if (byte == '}' || byte == ']' || byte == ',') {
    if (json_depth_ == 0) return false;
    if (byte != ',') --json_depth_;
  }
  at_start_ = false;
  const char c = static_cast<char>(byte);
  return feed(std::string_view(&c, 1));
}

}  // namespace tc::text
