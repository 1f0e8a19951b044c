// Value semantics for the chat template engine: Python's truth, equality,
// ordering, str()/repr() and json.dumps layout (string escaping is
// nlohmann::json's, which matches Python's for ensure_ascii=False).
#include "engine/text/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/text/unicode.h"

namespace tc::text::jinja {

const Value* Object::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Object::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
  for (const auto& [k, v] : named) {
    if (k == name) return &v;
  }
  if (index < positional.size()) return &positional[index];
  return nullptr;
}

Value from_json(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value(nullptr);
    case nlohmann::json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& e : j) a.push_back(from_json(e));
      return Value(std::move(a));
    }
    case nlohmann::json::value_t::object: {
      Object o;
      o.entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) o.entries.emplace_back(it.key(), from_json(it.value()));
      return Value(std::move(o));
    }
    default: return Value(nullptr);  // binary and discarded never come from a request body
  }
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int() != 0;
    case Value::Kind::Float: return v.as_double() != 0.0;
    case Value::Kind::String: return !v.as_string().empty();
    case Value::Kind::Array: return !v.as_array().empty();
    case Value::Kind::Object: return !v.as_object().entries.empty();
    default: return true;
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.as_string() == b.as_string();
    case Value::Kind::Array: {
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::Object: {
      const Object& x = a.as_object();
      const Object& y = b.as_object();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* w = y.find(k);
        if (w == nullptr || !equals(v, *w)) return false;
      }
      return true;
    }
    case Value::Kind::Namespace: return &a.as_namespace() == &b.as_namespace();
    case Value::Kind::Function: return &a.as_function() == &b.as_function();
    default: return false;
  }
}

namespace {
std::string py_type(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::Array: return "list";
    case Value::Kind::Object: return "dict";
    case Value::Kind::Namespace: return "Namespace";
    default: return "function";
  }
}
}  // namespace

int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (y < x ? 1 : 0);
    }
    const int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (y < x ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_array() && b.is_array()) {
    const Array& x = a.as_array();
    const Array& y = b.as_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw JinjaError("'<' not supported between instances of '" + py_type(a) + "' and '" + py_type(b) + "'");
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // "-1.2345e+07": the shortest round-trip digits
  const size_t e_pos = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e_pos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exp = std::stoi(sci.substr(e_pos + 1));
  std::string out = negative ? "-" : "";
  if (exp >= -4 && exp <= 15) {  // Python's repr switches to exponents outside 1e-4 .. 1e16
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + ebuf;
}

std::string repr(const Value& v) {
  if (!v.is_string()) return v.is_undefined() ? "Undefined" : to_str(v);
  const std::string& s = v.as_string();
  const char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (const char32_t c : utf8_to_codepoints(s)) {
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c == U'\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7f && c <= 0xa0)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else {
      utf8_append(out, c);
    }
  }
  out += quote;
  return out;
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return float_repr(v.as_double());
    case Value::Kind::String: return v.as_string();
    case Value::Kind::Array: {
      std::string out = "[";
      bool first = true;
      for (const Value& e : v.as_array()) {
        if (!first) out += ", ";
        first = false;
        out += repr(e);
      }
      return out + "]";
    }
    case Value::Kind::Object:
    case Value::Kind::Namespace: {
      const Object& o = v.is_object() ? v.as_object() : v.as_namespace().attrs;
      std::string out = v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, e] : o.entries) {
        if (!first) out += ", ";
        first = false;
        out += repr(Value(k)) + ": " + repr(e);
      }
      return out + (v.is_namespace() ? "}>" : "}");
    }
    default: return "<function " + v.as_function().name + ">";
  }
}

std::string type_name(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_undefined()) return "Undefined";
  return py_type(v) + " object";
}

namespace {
void dumps(const Value& v, const JsonOptions& opt, int depth, std::string& out) {
  const auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<size_t>(opt.indent * level), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
      const double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
      return;
    }
    case Value::Kind::String:
      out += nlohmann::json(v.as_string()).dump(-1, ' ', opt.ensure_ascii, nlohmann::json::error_handler_t::replace);
      return;
    case Value::Kind::Array:
    case Value::Kind::Object: {
      const bool is_array = v.is_array();
      const size_t n = is_array ? v.as_array().size() : v.as_object().entries.size();
      if (n == 0) {
        out += is_array ? "[]" : "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      if (!is_array) {
        for (const auto& e : v.as_object().entries) entries.push_back(&e);
        if (opt.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
        }
      }
      out += is_array ? '[' : '{';
      for (size_t i = 0; i < n; ++i) {
        if (i > 0) out += opt.item_sep;
        if (opt.indent >= 0) newline(depth + 1);
        if (is_array) {
          dumps(v.as_array()[i], opt, depth + 1, out);
        } else {
          dumps(Value(entries[i]->first), opt, depth + 1, out);
          out += opt.key_sep;
          dumps(entries[i]->second, opt, depth + 1, out);
        }
      }
      if (opt.indent >= 0) newline(depth);
      out += is_array ? ']' : '}';
      return;
    }
    default:
      throw JinjaError("Object of type " + py_type(v) + " is not JSON serializable");
  }
}
}  // namespace

std::string json_dumps(const Value& v, const JsonOptions& options) {
  std::string out;
  dumps(v, options, 0, out);
  return out;
}

bool py_isspace(char32_t c) { return is_whitespace(c) || (c >= 0x1c && c <= 0x1f); }

std::u32string to_u32(std::string_view s) {
  const std::vector<char32_t> cps = utf8_to_codepoints(s);
  return std::u32string(cps.begin(), cps.end());
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char32_t c : s) utf8_append(out, c);
  return out;
}

}  // namespace tc::text::jinja
