// Attribute, item and slice access for the chat template engine, with the
// Python str and dict methods templates call (`content.strip()`,
// `message.get('x')`, `tool.items()`), iteration and len().
#include "engine/text/jinja_builtins.h"

#include "engine/text/jinja_strings.h"

namespace tc::text::jinja {
namespace {

Value missing_attr(const Value& obj, const std::string& name) {
  std::string hint = "'";  // appended piecewise: GCC 12 misfires -Wrestrict on chained operator+
  hint += type_name(obj);
  hint += "' has no attribute '";
  hint += name;
  hint += "'";
  return Value::undefined(std::move(hint));
}

void require_args(const std::string& method, const CallArgs& args, size_t min_n, size_t max_n) {
  const size_t n = args.positional.size() + args.named.size();
  if (n < min_n || n > max_n) {
    throw JinjaError(method + "() takes " + (min_n == max_n ? "exactly " : "at most ") + std::to_string(max_n) +
                     " argument(s) (" + std::to_string(n) + " given)");
  }
}

std::string required_string(const std::string& method, const Value* v) {
  if (v == nullptr || !v->is_string()) {
    throw JinjaError(method + "() argument must be str, not " + (v ? type_name(*v) : std::string("nothing")));
  }
  return v->as_string();
}

Value string_list(std::vector<std::string> parts) {
  Array out;
  out.reserve(parts.size());
  for (std::string& p : parts) out.emplace_back(std::move(p));
  return Value(std::move(out));
}

// startswith/endswith accept a str or a tuple of them.
bool affix_match(const std::string& s, const Value& arg, bool prefix, const std::string& method) {
  if (arg.is_array()) {
    for (const Value& a : arg.as_array()) {
      if (affix_match(s, a, prefix, method)) return true;
    }
    return false;
  }
  const std::string a = required_string(method, &arg);
  if (a.size() > s.size()) return false;
  return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
}

Value str_method(const std::string& s, const std::string& name) {
  using Fn = std::function<Value(CallArgs&)>;
  Fn fn;
  const auto strip = [s, name](StripSide side) {
    return Fn([s, name, side](CallArgs& args) {
      require_args(name, args, 0, 1);
      return Value(py_strip(s, string_arg(args.get(0, "chars")), side));
    });
  };
  const auto no_args = [s, name](std::string (*op)(std::string_view)) {
    return Fn([s, name, op](CallArgs& args) {
      require_args(name, args, 0, 0);
      return Value(op(s));
    });
  };
  if (name == "strip") fn = strip(StripSide::Both);
  else if (name == "lstrip") fn = strip(StripSide::Left);
  else if (name == "rstrip") fn = strip(StripSide::Right);
  else if (name == "upper") fn = no_args(py_upper);
  else if (name == "lower") fn = no_args(py_lower);
  else if (name == "title") fn = no_args(py_title);
  else if (name == "capitalize") fn = no_args(py_capitalize);
  else if (name == "startswith" || name == "endswith") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 1, 1);
      return Value(affix_match(s, args.positional.at(0), name == "startswith", name));
    };
  } else if (name == "split" || name == "rsplit") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 0, 2);
      const auto sep = string_arg(args.get(0, "sep"));
      const int64_t maxsplit = int_arg(args.get(1, "maxsplit"), -1);
      return string_list(name == "split" ? py_split(s, sep, maxsplit) : py_rsplit(s, sep, maxsplit));
    };
  } else if (name == "splitlines") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 0, 1);
      return string_list(py_splitlines(s));
    };
  } else if (name == "replace") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 2, 3);
      return Value(py_replace(s, required_string(name, args.get(0, "old")), required_string(name, args.get(1, "new")),
                              int_arg(args.get(2, "count"), -1)));
    };
  } else if (name == "find" || name == "rfind" || name == "count") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 1, 1);
      const std::string sub = required_string(name, args.get(0, "sub"));
      if (name == "count") {
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + std::max<size_t>(sub.size(), 1))) ++n;
        return Value(n);
      }
      const size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
      if (p == std::string::npos) return Value(int64_t{-1});
      return Value(py_len(Value(s.substr(0, p))));
    };
  } else if (name == "join") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 1, 1);
      std::string out;
      bool first = true;
      for (const Value& v : iterate(args.positional.at(0))) {
        if (!v.is_string()) throw JinjaError("sequence item: expected str instance, " + type_name(v) + " found");
        if (!first) out += s;
        first = false;
        out += v.as_string();
      }
      return Value(std::move(out));
    };
  } else if (name == "removeprefix" || name == "removesuffix") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 1, 1);
      const std::string a = required_string(name, args.get(0, "prefix"));
      if (!affix_match(s, Value(a), name == "removeprefix", name)) return Value(s);
      return Value(name == "removeprefix" ? s.substr(a.size()) : s.substr(0, s.size() - a.size()));
    };
  } else if (name == "isspace" || name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "islower" ||
             name == "isupper") {
    fn = [s, name](CallArgs& args) {
      require_args(name, args, 0, 0);
      if (s.empty()) return Value(false);
      bool cased = false;
      for (const char32_t c : to_u32(s)) {
        const bool digit = c >= U'0' && c <= U'9';
        const bool up = c >= U'A' && c <= U'Z', low = c >= U'a' && c <= U'z';
        cased = cased || up || low;
        if (name == "isspace" && !py_isspace(c)) return Value(false);
        if (name == "isdigit" && !digit) return Value(false);
        if (name == "isalpha" && !(up || low)) return Value(false);
        if (name == "isalnum" && !(up || low || digit)) return Value(false);
        if (name == "islower" && up) return Value(false);
        if (name == "isupper" && low) return Value(false);
      }
      return Value(name == "islower" || name == "isupper" ? cased : true);
    };
  } else {
    return Value();
  }
  return Value::function(name, std::move(fn));
}

