// Tree-walking evaluator: statements append to an output string, expressions
// produce Values. Every JinjaError leaving a node without a line gets that
// node's line, so builtins stay line-agnostic.
#include "engine/text/jinja_eval.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>
#include <unordered_map>

#include "engine/text/jinja_builtins.h"

namespace tc::text::jinja {
namespace {

constexpr int kMaxMacroDepth = 64;
// Statements and expressions being evaluated at once, nested: what the
// native stack holds. The parser bounds each expression and block, but
// macros multiply them (64 calls, each from inside a 256-deep expression,
// overflowed an 8 MiB stack); this bounds the product. Real templates stay
// under a hundred.
constexpr int kMaxEvalNesting = 1000;

struct Scope {
  std::unordered_map<std::string, Value> vars;
  Scope* parent = nullptr;
};

enum class Flow { Normal, Break, Continue };

std::string operand_types(std::string_view op, const Value& a, const Value& b) {
  auto short_name = [](const Value& v) {
    std::string t = type_name(v);
    const size_t sp = t.find(' ');
    return sp == std::string::npos ? t : t.substr(0, sp);
  };
  return "unsupported operand type(s) for " + std::string(op) + ": '" + short_name(a) + "' and '" + short_name(b) + "'";
}

// How deep a namespace attribute's value may nest: with namespaces kept out
// of namespaces (below), the only values that live from one loop iteration
// to the next stay this shallow, so printing, comparing and freeing any
// value stays within a thread's stack (`set ns.x = [ns.x]` in a loop would
// otherwise grow without end).
constexpr int kMaxNamespaceValueDepth = 256;

// Throws unless `v` may be stored in a namespace attribute: it holds no
// namespace (which also rules out cycles: a namespace holding itself) and
// nests at most kMaxNamespaceValueDepth arrays and objects. Walks with a
// work list, depth first, stopping at the first problem.
void check_namespace_value(const Value& v) {
  std::vector<std::pair<const Value*, int>> pending{{&v, 0}};
  while (!pending.empty()) {
    const auto [x, depth] = pending.back();
    pending.pop_back();
    if (x->is_namespace()) throw JinjaError("a namespace attribute cannot hold a namespace");
    if (depth > kMaxNamespaceValueDepth) {
      throw JinjaError("a namespace attribute's value nests more than " + std::to_string(kMaxNamespaceValueDepth) +
                       " levels deep");
    }
    if (x->is_array()) {
      for (const Value& e : x->as_array()) pending.emplace_back(&e, depth + 1);
    } else if (x->is_object()) {
      for (const auto& [k, e] : x->as_object().entries) pending.emplace_back(&e, depth + 1);
    }
  }
}

void require_defined(const Value& v) {
  if (v.is_undefined()) throw JinjaError(v.undefined_hint());
}

Value repeat(const Value& seq, int64_t n) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  Array out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_array().begin(), seq.as_array().end());
  return Value(std::move(out));
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(to_str(a) + to_str(b));
  require_defined(a);
  require_defined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool any_float = a.is_float() || b.is_float();
  if (op == "+") {
    if (nums) return any_float ? Value(a.as_double() + b.as_double()) : Value(a.as_int() + b.as_int());
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_array() && b.is_array()) {
      Array out = a.as_array();
      out.insert(out.end(), b.as_array().begin(), b.as_array().end());
      return Value(std::move(out));
    }
  } else if (op == "-") {
    if (nums) return any_float ? Value(a.as_double() - b.as_double()) : Value(a.as_int() - b.as_int());
  } else if (op == "*") {
    if (nums) return any_float ? Value(a.as_double() * b.as_double()) : Value(a.as_int() * b.as_int());
    if ((a.is_string() || a.is_array()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_array()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
  } else if (op == "/" || op == "//" || op == "%") {
    if (nums) {
      if (b.as_double() == 0.0) throw JinjaError(op == "%" ? "modulo by zero" : "division by zero");
      if (op == "/") return Value(a.as_double() / b.as_double());
      if (!any_float) {
        const int64_t x = a.as_int(), y = b.as_int();
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
          --q;
          r += y;
        }
        return op == "//" ? Value(q) : Value(r);
      }
      const double x = a.as_double(), y = b.as_double();
      const double q = std::floor(x / y);
      return op == "//" ? Value(q) : Value(x - q * y);
    }
  } else if (op == "**") {
    if (nums) {
      if (!any_float && b.as_int() >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < b.as_int(); ++i) r *= a.as_int();
        return Value(r);
      }
      return Value(std::pow(a.as_double(), b.as_double()));
    }
  }
  throw JinjaError(operand_types(op, a, b));
}

bool contains(const Value& container, const Value& needle) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!needle.is_string()) {
        throw JinjaError("'in <string>' requires string as left operand, not " + type_name(needle));
      }
      return container.as_string().find(needle.as_string()) != std::string::npos;
    case Value::Kind::Array:
      for (const Value& e : container.as_array()) {
        if (equals(e, needle)) return true;
      }
      return false;
    case Value::Kind::Object: return needle.is_string() && container.as_object().find(needle.as_string()) != nullptr;
    default: throw JinjaError("argument of type '" + type_name(container) + "' is not iterable");
  }
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  require_defined(a);
  require_defined(b);
  const int c = compare(a, b);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

