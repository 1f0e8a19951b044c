// AST and parser of the chat template engine. Expressions follow jinja2's
// grammar and precedence (filters and `is` tests bind tighter than any
// binary operator); statements are if/elif/else, for (with `if` filter and
// else), set (also `ns.attr` and block set), macro, filter, break/continue,
// and HuggingFace's `generation` block.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/text/jinja_value.h"

namespace tc::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// Limits that keep parsing, rendering and freeing a template within a
// thread's stack whatever the source (a GGUF file's template comes from
// whoever made the file): parser recursion (brackets, `not`, unary signs,
// blocks inside blocks) and the depth of an expression's tree (which also
// grows without recursion: `1+1+1+...`, `x.a.b.c...`, `x|f|f|f...`).
inline constexpr int kMaxTemplateNesting = 100;
inline constexpr int kMaxExprDepth = 256;

struct Expr {
  Expr() = default;
  // Frees the subtree with a work list instead of recursion, so a tree too
  // deep to keep (refused after parsing) is freed without a deep stack.
  ~Expr();
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

  enum class Kind {
    Literal,   // literal
    Name,      // name
    GetAttr,   // args[0].name
    GetItem,   // args[0][args[1]]
    Slice,     // args[0][args[1]:args[2]:args[3]], absent parts null
    Call,      // args[0](args[1..], kwargs)
    Filter,    // args[0] | name(args[1..], kwargs); args[0] null in a filter block
    Test,      // args[0] is [not] name(args[1..], kwargs)
    Not,       // not args[0]
    Neg,       // -args[0]
    Pos,       // +args[0]
    Binary,    // args[0] name args[1] for + - * / // % ** ~
    And,       // args[0] and args[1]
    Or,        // args[0] or args[1]
    Compare,   // args[0] ops[0] args[1] ops[1] args[2] ... (== != < <= > >= in notin)
    Cond,      // args[0] if args[1] else args[2] (null: undefined)
    List,      // [args...]
    Tuple,     // (args...), a list at run time
    Dict,      // {args[0]: args[1], args[2]: args[3], ...}
  };
  Kind kind;
  int line;
  std::string name;
  Value literal;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,         // text
    Output,       // {{ exprs[0] }}
    If,           // exprs = conditions, bodies = one per condition (+ else)
    For,          // for targets in exprs[0] [if exprs[1]]: bodies[0], else bodies[1]
    Set,          // set targets = exprs[0]; `set ns.attr`: targets {ns}, text attr
    SetBlock,     // set targets[0]: bodies[0] rendered
    Macro,        // macro text(targets = exprs defaults, null when none): bodies[0]
    FilterBlock,  // bodies[0] rendered through exprs[0] (a Filter with null input);
                  // without exprs, a plain block (`generation`)
    Break,
    Continue,
  };
  Kind kind;
  int line;
  std::string text;
  std::vector<std::string> targets;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
};

// Parses a whole template. Throws JinjaError with the line at fault.
Body parse_template(std::string_view source);

}  // namespace tc::text::jinja
