// Builtins of the chat template engine: filters, tests, attribute and item
// access (with the str/dict methods templates call), and the globals
// (range, namespace, dict, raise_exception, strftime_now). They throw
// JinjaError without a line; the evaluator adds the line of the call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/text/jinja_value.h"

namespace tc::text::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

Value apply_filter(std::string_view name, const Value& input, const CallArgs& args);
bool apply_test(std::string_view name, const Value& input, const CallArgs& args);

// `obj.name`: a bound method of a str or dict, a dict key, a namespace
// attribute, else undefined (attribute access on undefined is undefined).
Value get_attr(const Value& obj, const std::string& name);
// `obj[key]`: list/str index (negative from the end), dict key, else as
// get_attr for string keys.
Value get_item(const Value& obj, const Value& key);
// `obj[start:stop:step]` on a list or str (null Values: absent).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// The builtin global `name`, or undefined.
Value global(const std::string& name);

// Iteration as jinja2 does it: list items, dict keys, str characters,
// nothing for undefined; throws for other kinds.
Array iterate(const Value& v);

// len(): code points of a str, items of a list or dict, 0 for undefined.
int64_t py_len(const Value& v);

// Argument helpers: an absent, none or undefined argument is the fallback.
std::optional<std::string> string_arg(const Value* v);
int64_t int_arg(const Value* v, int64_t fallback);
bool bool_arg(const Value* v, bool fallback);

}  // namespace tc::text::jinja
