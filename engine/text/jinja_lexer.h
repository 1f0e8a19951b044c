// Lexer for the chat template engine: splits a template into text and the
// tokens inside `{{ }}` and `{% %}` tags, dropping comments, and applies
// whitespace control as HuggingFace's environment does (`-` strips, `+`
// keeps, trim_blocks=True, lstrip_blocks=True, one trailing newline dropped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tc::text::jinja {

enum class TokenKind {
  Text,        // literal output, whitespace control already applied
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // value unescaped
  Int,
  Float,
  Op,          // punctuation and operators: + - * / // % ** ~ ( ) [ ] { } , . : | = == != < <= > >=
  Eof,
};

struct Token {
  TokenKind kind;
  std::string value;
  int line;  // 1-based line of the token's first character
};

// Throws JinjaError (with the line) for an unterminated tag, comment or
// string, or a character that starts no token.
std::vector<Token> tokenize(std::string_view source);

}  // namespace tc::text::jinja
