// Filters, tests and globals of the chat template engine, with jinja2's
// semantics (tojson as HuggingFace overrides it: json.dumps with
// ensure_ascii=False, no key sorting, no HTML escaping).
#include "engine/text/jinja_builtins.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <optional>
#include <system_error>
#include <unordered_map>

#include "engine/text/jinja_strings.h"
#include "engine/text/unicode.h"

namespace tc::text::jinja {
namespace {

using FilterFn = Value (*)(const Value&, const CallArgs&);
using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& arg_at(const CallArgs& args, size_t index, std::string_view name, const std::string& what) {
  const Value* v = args.get(index, name);
  if (v == nullptr) throw JinjaError(what + " requires an argument '" + std::string(name) + "'");
  return *v;
}

// d truncated toward zero, or nullopt when that is not an int64 (Python's
// int() has no such limit; an error would name it, a default is kinder).
std::optional<int64_t> truncate_to_int64(double d) {
  if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0)) return std::nullopt;  // NaN too
  return static_cast<int64_t>(d);
}

// `item.a.b` for attribute= arguments; digit parts index lists.
Value attr_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t b = 0;
  while (true) {
    const size_t dot = path.find('.', b);
    const std::string part = path.substr(b, dot == std::string::npos ? std::string::npos : dot - b);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    int64_t index = 0;
    const bool is_index =
        digits && std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc();
    // Digits too many for an index name no element: the string lookup says so.
    v = is_index ? get_item(v, Value(index)) : get_item(v, Value(part));
    if (dot == std::string::npos) return v;
    b = dot + 1;
  }
}

// Sort key: strings lower-cased unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value(py_lower(v.as_string())) : v;
}

Array sorted(const Value& input, const CallArgs& args, size_t first_kw_index) {
  Array items = iterate(input);
  const bool reverse = bool_arg(args.get(first_kw_index, "reverse"), false);
  const bool case_sensitive = bool_arg(args.get(first_kw_index + 1, "case_sensitive"), false);
  const auto attribute = string_arg(args.get(first_kw_index + 2, "attribute"));
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const Value ka = sort_key(attribute ? attr_path(a, *attribute) : a, case_sensitive);
    const Value kb = sort_key(attribute ? attr_path(b, *attribute) : b, case_sensitive);
    return reverse ? compare(kb, ka) < 0 : compare(ka, kb) < 0;
  });
  return items;
}

