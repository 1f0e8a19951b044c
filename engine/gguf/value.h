// A GGUF metadata value: one of the 13 GGUF value types, arrays nested to any
// depth. The variant's alternative index equals the GGUF type id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tc::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

std::string_view value_type_name(ValueType type);  // "u32", "str", "arr", ...

class Value {
 public:
  using Array = std::vector<Value>;
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;

  Value() : data_(uint32_t{0}) {}
  template <typename T>
    requires std::is_constructible_v<Storage, T> && (!std::is_same_v<std::decay_t<T>, Array>)
  explicit Value(T v) : data_(std::move(v)) {}
  explicit Value(const char* s) : data_(std::string(s)) {}
  // An array whose elements all have type `elem_type` (kept for empty arrays).
  static Value array(ValueType elem_type, Array items);
  static Value string_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);

  ValueType type() const { return static_cast<ValueType>(data_.index()); }
  ValueType array_type() const { return elem_type_; }  // meaningful for arrays only
  bool is_array() const { return type() == ValueType::ARRAY; }
  bool is_integer() const;   // any of the 8 integer types
  bool is_float() const;     // FLOAT32 or FLOAT64

  // Typed views; return nullptr when the value has another type.
  const std::string* as_string() const { return std::get_if<std::string>(&data_); }
  const Array* as_array() const { return std::get_if<Array>(&data_); }
  const bool* as_bool() const { return std::get_if<bool>(&data_); }
  // Any integer type widened, or nullopt-like failure through `ok`.
  bool to_i64(int64_t& out) const;   // fails for u64 values above INT64_MAX
  bool to_u64(uint64_t& out) const;  // fails for negative values
  bool to_f64(double& out) const;    // integers and floats

  const Storage& storage() const { return data_; }
  bool operator==(const Value& o) const = default;

  // Human-readable rendering for `inspect`; long arrays are elided after
  // `max_items` elements with the total count shown.
  std::string to_display_string(size_t max_items = 8) const;

 private:
  Storage data_;
  ValueType elem_type_ = ValueType::UINT8;
};

}  // namespace tc::gguf