class Evaluator {
 public:
  explicit Evaluator(const nlohmann::json& variables) {
    if (variables.is_object()) {
      for (auto it = variables.begin(); it != variables.end(); ++it) globals_.vars[it.key()] = from_json(it.value());
    }
    root_.parent = &globals_;
  }

  std::string run(const Body& program) {
    std::string out;
    exec_body(program, root_, out);
    return out;
  }

 private:
  Flow exec_body(const Body& body, Scope& scope, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow flow = exec(*s, scope, out);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  // One level of evaluation nesting, while alive.
  NestingGuard nested() {
    return NestingGuard(nesting_, kMaxEvalNesting, "statements and expressions (in macros calling macros)");
  }

  Flow exec(const Stmt& s, Scope& scope, std::string& out) {
    const NestingGuard guard = nested();
    try {
      return exec_stmt(s, scope, out);
    } catch (JinjaError& e) {
      if (e.line == 0) e.line = s.line;
      throw;
    }
  }

  void assign(Scope& scope, const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = v;
      return;
    }
    const Array items = iterate(v);
    if (items.size() != targets.size()) {
      throw JinjaError(items.size() > targets.size() ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
                                                     : "not enough values to unpack (expected " + std::to_string(targets.size()) +
                                                           ", got " + std::to_string(items.size()) + ")");
    }
    for (size_t i = 0; i < items.size(); ++i) scope.vars[targets[i]] = items[i];
  }

