// Recursive-descent parser over jinja_lexer's tokens, mirroring the
// structure of jinja2's parser.py so precedence and associativity match.
#include "engine/text/jinja_parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/jinja_builtins.h"
#include "engine/text/jinja_lexer.h"

namespace tc::text::jinja {
namespace {

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Text: return "template data";
    case TokenKind::VarBegin: return "'{{'";
    case TokenKind::VarEnd: return "'}}'";
    case TokenKind::BlockBegin: return "'{%'";
    case TokenKind::BlockEnd: return "'%}'";
    case TokenKind::Eof: return "end of template";
    case TokenKind::String: return "string";
    default: return "'" + t.value + "'";
  }
}

// Moves e's children (arguments and keyword values) onto `out`.
void detach_children(Expr& e, std::vector<ExprPtr>& out) {
  for (auto& a : e.args) {
    if (a) out.push_back(std::move(a));
  }
  for (auto& kw : e.kwargs) {
    if (kw.second) out.push_back(std::move(kw.second));
  }
}

// The depth of the tree at `root` (1: a leaf), walked with a work list.
int expr_depth(const Expr& root) {
  int deepest = 0;
  std::vector<std::pair<const Expr*, int>> pending{{&root, 1}};
  while (!pending.empty()) {
    const auto [e, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    for (const auto& a : e->args) {
      if (a) pending.emplace_back(a.get(), depth + 1);
    }
    for (const auto& kw : e->kwargs) {
      if (kw.second) pending.emplace_back(kw.second.get(), depth + 1);
    }
  }
  return deepest;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_all() {
    Body body = parse_body({});
    if (cur().kind != TokenKind::Eof) fail("unexpected " + describe(cur()));
    check_depths(body);
    return body;
  }

 private:
  // One level of parser recursion, while alive.
  NestingGuard nested() {
    return NestingGuard(nesting_, kMaxTemplateNesting, "brackets, operators or blocks", cur().line);
  }

  // Every expression's tree at most kMaxExprDepth deep (statements nest at
  // most kMaxTemplateNesting deep: parse_body counts them).
  static void check_depths(const Body& body) {
    for (const auto& s : body) {
      for (const auto& e : s->exprs) {
        if (e && expr_depth(*e) > kMaxExprDepth) {
          throw JinjaError("an expression nests more than " + std::to_string(kMaxExprDepth) + " levels deep",
                           e->line);
        }
      }
      for (const auto& b : s->bodies) check_depths(b);
    }
  }

  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  Token next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  [[noreturn]] void fail(const std::string& msg) const { throw JinjaError(msg, cur().line); }

  bool is_op(std::string_view op) const { return cur().kind == TokenKind::Op && cur().value == op; }
  bool is_name(std::string_view name) const { return cur().kind == TokenKind::Name && cur().value == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::Name) fail("expected a name, got " + describe(cur()));
    return next().value;
  }
  void expect_block_end() {
    if (cur().kind != TokenKind::BlockEnd) fail("expected end of statement block '%}', got " + describe(cur()));
    next();
  }

  ExprPtr node(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  ExprPtr node(Expr::Kind kind, int line, ExprPtr a, ExprPtr b = nullptr) {
    auto e = node(kind, line);
    e->args.push_back(std::move(a));
    if (b) e->args.push_back(std::move(b));
    return e;
  }

  // ---- statements ----

  // Statements until a `{% name %}` with name in `ends` (left unconsumed).
  Body parse_body(std::initializer_list<std::string_view> ends) {
    const NestingGuard guard = nested();
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == TokenKind::Eof) {
        if (ends.size() != 0) {
          std::string want;
          for (const std::string_view e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
          fail("unexpected end of template, expected " + want);
        }
        return body;
      }
      if (t.kind == TokenKind::Text) {
        auto s = stmt(Stmt::Kind::Text, t.line);
        s->text = next().value;
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::VarBegin) {
        next();
        auto s = stmt(Stmt::Kind::Output, t.line);
        s->exprs.push_back(parse_tuple(true));
        if (cur().kind != TokenKind::VarEnd) fail("expected end of print statement '}}', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::BlockBegin) {
        const Token& name = peek();
        if (name.kind != TokenKind::Name) {
          next();
          fail("expected a statement name, got " + describe(cur()));
        }
        for (const std::string_view e : ends) {
          if (name.value == e) return body;
        }
        next();
        parse_statement(body);
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  StmtPtr stmt(Stmt::Kind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  // Consumes `{% name` of a closing or middle tag.
  std::string block_name() {
    next();  // {%
    return next().value;
  }

  void parse_statement(Body& out) {
    const int line = cur().line;
    const std::string name = next().value;
    if (name == "if") {
      auto s = stmt(Stmt::Kind::If, line);
      s->exprs.push_back(parse_tuple(false));
      expect_block_end();
      while (true) {
        s->bodies.push_back(parse_body({"elif", "else", "endif"}));
        const std::string tag = block_name();
        if (tag == "elif") {
          s->exprs.push_back(parse_tuple(false));
          expect_block_end();
        } else if (tag == "else") {
          expect_block_end();
          s->bodies.push_back(parse_body({"endif"}));
          block_name();
          expect_block_end();
          break;
        } else {
          expect_block_end();
          break;
        }
      }
      out.push_back(std::move(s));
    } else if (name == "for") {
      auto s = stmt(Stmt::Kind::For, line);
      do {
        s->targets.push_back(expect_name());
      } while (skip_op(","));
      if (!skip_name("in")) fail("expected 'in', got " + describe(cur()));
      s->exprs.push_back(parse_tuple(false, true));
      s->exprs.push_back(skip_name("if") ? parse_expression() : nullptr);
      if (is_name("recursive")) fail("recursive loops are not supported");
      expect_block_end();
      s->bodies.push_back(parse_body({"else", "endfor"}));
      s->bodies.emplace_back();
      if (block_name() == "else") {
        expect_block_end();
        s->bodies[1] = parse_body({"endfor"});
        block_name();
      }
      expect_block_end();
      out.push_back(std::move(s));
    } else if (name == "set") {
      auto s = stmt(Stmt::Kind::Set, line);
      s->targets.push_back(expect_name());
      if (skip_op(".")) {
        s->text = expect_name();
      } else {
        while (skip_op(",")) s->targets.push_back(expect_name());
      }
      if (skip_op("=")) {
        s->exprs.push_back(parse_tuple(true));
        expect_block_end();
      } else {
        if (s->targets.size() != 1 || !s->text.empty()) fail("expected '='");
        expect_block_end();
        s->kind = Stmt::Kind::SetBlock;
        s->bodies.push_back(parse_body({"endset"}));
        block_name();
        expect_block_end();
      }
      out.push_back(std::move(s));
    } else if (name == "macro") {
      auto s = stmt(Stmt::Kind::Macro, line);
      s->text = expect_name();
      expect_op("(");
      while (!is_op(")")) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(expect_name());
        s->exprs.push_back(skip_op("=") ? parse_expression() : nullptr);
      }
      next();
      expect_block_end();
      s->bodies.push_back(parse_body({"endmacro"}));
      block_name();
      if (cur().kind == TokenKind::Name) next();
      expect_block_end();
      out.push_back(std::move(s));
    } else if (name == "filter") {
      auto s = stmt(Stmt::Kind::FilterBlock, line);
      ExprPtr f;
      do {
        f = parse_filter(std::move(f));
      } while (skip_op("|"));
      s->exprs.push_back(std::move(f));
      expect_block_end();
      s->bodies.push_back(parse_body({"endfilter"}));
      block_name();
      expect_block_end();
      out.push_back(std::move(s));
    } else if (name == "generation") {
      // HuggingFace's AssistantTracker tag: renders its body unchanged.
      auto s = stmt(Stmt::Kind::FilterBlock, line);
      expect_block_end();
      s->bodies.push_back(parse_body({"endgeneration"}));
      block_name();
      expect_block_end();
      out.push_back(std::move(s));
    } else if (name == "break" || name == "continue") {
      out.push_back(stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line));
      expect_block_end();
    } else {
      throw JinjaError("encountered unknown tag '" + name + "'", line);
    }
  }

  // ---- expressions ----

  ExprPtr parse_expression(bool with_condexpr = true) {
    const NestingGuard guard = nested();
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  // A comma-separated list becomes a Tuple; `for` stops at its `if`.
  ExprPtr parse_tuple(bool with_condexpr, bool for_iter = false) {
    const int line = cur().line;
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::Tuple, line);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().kind == TokenKind::BlockEnd || cur().kind == TokenKind::VarEnd || (for_iter && is_name("if"))) break;
      t->args.push_back(parse_expression(with_condexpr));
    }
    return t;
  }

  ExprPtr parse_condexpr() {
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const int line = next().line;
      ExprPtr cond = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
      auto c = node(Expr::Kind::Cond, line, std::move(expr), std::move(cond));
      c->args.push_back(std::move(otherwise));
      expr = std::move(c);
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      left = node(Expr::Kind::Or, line, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      left = node(Expr::Kind::And, line, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const NestingGuard guard = nested();
      const int line = next().line;
      return node(Expr::Kind::Not, line, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == TokenKind::Op &&
          (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
           cur().value == ">" || cur().value == ">=")) {
        op = next().value;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().kind == TokenKind::Name && peek().value == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::Compare, line, std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr binary(ExprPtr left, const Token& op, ExprPtr right) {
    auto b = node(Expr::Kind::Binary, op.line, std::move(left), std::move(right));
    b->name = op.value;
    return b;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token op = next();
      left = binary(std::move(left), op, parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const Token op = next();
      left = binary(std::move(left), op, parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token op = next();
      left = binary(std::move(left), op, parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token op = next();
      left = binary(std::move(left), op, parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr e;
    const int line = cur().line;
    if (is_op("-")) {
      const NestingGuard guard = nested();
      next();
      e = node(Expr::Kind::Neg, line, parse_unary(false));
    } else if (is_op("+")) {
      const NestingGuard guard = nested();
      next();
      e = node(Expr::Kind::Pos, line, parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token t = next();
    switch (t.kind) {
      case TokenKind::Name: {
        auto e = node(Expr::Kind::Literal, t.line);
        if (t.value == "true" || t.value == "True") {
          e->literal = Value(true);
        } else if (t.value == "false" || t.value == "False") {
          e->literal = Value(false);
        } else if (t.value == "none" || t.value == "None") {
          e->literal = Value(nullptr);
        } else {
          e->kind = Expr::Kind::Name;
          e->name = t.value;
        }
        return e;
      }
      case TokenKind::String: {
        std::string s = t.value;
        while (cur().kind == TokenKind::String) s += next().value;  // adjacent literals concatenate
        auto e = node(Expr::Kind::Literal, t.line);
        e->literal = Value(std::move(s));
        return e;
      }
      case TokenKind::Int:
      case TokenKind::Float: {
        auto e = node(Expr::Kind::Literal, t.line);
        try {
          e->literal = t.kind == TokenKind::Int ? Value(static_cast<int64_t>(std::stoll(t.value))) : Value(std::stod(t.value));
        } catch (const std::exception&) {
          throw JinjaError("number out of range: " + t.value, t.line);
        }
        return e;
      }
      case TokenKind::Op:
        if (t.value == "(") {
          if (skip_op(")")) return node(Expr::Kind::Tuple, t.line);
          ExprPtr inner = parse_expression();
          if (is_op(",")) {
            auto tup = node(Expr::Kind::Tuple, t.line, std::move(inner));
            while (skip_op(",") && !is_op(")")) tup->args.push_back(parse_expression());
            inner = std::move(tup);
          }
          expect_op(")");
          return inner;
        }
        if (t.value == "[") {
          auto list = node(Expr::Kind::List, t.line);
          while (!is_op("]")) {
            if (!list->args.empty()) expect_op(",");
            if (is_op("]")) break;
            list->args.push_back(parse_expression());
          }
          next();
          return list;
        }
        if (t.value == "{") {
          auto dict = node(Expr::Kind::Dict, t.line);
          while (!is_op("}")) {
            if (!dict->args.empty()) expect_op(",");
            if (is_op("}")) break;
            dict->args.push_back(parse_expression());
            expect_op(":");
            dict->args.push_back(parse_expression());
          }
          next();
          return dict;
        }
        break;
      default: break;
    }
    throw JinjaError("unexpected " + describe(t), t.line);
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        const int line = next().line;
        if (cur().kind == TokenKind::Int) {
          auto idx = node(Expr::Kind::Literal, line);
          const std::string digits = next().value;
          int64_t index = 0;
          if (std::from_chars(digits.data(), digits.data() + digits.size(), index).ec != std::errc()) {
            throw JinjaError("number out of range: " + digits, line);
          }
          idx->literal = Value(index);
          e = node(Expr::Kind::GetItem, line, std::move(e), std::move(idx));
        } else {
          auto a = node(Expr::Kind::GetAttr, line, std::move(e));
          a->name = expect_name();
          e = std::move(a);
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const int line = next().line;  // [
    ExprPtr start = is_op(":") ? nullptr : parse_expression();
    if (!is_op(":")) {
      expect_op("]");
      return node(Expr::Kind::GetItem, line, std::move(obj), std::move(start));
    }
    next();
    ExprPtr stop = (is_op("]") || is_op(":")) ? nullptr : parse_expression();
    ExprPtr step;
    if (skip_op(":") && !is_op("]")) step = parse_expression();
    expect_op("]");
    auto s = node(Expr::Kind::Slice, line, std::move(obj));
    s->args.push_back(std::move(start));
    s->args.push_back(std::move(stop));
    s->args.push_back(std::move(step));
    return s;
  }

  // `(args, name=value)` into e->args (after what is there) and e->kwargs.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) {
        expect_op(",");
        if (is_op(")")) break;
      }
      first = false;
      if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Op && peek().value == "=") {
        std::string key = next().value;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!e.kwargs.empty()) fail("positional argument after keyword argument");
        e.args.push_back(parse_expression());
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto c = node(Expr::Kind::Call, cur().line, std::move(callee));
    parse_call_args(*c);
    return c;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        next();
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // After the `|` (or `{% filter`): name and optional arguments.
  ExprPtr parse_filter(ExprPtr input) {
    const int line = cur().line;
    auto f = node(Expr::Kind::Filter, line);
    f->args.push_back(std::move(input));
    f->name = expect_name();
    if (!has_filter(f->name)) throw JinjaError("no filter named '" + f->name + "'", line);
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_test(ExprPtr input) {
    const int line = next().line;  // is
    auto t = node(Expr::Kind::Test, line, std::move(input));
    t->negated = skip_name("not");
    t->name = expect_name();
    if (!has_test(t->name)) throw JinjaError("no test named '" + t->name + "'", line);
    if (is_op("(")) {
      parse_call_args(*t);
    } else if ((cur().kind == TokenKind::Name && !is_name("else") && !is_name("or") && !is_name("and")) ||
               cur().kind == TokenKind::String || cur().kind == TokenKind::Int ||
               cur().kind == TokenKind::Float || is_op("[") || is_op("{")) {
      if (is_name("is")) fail("you cannot chain multiple tests with is");
      t->args.push_back(parse_postfix(parse_primary()));
    }
    return t;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int nesting_ = 0;  // live nested() guards
};

}  // namespace

Expr::~Expr() {
  std::vector<ExprPtr> pending;
  detach_children(*this, pending);
  while (!pending.empty()) {
    ExprPtr e = std::move(pending.back());
    pending.pop_back();
    detach_children(*e, pending);
  }  // each e is freed childless: no recursion
}

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse_all(); }

}  // namespace tc::text::jinja
