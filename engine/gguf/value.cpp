// GGUF metadata values: type names, array constructors, numeric conversions
// and the display form used by `inspect` and error messages.
#include "engine/gguf/value.h"

#include <charconv>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "engine/gguf/model_load_error.h"

namespace tc::gguf {
namespace {

template <typename F>
std::string float_string(F v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::UINT8: return "u8";
    case ValueType::INT8: return "i8";
    case ValueType::UINT16: return "u16";
    case ValueType::INT16: return "i16";
    case ValueType::UINT32: return "u32";
    case ValueType::INT32: return "i32";
    case ValueType::FLOAT32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "str";
    case ValueType::ARRAY: return "arr";
    case ValueType::UINT64: return "u64";
    case ValueType::INT64: return "i64";
    case ValueType::FLOAT64: return "f64";
  }
  return "unknown";
}

Value Value::array(ValueType elem_type, Array items) {
  if (static_cast<uint32_t>(elem_type) >= kValueTypeCount) {
    throw std::invalid_argument("Value::array: unknown element type " +
                                std::to_string(static_cast<uint32_t>(elem_type)));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].type() != elem_type) {
      throw std::invalid_argument("Value::array: element " + std::to_string(i) + " has type " +
                                  std::string(value_type_name(items[i].type())) + ", expected " +
                                  std::string(value_type_name(elem_type)));
    }
  }
  Value v;
  v.data_ = std::move(items);
  v.elem_type_ = elem_type;
  return v;
}

Value Value::string_array(const std::vector<std::string>& items) {
  Array a;
  a.reserve(items.size());
  for (const auto& s : items) a.emplace_back(s);
  return array(ValueType::STRING, std::move(a));
}

Value Value::f32_array(const std::vector<float>& items) {
  Array a;
  a.reserve(items.size());
  for (float f : items) a.emplace_back(f);
  return array(ValueType::FLOAT32, std::move(a));
}

Value Value::i32_array(const std::vector<int32_t>& items) {
  Array a;
  a.reserve(items.size());
  for (int32_t x : items) a.emplace_back(x);
  return array(ValueType::INT32, std::move(a));
}

bool Value::is_integer() const {
  switch (type()) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

bool Value::is_float() const {
  return type() == ValueType::FLOAT32 || type() == ValueType::FLOAT64;
}

bool Value::to_i64(int64_t& out) const {
  return std::visit(
      [&out](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
          }
          out = static_cast<int64_t>(v);
          return true;
        } else {
          return false;
        }
      },
      data_);
}

bool Value::to_u64(uint64_t& out) const {
  return std::visit(
      [&out](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>) {
            if (v < 0) return false;
          }
          out = static_cast<uint64_t>(v);
          return true;
        } else {
          return false;
        }
      },
      data_);
}

bool Value::to_f64(double& out) const {
  return std::visit(
      [&out](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
          out = static_cast<double>(v);
          return true;
        } else {
          return false;
        }
      },
      data_);
}

std::string Value::to_display_string(size_t max_items) const {
  return std::visit(
      [this, max_items](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_floating_point_v<T>) {
          return float_string(v);
        } else if constexpr (std::is_integral_v<T>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          std::string out = "\"";
          for (char c : printable(v, std::numeric_limits<size_t>::max())) {
            if (c == '"') out += '\\';
            out += c;
          }
          out += '"';
          return out;
        } else {
          static_assert(std::is_same_v<T, Array>);
          std::string out = "[";
          const size_t shown = std::min(v.size(), max_items);
          for (size_t i = 0; i < shown; ++i) {
            if (i > 0) out += ", ";
            out += v[i].to_display_string(max_items);
          }
          if (shown < v.size()) {
            out += shown > 0 ? ", ...] (" : "...] (";
            out += std::to_string(v.size()) + " " + std::string(value_type_name(elem_type_)) +
                   " items)";
          } else {
            out += "]";
          }
          return out;
        }
      },
      data_);
}

}  // namespace tc::gguf