  Flow exec_stmt(const Stmt& s, Scope& scope, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::Text: out += s.text; return Flow::Normal;
      case Stmt::Kind::Output: out += to_str(eval(*s.exprs[0], scope)); return Flow::Normal;
      case Stmt::Kind::If:
        for (size_t i = 0; i < s.bodies.size(); ++i) {
          if (i == s.exprs.size() || truthy(eval(*s.exprs[i], scope))) return exec_body(s.bodies[i], scope, out);
        }
        return Flow::Normal;
      case Stmt::Kind::For: exec_for(s, scope, out); return Flow::Normal;
      case Stmt::Kind::Set: {
        const Value v = eval(*s.exprs[0], scope);
        if (s.text.empty()) {
          assign(scope, s.targets, v);
          return Flow::Normal;
        }
        const Value ns = lookup(s.targets[0], scope);
        if (!ns.is_namespace()) throw JinjaError("cannot assign attribute on non-namespace object");
        check_namespace_value(v);
        ns.as_namespace().attrs.set(s.text, v);
        return Flow::Normal;
      }
      case Stmt::Kind::SetBlock: {
        Scope inner{{}, &scope};
        std::string captured;
        exec_body(s.bodies[0], inner, captured);
        scope.vars[s.targets[0]] = Value(std::move(captured));
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: {
        const Stmt* macro = &s;
        scope.vars[s.text] = Value::function(s.text, [this, macro](CallArgs& args) { return call_macro(*macro, args); });
        return Flow::Normal;
      }
      case Stmt::Kind::FilterBlock: {
        if (s.exprs.empty()) return exec_body(s.bodies[0], scope, out);
        std::string captured;
        const Flow flow = exec_body(s.bodies[0], scope, captured);
        out += to_str(eval_filter(*s.exprs[0], Value(std::move(captured)), scope));
        return flow;
      }
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  void exec_for(const Stmt& s, Scope& scope, std::string& out) {
    Array items = iterate(eval(*s.exprs[0], scope));
    if (s.exprs[1]) {
      Array kept;
      for (Value& item : items) {
        Scope probe{{}, &scope};
        assign(probe, s.targets, item);
        if (truthy(eval(*s.exprs[1], probe))) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      exec_body(s.bodies[1], scope, out);
      return;
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      Scope iter{{}, &scope};
      assign(iter, s.targets, items[static_cast<size_t>(i)]);
      Object loop;
      loop.entries = {
          {"index", Value(i + 1)},
          {"index0", Value(i)},
          {"revindex", Value(n - i)},
          {"revindex0", Value(n - i - 1)},
          {"first", Value(i == 0)},
          {"last", Value(i == n - 1)},
          {"length", Value(n)},
          {"depth", Value(int64_t{1})},
          {"depth0", Value(int64_t{0})},
          {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item")},
          {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item")},
          {"cycle", Value::function("cycle", [i](CallArgs& args) {
             if (args.positional.empty()) throw JinjaError("no items for cycling given");
             return args.positional[static_cast<size_t>(i) % args.positional.size()];
           })},
      };
      iter.vars["loop"] = Value(std::move(loop));
      if (exec_body(s.bodies[0], iter, out) == Flow::Break) break;
    }
  }

  Value call_macro(const Stmt& m, CallArgs& args) {
    if (args.positional.size() > m.targets.size()) {
      throw JinjaError("macro '" + m.text + "' takes not more than " + std::to_string(m.targets.size()) + " argument(s)");
    }
    for (const auto& [name, v] : args.named) {
      bool known = false;
      for (const std::string& p : m.targets) known = known || p == name;
      if (!known) throw JinjaError("macro '" + m.text + "' takes no keyword argument '" + name + "'");
    }
    if (depth_ >= kMaxMacroDepth) throw JinjaError("maximum macro recursion depth exceeded");
    Scope s{{}, &root_};
    for (size_t i = 0; i < m.targets.size(); ++i) {
      if (const Value* v = args.get(i < args.positional.size() ? i : args.positional.size() + m.targets.size(), m.targets[i])) {
        s.vars[m.targets[i]] = *v;
      } else if (m.exprs[i]) {
        s.vars[m.targets[i]] = eval(*m.exprs[i], s);
      } else {
        s.vars[m.targets[i]] = Value::undefined("'" + m.targets[i] + "' is undefined");
      }
    }
    ++depth_;
    std::string out;
    try {
      exec_body(m.bodies[0], s, out);
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    return Value(std::move(out));
  }

  Value lookup(const std::string& name, const Scope& scope) const {
    for (const Scope* s = &scope; s != nullptr; s = s->parent) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    Value g = global(name);
    if (g.is_undefined()) return Value::undefined("'" + name + "' is undefined");
    return g;
  }

  CallArgs eval_args(const Expr& e, size_t first, Scope& scope) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], scope));
    for (const auto& [k, v] : e.kwargs) args.named.emplace_back(k, eval(*v, scope));
    return args;
  }

  Value eval_filter(const Expr& f, const Value& input, Scope& scope) {
    const CallArgs args = eval_args(f, 1, scope);
    return apply_filter(f.name, input, args);
  }

  Value eval(const Expr& e, Scope& scope) {
    const NestingGuard guard = nested();
    try {
      return eval_expr(e, scope);
    } catch (JinjaError& err) {
      if (err.line == 0) err.line = e.line;
      throw;
    }
  }

  Value eval_expr(const Expr& e, Scope& scope) {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.literal;
      case Expr::Kind::Name: return lookup(e.name, scope);
      case Expr::Kind::GetAttr: return get_attr(eval(*e.args[0], scope), e.name);
      case Expr::Kind::GetItem: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
      case Expr::Kind::Slice: {
        const Value obj = eval(*e.args[0], scope);
        Value parts[3];
        for (int i = 0; i < 3; ++i) parts[i] = e.args[1 + i] ? eval(*e.args[1 + i], scope) : Value(nullptr);
        return get_slice(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::Call: {
        const Value callee = eval(*e.args[0], scope);
        CallArgs args = eval_args(e, 1, scope);
        if (callee.is_function()) return callee.as_function().call(args);
        if (callee.is_undefined()) throw JinjaError(callee.undefined_hint());
        throw JinjaError("'" + type_name(callee) + "' is not callable");
      }
      case Expr::Kind::Filter: return eval_filter(e, eval(*e.args[0], scope), scope);
      case Expr::Kind::Test: {
        const Value input = eval(*e.args[0], scope);
        const CallArgs args = eval_args(e, 1, scope);
        return Value(apply_test(e.name, input, args) != e.negated);
      }
      case Expr::Kind::Not: return Value(!truthy(eval(*e.args[0], scope)));
      case Expr::Kind::Neg:
      case Expr::Kind::Pos: {
        const Value v = eval(*e.args[0], scope);
        require_defined(v);
        if (!v.is_number()) throw JinjaError("bad operand type for unary " + std::string(e.kind == Expr::Kind::Neg ? "-" : "+") + ": '" + type_name(v) + "'");
        if (e.kind == Expr::Kind::Pos) return v.is_bool() ? Value(v.as_int()) : v;
        return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
      }
      case Expr::Kind::Binary: return binary_op(e.name, eval(*e.args[0], scope), eval(*e.args[1], scope));
      case Expr::Kind::And: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? eval(*e.args[1], scope) : a;
      }
      case Expr::Kind::Or: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? a : eval(*e.args[1], scope);
      }
      case Expr::Kind::Compare: {
        Value left = eval(*e.args[0], scope);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1], scope);
          if (!compare_op(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::Cond:
        if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
        return e.args[2] ? eval(*e.args[2], scope) : Value::undefined("the inline if-expression evaluated to false and no else section was defined");
      case Expr::Kind::List:
      case Expr::Kind::Tuple: {
        Array items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
        return Value(std::move(items));
      }
      case Expr::Kind::Dict: {
        Object o;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value k = eval(*e.args[i], scope);
          o.set(to_str(k), eval(*e.args[i + 1], scope));
        }
        return Value(std::move(o));
      }
    }
    return Value();
  }

  Scope globals_;
  Scope root_;
  int depth_ = 0;    // macro calls in progress
  int nesting_ = 0;  // live nested() guards: statements and expressions being evaluated
};

}  // namespace

std::string render(const Body& program, const nlohmann::json& variables) {
  return Evaluator(variables).run(program);
}

}  // namespace tc::text::jinja