// select/reject/selectattr/rejectattr: args from `first` are the test name
// and its arguments; no test means truthiness.
Value select(const Value& input, const CallArgs& args, bool by_attr, bool keep) {
  size_t first = 0;
  std::optional<std::string> attribute;
  if (by_attr) {
    attribute = string_arg(&arg_at(args, 0, "attribute", "selectattr"));
    first = 1;
  }
  std::optional<std::string> test;
  CallArgs test_args;
  if (args.positional.size() > first) {
    test = string_arg(&args.positional[first]);
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(first) + 1, args.positional.end());
  }
  if (test && !has_test(*test)) throw JinjaError("no test named '" + *test + "'");
  Array out;
  for (const Value& item : iterate(input)) {
    const Value v = attribute ? attr_path(item, *attribute) : item;
    const bool pass = test ? apply_test(*test, v, test_args) : truthy(v);
    if (pass == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value filter_map(const Value& input, const CallArgs& args) {
  Array out;
  if (const auto attribute = string_arg(args.get(SIZE_MAX, "attribute"))) {
    const Value* fallback = args.get(SIZE_MAX, "default");
    for (const Value& item : iterate(input)) {
      Value v = attr_path(item, *attribute);
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value(std::move(out));
  }
  if (args.positional.empty()) throw JinjaError("map requires a filter name or attribute=");
  const auto name = string_arg(&args.positional[0]);
  if (!name || !has_filter(*name)) throw JinjaError("no filter named '" + name.value_or("") + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.named = args.named;
  for (const Value& item : iterate(input)) out.push_back(apply_filter(*name, item, rest));
  return Value(std::move(out));
}

Value filter_tojson(const Value& input, const CallArgs& args) {
  // HuggingFace: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonOptions opt;
  opt.ensure_ascii = bool_arg(args.get(0, "ensure_ascii"), false);
  opt.indent = static_cast<int>(int_arg(args.get(1, "indent"), -1));
  if (opt.indent >= 0) opt.item_sep = ",";
  const Value* seps = args.get(2, "separators");
  if (seps && seps->is_array() && seps->as_array().size() == 2) {
    opt.item_sep = to_str(seps->as_array()[0]);
    opt.key_sep = to_str(seps->as_array()[1]);
  }
  opt.sort_keys = bool_arg(args.get(3, "sort_keys"), false);
  return Value(json_dumps(input, opt));
}

Value filter_int(const Value& input, const CallArgs& args) {
  const Value* fallback = args.get(0, "default");
  const Value def = fallback ? *fallback : Value(int64_t{0});
  if (input.is_int() || input.is_bool()) return Value(input.as_int());
  if (input.is_float()) {
    const auto i = truncate_to_int64(input.as_double());
    return i ? Value(*i) : def;
  }
  if (!input.is_string()) return def;
  std::string s = py_strip(input.as_string(), std::nullopt, StripSide::Both);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  try {
    size_t used = 0;
    const long long i = std::stoll(s, &used, static_cast<int>(int_arg(args.get(1, "base"), 10)));
    if (used == s.size()) return Value(static_cast<int64_t>(i));
    const double d = std::stod(s, &used);
    if (const auto i = truncate_to_int64(d); used == s.size() && i) return Value(*i);
  } catch (const std::exception&) {
  }
  return def;
}

Value filter_float(const Value& input, const CallArgs& args) {
  const Value* fallback = args.get(0, "default");
  const Value def = fallback ? *fallback : Value(0.0);
  if (input.is_number()) return Value(input.as_double());
  if (!input.is_string()) return def;
  const std::string s = py_strip(input.as_string(), std::nullopt, StripSide::Both);
  try {
    size_t used = 0;
    const double d = std::stod(s, &used);
    if (used == s.size()) return Value(d);
  } catch (const std::exception&) {
  }
  return def;
}

Value filter_round(const Value& input, const CallArgs& args) {
  const int64_t precision = int_arg(args.get(0, "precision"), 0);
  const std::string method = string_arg(args.get(1, "method")).value_or("common");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = input.as_double() * scale;
  double r;
  if (method == "common") r = std::nearbyint(x);  // Python's round(): ties to even
  else if (method == "ceil") r = std::ceil(x);
  else if (method == "floor") r = std::floor(x);
  else throw JinjaError("method must be common, ceil or floor");
  return Value(r / scale);
}

Value filter_indent(const Value& input, const CallArgs& args) {
  const Value* width = args.get(0, "width");
  const std::string pad = (width && width->is_string()) ? width->as_string()
                                                        : std::string(static_cast<size_t>(int_arg(width, 4)), ' ');
  const bool first = bool_arg(args.get(1, "first"), false);
  const bool blank = bool_arg(args.get(2, "blank"), false);
  const std::vector<std::string> lines = py_splitlines(to_str(input) + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  return Value(first ? pad + out : out);
}

Value min_max(const Value& input, const CallArgs& args, bool want_max) {
  const bool case_sensitive = bool_arg(args.get(0, "case_sensitive"), false);
  const auto attribute = string_arg(args.get(1, "attribute"));
  const Array items = iterate(input);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const Value a = sort_key(attribute ? attr_path(items[i], *attribute) : items[i], case_sensitive);
    const Value b = sort_key(attribute ? attr_path(items[best], *attribute) : items[best], case_sensitive);
    if (want_max ? compare(a, b) > 0 : compare(a, b) < 0) best = i;
  }
  return items[best];
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"trim", [](const Value& in, const CallArgs& a) {
         return Value(py_strip(to_str(in), string_arg(a.get(0, "chars")), StripSide::Both));
       }},
      {"length", [](const Value& in, const CallArgs&) { return Value(py_len(in)); }},
      {"count", [](const Value& in, const CallArgs&) { return Value(py_len(in)); }},
      {"tojson", filter_tojson},
      {"upper", [](const Value& in, const CallArgs&) { return Value(py_upper(to_str(in))); }},
      {"lower", [](const Value& in, const CallArgs&) { return Value(py_lower(to_str(in))); }},
      {"title", [](const Value& in, const CallArgs&) { return Value(jinja_title(to_str(in))); }},
      {"capitalize", [](const Value& in, const CallArgs&) { return Value(py_capitalize(to_str(in))); }},
      {"replace", [](const Value& in, const CallArgs& a) {
         return Value(py_replace(to_str(in), to_str(arg_at(a, 0, "old", "replace")), to_str(arg_at(a, 1, "new", "replace")),
                                 int_arg(a.get(2, "count"), -1)));
       }},
      {"join", [](const Value& in, const CallArgs& a) {
         const std::string sep = a.get(0, "d") ? to_str(*a.get(0, "d")) : "";
         const auto attribute = string_arg(a.get(1, "attribute"));
         std::string out;
         bool first = true;
         for (const Value& item : iterate(in)) {
           if (!first) out += sep;
           first = false;
           out += to_str(attribute ? attr_path(item, *attribute) : item);
         }
         return Value(std::move(out));
       }},
      {"first", [](const Value& in, const CallArgs&) {
         const Array items = iterate(in);
         return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
       }},
      {"last", [](const Value& in, const CallArgs&) {
         const Array items = iterate(in);
         return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
       }},
      {"default", [](const Value& in, const CallArgs& a) {
         const bool boolean = bool_arg(a.get(1, "boolean"), false);
         if (in.is_undefined() || (boolean && !truthy(in))) {
           const Value* d = a.get(0, "default_value");
           return d ? *d : Value(std::string());
         }
         return in;
       }},
      {"string", [](const Value& in, const CallArgs&) { return Value(to_str(in)); }},
      {"int", filter_int},
      {"float", filter_float},
      {"list", [](const Value& in, const CallArgs&) { return Value(iterate(in)); }},
      {"items", [](const Value& in, const CallArgs&) {
         if (in.is_undefined()) return Value(Array{});
         if (!in.is_object()) throw JinjaError("Can only get item pairs from a mapping.");
         Array out;
         for (const auto& [k, v] : in.as_object().entries) out.emplace_back(Array{Value(k), v});
         return Value(std::move(out));
       }},
      {"selectattr", [](const Value& in, const CallArgs& a) { return select(in, a, true, true); }},
      {"rejectattr", [](const Value& in, const CallArgs& a) { return select(in, a, true, false); }},
      {"select", [](const Value& in, const CallArgs& a) { return select(in, a, false, true); }},
      {"reject", [](const Value& in, const CallArgs& a) { return select(in, a, false, false); }},
      {"map", filter_map},
      {"safe", [](const Value& in, const CallArgs&) { return in; }},
      {"escape", [](const Value& in, const CallArgs&) { return Value(html_escape(to_str(in))); }},
      {"abs", [](const Value& in, const CallArgs&) {
         if (!in.is_number()) throw JinjaError("bad operand type for abs(): '" + type_name(in) + "'");
         return in.is_float() ? Value(std::fabs(in.as_double())) : Value(in.as_int() < 0 ? -in.as_int() : in.as_int());
       }},
      {"round", filter_round},
      {"sort", [](const Value& in, const CallArgs& a) { return Value(sorted(in, a, 0)); }},
      {"reverse", [](const Value& in, const CallArgs&) {
         if (in.is_string()) {
           std::u32string u = to_u32(in.as_string());
           std::reverse(u.begin(), u.end());
           return Value(to_utf8(u));
         }
         Array items = iterate(in);
         std::reverse(items.begin(), items.end());
         return Value(std::move(items));
       }},
      {"unique", [](const Value& in, const CallArgs& a) {
         const bool case_sensitive = bool_arg(a.get(0, "case_sensitive"), false);
         const auto attribute = string_arg(a.get(1, "attribute"));
         Array out, seen;
         for (const Value& item : iterate(in)) {
           const Value key = sort_key(attribute ? attr_path(item, *attribute) : item, case_sensitive);
           if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
             seen.push_back(key);
             out.push_back(item);
           }
         }
         return Value(std::move(out));
       }},
      {"sum", [](const Value& in, const CallArgs& a) {
         const auto attribute = string_arg(a.get(0, "attribute"));
         const Value* start = a.get(1, "start");
         Value total = start ? *start : Value(int64_t{0});
         for (const Value& item : iterate(in)) {
           const Value v = attribute ? attr_path(item, *attribute) : item;
           if (!v.is_number() || !total.is_number()) throw JinjaError("unsupported operand type(s) for +");
           total = (v.is_float() || total.is_float()) ? Value(total.as_double() + v.as_double()) : Value(total.as_int() + v.as_int());
         }
         return total;
       }},
      {"min", [](const Value& in, const CallArgs& a) { return min_max(in, a, false); }},
      {"max", [](const Value& in, const CallArgs& a) { return min_max(in, a, true); }},
      {"dictsort", [](const Value& in, const CallArgs& a) {
         if (!in.is_object()) throw JinjaError("dictsort expects a mapping");
         const bool case_sensitive = bool_arg(a.get(0, "case_sensitive"), false);
         const bool by_value = string_arg(a.get(1, "by")).value_or("key") == "value";
         const bool reverse = bool_arg(a.get(2, "reverse"), false);
         Array pairs;
         for (const auto& [k, v] : in.as_object().entries) pairs.emplace_back(Array{Value(k), v});
         std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
           const Value kx = sort_key(x.as_array()[by_value ? 1 : 0], case_sensitive);
           const Value ky = sort_key(y.as_array()[by_value ? 1 : 0], case_sensitive);
           return reverse ? compare(ky, kx) < 0 : compare(kx, ky) < 0;
         });
         return Value(std::move(pairs));
       }},
      {"indent", filter_indent},
      {"attr", [](const Value& in, const CallArgs& a) { return get_attr(in, to_str(arg_at(a, 0, "name", "attr"))); }},
      {"wordcount", [](const Value& in, const CallArgs&) {
         int64_t n = 0;  // runs of \w, as jinja2's regex counts them
         bool in_word = false;
         for (const char32_t c : to_u32(to_str(in))) {
           const bool word = is_letter(c) || is_number(c) || c == U'_';
           n += word && !in_word;
           in_word = word;
         }
         return Value(n);
       }},
  };
  return table;
}