Value dict_method(const Value& obj, const std::string& name) {
  if (name == "items" || name == "keys" || name == "values") {
    return Value::function(name, [obj, name](CallArgs& args) {
      require_args(name, args, 0, 0);
      Array out;
      for (const auto& [k, v] : obj.as_object().entries) {
        if (name == "items") out.emplace_back(Array{Value(k), v});
        else if (name == "keys") out.emplace_back(k);
        else out.push_back(v);
      }
      return Value(std::move(out));
    });
  }
  if (name == "get") {
    return Value::function(name, [obj](CallArgs& args) {
      require_args("get", args, 1, 2);
      const Value* key = args.get(0, "key");
      const Value* hit = key && key->is_string() ? obj.as_object().find(key->as_string()) : nullptr;
      if (hit) return *hit;
      const Value* fallback = args.get(1, "default");
      return fallback ? *fallback : Value(nullptr);
    });
  }
  return Value();
}

}  // namespace

std::optional<std::string> string_arg(const Value* v) {
  if (v == nullptr || v->is_none() || v->is_undefined()) return std::nullopt;
  if (!v->is_string()) throw JinjaError("expected a str argument, got " + type_name(*v));
  return v->as_string();
}

int64_t int_arg(const Value* v, int64_t fallback) {
  if (v == nullptr || v->is_none() || v->is_undefined()) return fallback;
  if (!v->is_int() && !v->is_bool()) throw JinjaError("expected an int argument, got " + type_name(*v));
  return v->as_int();
}

bool bool_arg(const Value* v, bool fallback) {
  if (v == nullptr || v->is_none() || v->is_undefined()) return fallback;
  return truthy(*v);
}

int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: {
      int64_t n = 0;
      for (const char c : v.as_string()) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      return n;
    }
    case Value::Kind::Array: return static_cast<int64_t>(v.as_array().size());
    case Value::Kind::Object: return static_cast<int64_t>(v.as_object().entries.size());
    default: throw JinjaError("object of type '" + type_name(v) + "' has no len()");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: return obj;
    case Value::Kind::Object: {
      Value method = dict_method(obj, name);
      if (!method.is_undefined()) return method;
      const Value* v = obj.as_object().find(name);
      return v ? *v : missing_attr(obj, name);
    }
    case Value::Kind::Namespace: {
      const Value* v = obj.as_namespace().attrs.find(name);
      return v ? *v : missing_attr(obj, name);
    }
    case Value::Kind::String: {
      Value method = str_method(obj.as_string(), name);
      return method.is_undefined() ? missing_attr(obj, name) : method;
    }
    default: return missing_attr(obj, name);
  }
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return obj;
  if ((obj.is_array() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    const int64_t n = py_len(obj);
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
      return Value::undefined(type_name(obj) + " has no element " + std::to_string(key.as_int()));
    }
    if (obj.is_array()) return obj.as_array()[static_cast<size_t>(i)];
    const std::u32string u = to_u32(obj.as_string());
    return Value(to_utf8(std::u32string_view(&u[static_cast<size_t>(i)], 1)));
  }
  if (obj.is_object() && key.is_string()) {
    const Value* v = obj.as_object().find(key.as_string());
    if (v) return *v;
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  std::string hint = "'";
  hint += type_name(obj);
  hint += "' has no attribute ";
  hint += repr(key);
  return Value::undefined(std::move(hint));
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) return obj;
  if (!obj.is_array() && !obj.is_string()) throw JinjaError("'" + type_name(obj) + "' is not subscriptable");
  const int64_t n = py_len(obj);
  const int64_t st = int_arg(&step, 1);
  if (st == 0) throw JinjaError("slice step cannot be zero");
  const auto adjust = [&](const Value& v, int64_t fallback) {
    if (v.is_none() || v.is_undefined()) return fallback;
    int64_t i = int_arg(&v, 0);
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t b = adjust(start, st < 0 ? n - 1 : 0);
  const int64_t e = adjust(stop, st < 0 ? -1 : n);
  std::vector<size_t> picked;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) picked.push_back(static_cast<size_t>(i));
  if (obj.is_array()) {
    Array out;
    for (const size_t i : picked) out.push_back(obj.as_array()[i]);
    return Value(std::move(out));
  }
  const std::u32string u = to_u32(obj.as_string());
  std::u32string out;
  for (const size_t i : picked) out += u[i];
  return Value(to_utf8(out));
}

Array iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::Array: return v.as_array();
    case Value::Kind::Object: {
      Array keys;
      for (const auto& [k, e] : v.as_object().entries) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::String: {
      Array chars;
      for (const char32_t c : to_u32(v.as_string())) chars.emplace_back(to_utf8(std::u32string_view(&c, 1)));
      return chars;
    }
    default: throw JinjaError("'" + type_name(v) + "' is not iterable");
  }
}

}  // namespace tc::text::jinja
