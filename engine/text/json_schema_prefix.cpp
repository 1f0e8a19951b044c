// JsonSchemaPrefix: a stack of container frames over the schema's nodes,
// with one scalar (string, number, literal) read at a time (see
// json_schema_prefix.h).
#include "engine/text/json_schema_prefix.h"

#include <limits>

#include "kernels/check.h"

namespace tc::text {
namespace {

// Narrows the sorted `texts`' range [lo, hi), whose members share their
// first `pos` bytes, to those whose byte at `pos` is `byte`. False (and
// nothing changed) when none is.
bool narrow(const std::vector<std::string>& texts, uint16_t& lo, uint16_t& hi, uint16_t pos, uint8_t byte) {
  uint16_t a = lo;
  while (a < hi && (texts[a].size() <= pos || static_cast<uint8_t>(texts[a][pos]) < byte)) ++a;
  uint16_t b = a;
  while (b < hi && texts[b].size() > pos && static_cast<uint8_t>(texts[b][pos]) == byte) ++b;
  if (a == b) return false;
  lo = a;
  hi = b;
  return true;
}

}  // namespace

JsonSchemaPrefix::JsonSchemaPrefix(const JsonSchema* schema) : schema_(schema) {
  TC_CHECK(schema_ != nullptr && schema_->root >= 0, "JsonSchemaPrefix needs a compiled schema");
}

bool JsonSchemaPrefix::push(uint8_t byte) {
  const JsonSchemaPrefix saved = *this;
  if (push_byte(byte)) return true;
  *this = saved;
  return false;
}

bool JsonSchemaPrefix::push(std::string_view bytes) {
  return push_each(bytes, [this](uint8_t byte) { return push_byte(byte); });
}

bool JsonSchemaPrefix::accepts(std::string_view bytes) const {
  JsonSchemaPrefix copy = *this;
  return copy.push(bytes);
}

bool JsonSchemaPrefix::in_free_string() const {
  if (!string_.at_boundary()) return false;
  if (scalar_ == Scalar::String) {
    const SchemaNode& n = node(scalar_node_);
    return n.format == JsonFormat::None && !n.pattern && n.max_length == std::numeric_limits<uint32_t>::max();
  }
  return scalar_ == Scalar::None && depth_ > 0 && stack_[depth_ - 1u].part == Part::OpenKey;
}

bool JsonSchemaPrefix::push_byte(uint8_t byte) {
  if (done_) return false;
  if (scalar_ != Scalar::None) return push_scalar(byte);
  if (depth_ > 0) {
    Frame& top = stack_[depth_ - 1u];
    if (top.part == Part::Key || top.part == Part::OpenKey) return push_key_byte(top, byte);
  }
  if (JsonGap::is_whitespace(byte)) return gap_.push(byte);
  gap_.reset();
  return push_structure(byte);
}

bool JsonSchemaPrefix::push_scalar(uint8_t byte) {
  switch (scalar_) {
    case Scalar::String: {
      const SchemaNode& n = node(scalar_node_);
      if (n.format != JsonFormat::None) {
        if (byte != '"') return format_.push(byte);
        if (!format_.complete()) return false;
        scalar_ = Scalar::None;
        end_value();
        return true;
      }
      // At the length limit only the closing quote may come (not the first
      // byte of a character that would pass it).
      if (string_.at_boundary() && string_.length() >= n.max_length && byte != '"') return false;
      // A pattern reads the characters as they are: no escapes in such a
      // string, and it closes where the pattern may end.
      if (pattern_) {
        if (byte == '\\') return false;
        if (byte == '"' && string_.at_boundary()) {
          if (!pattern_->may_end()) return false;
        } else if (!pattern_->push(byte)) {
          return false;
        }
      }
      switch (string_.push(byte)) {
        case JsonStringLexer::Step::Reject:
          return false;
        case JsonStringLexer::Step::Continue:
          return string_.length() <= n.max_length;
        case JsonStringLexer::Step::End:
          if (string_.length() < n.min_length) return false;
          scalar_ = Scalar::None;
          end_value();
          return true;
      }
      return false;
    }
    case Scalar::Number: {
      const SchemaNode& n = node(scalar_node_);
      if (number_.push(byte)) return !n.bounds.bounded() || push_number_text(n, byte);
      if (!number_.complete()) return false;
      if (n.bounds.bounded() && !number_within({number_text_.data(), number_len_}, n.bounds)) return false;
      scalar_ = Scalar::None;  // the number ends: the byte is what follows a value
      end_value();
      return push_byte(byte);
    }
    case Scalar::Literal: {
      const auto& texts = node(scalar_node_).literals;
      if (narrow(texts, literal_lo_, literal_hi_, literal_pos_, byte)) {
        ++literal_pos_;
        if (literal_hi_ - literal_lo_ == 1 && texts[literal_lo_].size() == literal_pos_) {
          scalar_ = Scalar::None;
          end_value();
        }
        return true;
      }
      // Sorted: a literal equal to the bytes so far comes first in the range.
      if (texts[literal_lo_].size() != literal_pos_) return false;
      scalar_ = Scalar::None;
      end_value();
      return push_byte(byte);
    }
    case Scalar::None:
      break;
  }
  return false;
}

bool JsonSchemaPrefix::push_number_text(const SchemaNode& n, uint8_t byte) {
  if (byte == 'e' || byte == 'E' || number_len_ >= number_text_.size()) return false;  // no exponent when bounded
  const std::string_view so_far(number_text_.data(), number_len_);
  const size_t dot = so_far.find('.');
  if (dot != std::string_view::npos && so_far.size() - dot > kBoundedFractionDigits) return false;
  number_text_[number_len_++] = static_cast<char>(byte);
  return number_prefix_feasible({number_text_.data(), number_len_}, n.kind == SchemaNode::Kind::Integer, n.bounds);
}

bool JsonSchemaPrefix::push_value_start(int node_index, uint8_t byte) {
  int index = node_index;
  while (node(index).kind == SchemaNode::Kind::Choice) {
    const SchemaNode& c = node(index);
    const int alt = c.by_first_byte[byte];
    if (alt < 0) return false;
    index = c.alternatives[static_cast<size_t>(alt)];
  }
  const SchemaNode& n = node(index);
  switch (n.kind) {
    case SchemaNode::Kind::Object:
    case SchemaNode::Kind::Array:
      if (byte != (n.kind == SchemaNode::Kind::Object ? '{' : '[') || depth_ >= kMaxDepth) return false;
      stack_[depth_++] = Frame{index, Part::First, 0, 0, 0, 0};
      return true;
    case SchemaNode::Kind::String:
      if (byte != '"') return false;
      scalar_ = Scalar::String;
      scalar_node_ = index;
      string_ = JsonStringLexer();
      if (n.pattern) {
        pattern_.emplace(n.pattern.get());
      } else {
        pattern_.reset();
      }
      format_ = JsonFormatLexer(n.format);
      return true;
    case SchemaNode::Kind::Number:
    case SchemaNode::Kind::Integer:
      if (!JsonNumberLexer::starts(byte)) return false;
      number_ = JsonNumberLexer(n.kind == SchemaNode::Kind::Integer);
      if (!number_.push(byte)) return false;
      scalar_ = Scalar::Number;
      scalar_node_ = index;
      number_len_ = 0;
      return !n.bounds.bounded() || push_number_text(n, byte);
    case SchemaNode::Kind::Literals: {
      uint16_t lo = 0, hi = static_cast<uint16_t>(n.literals.size());
      if (!narrow(n.literals, lo, hi, 0, byte)) return false;
      literal_lo_ = lo;
      literal_hi_ = hi;
      literal_pos_ = 1;
      scalar_node_ = index;
      if (hi - lo == 1 && n.literals[lo].size() == 1) {
        end_value();  // a one-byte literal with nothing longer beside it
      } else {
        scalar_ = Scalar::Literal;
      }
      return true;
    }
    case SchemaNode::Kind::Choice:
      break;
  }
  return false;
}

// Declared properties a key may name now: from the first that may come up
// to and including the first required one.
uint64_t JsonSchemaPrefix::key_candidates(const Frame& f) const {
  const auto& props = node(f.node).properties;
  uint64_t mask = 0;
  for (size_t i = f.prop; i < props.size(); ++i) {
    mask |= uint64_t{1} << i;
    if (props[i].required) break;
  }
  return mask;
}

bool JsonSchemaPrefix::object_may_close(const Frame& f) const {
  const auto& props = node(f.node).properties;
  const size_t first_open = f.part == Part::AfterValue ? f.prop + 1u : f.prop;
  for (size_t i = first_open; i < props.size(); ++i) {
    if (props[i].required) return false;
  }
  return true;
}

bool JsonSchemaPrefix::start_key(Frame& f) {
  const SchemaNode& n = node(f.node);
  if (!n.properties.empty()) {
    f.alive = key_candidates(f);
    if (f.alive == 0) return false;
    f.key_pos = 0;
    f.part = Part::Key;
    return true;
  }
  if (n.additional < 0) return false;  // additionalProperties false: only {}
  string_ = JsonStringLexer();
  f.part = Part::OpenKey;
  return true;
}

bool JsonSchemaPrefix::push_key_byte(Frame& f, uint8_t byte) {
  if (f.part == Part::OpenKey) {
    const auto step = string_.push(byte);
    if (step == JsonStringLexer::Step::End) f.part = Part::Colon;
    return step != JsonStringLexer::Step::Reject;
  }
  const auto& props = node(f.node).properties;
  uint64_t alive = 0;
  for (size_t i = 0; i < props.size(); ++i) {
    if ((f.alive >> i & 1) == 0) continue;
    const std::string& key = props[i].key;
    if (f.key_pos < key.size() && static_cast<uint8_t>(key[f.key_pos]) == byte) alive |= uint64_t{1} << i;
  }
  if (alive == 0) return false;
  f.alive = alive;
  ++f.key_pos;
  // A key's text ends with its only unescaped quote, so one that ends here
  // is the only one left.
  for (size_t i = 0; i < props.size(); ++i) {
    if ((alive >> i & 1) != 0 && props[i].key.size() == f.key_pos) {
      f.prop = static_cast<uint8_t>(i);
      f.part = Part::Colon;
    }
  }
  return true;
}

bool JsonSchemaPrefix::close() {
  --depth_;
  end_value();
  return true;
}

void JsonSchemaPrefix::end_value() {
  if (depth_ == 0) {
    done_ = true;
    return;
  }
  Frame& f = stack_[depth_ - 1u];
  f.part = Part::AfterValue;
  if (node(f.node).kind == SchemaNode::Kind::Array) ++f.count;
}

bool JsonSchemaPrefix::push_structure(uint8_t byte) {
  if (depth_ == 0) return push_value_start(schema_->root, byte);
  Frame& f = stack_[depth_ - 1u];
  const SchemaNode& n = node(f.node);
  if (n.kind == SchemaNode::Kind::Array) {
    switch (f.part) {
      case Part::First:
        if (byte == ']') return n.min_items == 0 && close();
        return n.max_items > 0 && push_value_start(n.items, byte);
      case Part::AfterValue:
        if (byte == ',' && f.count < n.max_items) {
          f.part = Part::Value;
          return true;
        }
        return byte == ']' && f.count >= n.min_items && close();
      case Part::Value:
        return push_value_start(n.items, byte);
      default:
        return false;
    }
  }
  switch (f.part) {
    case Part::First:
      if (byte == '}') return object_may_close(f) && close();
      return byte == '"' && start_key(f);
    case Part::NextKey:
      return byte == '"' && start_key(f);
    case Part::Colon:
      if (byte != ':') return false;
      f.part = Part::Value;
      return true;
    case Part::Value:
      return push_value_start(n.properties.empty() ? n.additional : n.properties[f.prop].node, byte);
    case Part::AfterValue:
      if (byte == '}') return object_may_close(f) && close();
      if (byte != ',') return false;
      if (!n.properties.empty()) {
        if (f.prop + 1u >= n.properties.size()) return false;
        ++f.prop;
      }
      f.part = Part::NextKey;
      return true;
    case Part::Key:
    case Part::OpenKey:
      break;
  }
  return false;
}

}  // namespace tc::text