const std::unordered_map<std::string_view, std::string_view>& filter_aliases() {
  static const std::unordered_map<std::string_view, std::string_view> table = {{"d", "default"}, {"e", "escape"}};
  return table;
}

bool test_compare(const Value& in, const CallArgs& a, const char* op) {
  const Value& other = arg_at(a, 0, "other", "comparison test");
  const std::string_view o = op;
  if (o == "==") return equals(in, other);
  if (o == "!=") return !equals(in, other);
  const int c = compare(in, other);
  return o == "<" ? c < 0 : o == "<=" ? c <= 0 : o == ">" ? c > 0 : c >= 0;
}

bool is_case(const Value& in, bool want_lower) {
  if (!in.is_string()) return false;
  const std::string& s = in.as_string();
  return (want_lower ? py_lower(s) : py_upper(s)) == s;
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"defined", [](const Value& in, const CallArgs&) { return !in.is_undefined(); }},
      {"undefined", [](const Value& in, const CallArgs&) { return in.is_undefined(); }},
      {"none", [](const Value& in, const CallArgs&) { return in.is_none(); }},
      {"boolean", [](const Value& in, const CallArgs&) { return in.is_bool(); }},
      {"true", [](const Value& in, const CallArgs&) { return in.is_bool() && in.as_bool(); }},
      {"false", [](const Value& in, const CallArgs&) { return in.is_bool() && !in.as_bool(); }},
      {"number", [](const Value& in, const CallArgs&) { return in.is_number(); }},
      {"integer", [](const Value& in, const CallArgs&) { return in.is_int(); }},
      {"float", [](const Value& in, const CallArgs&) { return in.is_float(); }},
      {"string", [](const Value& in, const CallArgs&) { return in.is_string(); }},
      {"mapping", [](const Value& in, const CallArgs&) { return in.is_object(); }},
      {"iterable", [](const Value& in, const CallArgs&) {
         return in.is_undefined() || in.is_string() || in.is_array() || in.is_object();
       }},
      {"sequence", [](const Value& in, const CallArgs&) {
         return in.is_undefined() || in.is_string() || in.is_array() || in.is_object();
       }},
      {"callable", [](const Value& in, const CallArgs&) { return in.is_function(); }},
      {"odd", [](const Value& in, const CallArgs&) { return int_arg(&in, 0) % 2 != 0; }},
      {"even", [](const Value& in, const CallArgs&) { return int_arg(&in, 0) % 2 == 0; }},
      {"divisibleby", [](const Value& in, const CallArgs& a) {
         const int64_t n = int_arg(&arg_at(a, 0, "num", "divisibleby"), 1);
         if (n == 0) throw JinjaError("integer division or modulo by zero");
         return int_arg(&in, 0) % n == 0;
       }},
      {"equalto", [](const Value& in, const CallArgs& a) { return test_compare(in, a, "=="); }},
      {"ne", [](const Value& in, const CallArgs& a) { return test_compare(in, a, "!="); }},
      {"lt", [](const Value& in, const CallArgs& a) { return test_compare(in, a, "<"); }},
      {"le", [](const Value& in, const CallArgs& a) { return test_compare(in, a, "<="); }},
      {"gt", [](const Value& in, const CallArgs& a) { return test_compare(in, a, ">"); }},
      {"ge", [](const Value& in, const CallArgs& a) { return test_compare(in, a, ">="); }},
      {"in", [](const Value& in, const CallArgs& a) {
         const Value& seq = arg_at(a, 0, "seq", "in");
         if (seq.is_string()) return in.is_string() && seq.as_string().find(in.as_string()) != std::string::npos;
         if (seq.is_object()) return in.is_string() && seq.as_object().find(in.as_string()) != nullptr;
         for (const Value& e : iterate(seq)) {
           if (equals(e, in)) return true;
         }
         return false;
       }},
      {"sameas", [](const Value& in, const CallArgs& a) {
         const Value& other = arg_at(a, 0, "other", "sameas");
         if (in.kind() != other.kind()) return false;
         if (in.is_array()) return &in.as_array() == &other.as_array();
         if (in.is_object()) return &in.as_object() == &other.as_object();
         return equals(in, other);
       }},
      {"lower", [](const Value& in, const CallArgs&) { return is_case(in, true); }},
      {"upper", [](const Value& in, const CallArgs&) { return is_case(in, false); }},
      {"escaped", [](const Value&, const CallArgs&) { return false; }},
      {"filter", [](const Value& in, const CallArgs&) { return in.is_string() && has_filter(in.as_string()); }},
      {"test", [](const Value& in, const CallArgs&) { return in.is_string() && has_test(in.as_string()); }},
  };
  return table;
}

