// The value type of the chat template engine: JSON data (none, bool, int,
// float, string, list, dict) plus the template-only kinds (undefined,
// namespace, callable), with Python's semantics for truth, equality,
// ordering, str() and repr(), and json.dumps as HuggingFace's tojson calls it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace tc::text::jinja {

// A failure while parsing or rendering. `line` is 0 until the evaluator
// attaches the line of the node at fault.
class JinjaError : public std::runtime_error {
 public:
  explicit JinjaError(const std::string& message, int line = 0)
      : std::runtime_error(message), line(line) {}
  int line;
};

// Counts one level of recursion in `depth` while alive (the parser's and the
// evaluator's own counters, which keep a template within a thread's stack);
// past `limit` it throws JinjaError("the template nests <what> more than
// <limit> levels deep", line) instead.
class NestingGuard {
 public:
  NestingGuard(int& depth, int limit, const char* what, int line = 0) : depth_(depth) {
    if (++depth_ > limit) {
      --depth_;
      throw JinjaError("the template nests " + std::string(what) + " more than " + std::to_string(limit) +
                           " levels deep",
                       line);
    }
  }
  ~NestingGuard() { --depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& depth_;
};

class Value;
using Array = std::vector<Value>;

// A dict with Python's insertion order; keys are strings.
struct Object {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// The mutable object `namespace(...)` returns; shared by every copy.
struct Namespace {
  Object attrs;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  // The named argument `name`, or positional `index` when given, else null.
  const Value* get(size_t index, std::string_view name) const;
};

// A builtin function, a bound method or a macro.
struct Function {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

// What an undefined value stands for, for the error when it is used.
struct Undefined {
  std::string hint;  // e.g. "'foo' is undefined"
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, Array, Object, Namespace, Function };

  Value() : v_(Undefined{}) {}
  Value(std::nullptr_t) : v_(nullptr) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(int64_t{i}) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
  Value(Object o) : v_(std::make_shared<Object>(std::move(o))) {}
  Value(std::shared_ptr<Namespace> ns) : v_(std::move(ns)) {}
  Value(std::shared_ptr<Function> fn) : v_(std::move(fn)) {}

  static Value undefined(std::string hint) { Value v; v.v_ = Undefined{std::move(hint)}; return v; }
  static Value function(std::string name, std::function<Value(CallArgs&)> call) {
    return Value(std::make_shared<Function>(Function{std::move(name), std::move(call)}));
  }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  // int, float or bool (Python's bool is an int)
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_array() const { return kind() == Kind::Array; }
  bool is_object() const { return kind() == Kind::Object; }
  bool is_namespace() const { return kind() == Kind::Namespace; }
  bool is_function() const { return kind() == Kind::Function; }

  bool as_bool() const { return std::get<bool>(v_); }
  // int or bool as int64
  int64_t as_int() const { return is_bool() ? int64_t{as_bool()} : std::get<int64_t>(v_); }
  // any number as double
  double as_double() const { return is_float() ? std::get<double>(v_) : static_cast<double>(as_int()); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(v_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<Function>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }

 private:
  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>, std::shared_ptr<Namespace>, std::shared_ptr<Function>>
      v_;
};

// JSON objects keep nlohmann::json's (sorted) key order.
Value from_json(const nlohmann::json& j);

// Python's truth value; undefined is false.
bool truthy(const Value& v);
// Python's ==, deep; 1 == 1.0 == True.
bool equals(const Value& a, const Value& b);
// Python's <: -1, 0, 1; throws JinjaError for unorderable types.
int compare(const Value& a, const Value& b);

// Python's str(): what `{{ v }}` prints (undefined prints nothing).
std::string to_str(const Value& v);
// Python's repr(), used for the items of printed lists and dicts.
std::string repr(const Value& v);
// Python's repr() of a float: shortest round trip, "1.0", "1e-05".
std::string float_repr(double d);
// Jinja's name of a value's type in messages: "str object", "dict object".
std::string type_name(const Value& v);

// The json.dumps arguments HuggingFace's tojson filter passes through.
struct JsonOptions {
  int indent = -1;               // < 0: None (one line)
  std::string item_sep = ", ";   // Python's default: "," when indented
  std::string key_sep = ": ";
  bool ensure_ascii = false;
  bool sort_keys = false;
};

// json.dumps(v, **options). Throws JinjaError for values that are not JSON
// (undefined, namespace, callable).
std::string json_dumps(const Value& v, const JsonOptions& options);

// Python string helpers over UTF-8.
bool py_isspace(char32_t c);
std::u32string to_u32(std::string_view s);
std::string to_utf8(std::u32string_view s);

}  // namespace tc::text::jinja