const std::unordered_map<std::string_view, std::string_view>& test_aliases() {
  static const std::unordered_map<std::string_view, std::string_view> table = {
      {"eq", "equalto"}, {"==", "equalto"}, {"!=", "ne"}, {"lessthan", "lt"}, {"<", "lt"}, {"<=", "le"},
      {"greaterthan", "gt"}, {">", "gt"}, {">=", "ge"}};
  return table;
}

std::string_view resolve(std::string_view name, const std::unordered_map<std::string_view, std::string_view>& aliases) {
  const auto it = aliases.find(name);
  return it == aliases.end() ? name : it->second;
}

Value make_range(CallArgs& args) {
  if (args.positional.empty() || args.positional.size() > 3) throw JinjaError("range expected 1 to 3 arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (args.positional.size() == 1) {
    stop = int_arg(&args.positional[0], 0);
  } else {
    start = int_arg(&args.positional[0], 0);
    stop = int_arg(&args.positional[1], 0);
    if (args.positional.size() == 3) step = int_arg(&args.positional[2], 1);
  }
  if (step == 0) throw JinjaError("range() arg 3 must not be zero");
  Array out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000) throw JinjaError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.emplace_back(i);
  }
  return Value(std::move(out));
}

// namespace(...) and dict(...): an optional mapping, then keyword arguments.
Object kwargs_object(CallArgs& args, const char* what) {
  Object o;
  if (args.positional.size() > 1) throw JinjaError(std::string(what) + " expected at most 1 positional argument");
  if (!args.positional.empty()) {
    if (!args.positional[0].is_object()) throw JinjaError(std::string(what) + " expects a mapping");
    o = args.positional[0].as_object();
  }
  for (const auto& [k, v] : args.named) o.set(k, v);
  return o;
}

Value strftime_now(CallArgs& args) {
  if (args.positional.size() != 1 || !args.positional[0].is_string()) throw JinjaError("strftime_now expects a format string");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  const std::string& fmt = args.positional[0].as_string();
  if (fmt.empty()) return Value(std::string());
  std::string buf(256 + fmt.size() * 8, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &local);
  buf.resize(n);
  return Value(std::move(buf));
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(resolve(name, filter_aliases())) != 0; }
bool has_test(std::string_view name) { return tests().count(resolve(name, test_aliases())) != 0; }

Value apply_filter(std::string_view name, const Value& input, const CallArgs& args) {
  const auto it = filters().find(resolve(name, filter_aliases()));
  if (it == filters().end()) throw JinjaError("no filter named '" + std::string(name) + "'");
  return it->second(input, args);
}

bool apply_test(std::string_view name, const Value& input, const CallArgs& args) {
  const auto it = tests().find(resolve(name, test_aliases()));
  if (it == tests().end()) throw JinjaError("no test named '" + std::string(name) + "'");
  return it->second(input, args);
}

Value global(const std::string& name) {
  static const std::unordered_map<std::string, Value> table = {
      {"range", Value::function("range", make_range)},
      {"namespace", Value::function("namespace", [](CallArgs& args) {
         auto ns = std::make_shared<Namespace>();
         ns->attrs = kwargs_object(args, "namespace");
         return Value(std::move(ns));
       })},
      {"dict", Value::function("dict", [](CallArgs& args) { return Value(kwargs_object(args, "dict")); })},
      {"raise_exception", Value::function("raise_exception", [](CallArgs& args) -> Value {
         throw JinjaError(args.positional.empty() ? std::string() : to_str(args.positional[0]));
       })},
      {"strftime_now", Value::function("strftime_now", strftime_now)},
  };
  const auto it = table.find(name);
  return it == table.end() ? Value() : it->second;
}

}  // namespace tc::text::jinja
