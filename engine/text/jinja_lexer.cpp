// Template lexer. Follows jinja2's lexer rules: newlines normalised to \n,
// a single trailing newline dropped, `{%-`/`-%}` strip all whitespace,
// lstrip_blocks removes the indentation before a block or comment tag that
// starts a line, trim_blocks removes the newline after one.
#include "engine/text/jinja_lexer.h"

#include <cctype>

#include "engine/text/jinja_value.h"
#include "engine/text/unicode.h"

namespace tc::text::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Python's "unicode-escape" decoding of a string literal's body, as jinja2
// applies it; unknown escapes keep their backslash.
std::string unescape(std::string_view s, int line) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;  // line continuation
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = c == 'x' ? 2 : (c == 'u' ? 4 : 8);
        char32_t cp = 0;
        for (size_t k = 1; k <= n; ++k) {
          const char h = i + k < s.size() ? s[i + k] : '\0';
          if (!std::isxdigit(static_cast<unsigned char>(h))) throw JinjaError("truncated \\" + std::string(1, c) + " escape", line);
          cp = cp * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        i += n;
        utf8_append(out, cp);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          char32_t cp = static_cast<char32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k) cp = cp * 8 + static_cast<char32_t>(s[++i] - '0');
          utf8_append(out, cp);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // jinja2 splits on \r\n, \r and \n, drops one trailing empty line and
    // joins with \n.
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      const int text_line = line_;
      advance_to(tag);
      if (tag == src_.size()) {
        emit_text(std::move(text), text_line);
        break;
      }
      const char type = src_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && type != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size()) {
          bool blank = true;
          for (size_t i = l_pos; i < text.size(); ++i) blank = blank && is_space(text[i]);
          if (blank) text.resize(l_pos);
        }
      }
      emit_text(std::move(text), text_line);
      pos_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (type == '#') {
        line_starting = comment();
      } else if (type == '%' && raw_block()) {
        line_starting = false;
      } else {
        line_starting = tag_tokens(type == '{');
      }
    }
    tokens_.push_back({TokenKind::Eof, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  void advance_to(size_t to) {
    for (; pos_ < to; ++pos_) {
      if (src_[pos_] == '\n') ++line_;
    }
  }

  void emit_text(std::string text, int line) {
    if (!text.empty()) tokens_.push_back({TokenKind::Text, std::move(text), line});
  }

  // After a tag or comment end: `-` eats all following whitespace, `+`
  // nothing, a plain block end the one newline trim_blocks removes. Returns
  // whether what was consumed ended with a newline (jinja2's line_starting).
  bool after_end(char sign, bool is_block) {
    if (sign == '-') {
      const size_t start = pos_;
      size_t end = pos_;
      while (end < src_.size() && is_space(src_[end])) ++end;
      advance_to(end);
      return end > start && src_[end - 1] == '\n';
    }
    if (sign != '+' && is_block && pos_ < src_.size() && src_[pos_] == '\n') {
      advance_to(pos_ + 1);
      return true;
    }
    return false;
  }

  bool comment() {
    const int start_line = line_;
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) throw JinjaError("missing end of comment tag", start_line);
    const char sign = end > pos_ ? src_[end - 1] : '\0';
    advance_to(end + 2);
    return after_end(sign == '-' || sign == '+' ? sign : '\0', true);
  }

  // `{% raw %}...{% endraw %}`: the body is text, untouched.
  bool raw_block() {
    size_t p = pos_;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    const bool strip_after = src_.compare(p, 3, "-%}") == 0;
    if (!strip_after && src_.compare(p, 2, "%}") != 0) return false;
    advance_to(p + (strip_after ? 3 : 2));
    if (strip_after) after_end('-', true);
    const int body_line = line_;
    for (size_t q = src_.find("{%", pos_); q != std::string::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      const char sign = r < src_.size() ? src_[r] : '\0';
      if (sign == '-' || sign == '+') ++r;
      while (r < src_.size() && is_space(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_space(src_[r])) ++r;
      char end_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) end_sign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string body = src_.substr(pos_, q - pos_);
      if (sign == '-') {
        while (!body.empty() && is_space(body.back())) body.pop_back();
      }
      emit_text(std::move(body), body_line);
      advance_to(r + 2);
      after_end(end_sign, true);
      return true;
    }
    throw JinjaError("missing end of raw directive", body_line);
  }

  // Tokens up to the tag's end; returns line_starting after it.
  bool tag_tokens(bool is_var) {
    tokens_.push_back({is_var ? TokenKind::VarBegin : TokenKind::BlockBegin, "", line_});
    const int start_line = line_;
    int depth = 0;
    std::string prev_op;
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) {
        throw JinjaError(std::string("unexpected end of template, expected '") + (is_var ? "}}" : "%}") + "'", start_line);
      }
      const std::string_view rest = std::string_view(src_).substr(pos_);
      if (depth == 0) {
        const std::string_view close = is_var ? "}}" : "%}";
        char sign = '\0';
        if (rest.substr(0, close.size()) == close) {
          sign = '=';
        } else if ((rest[0] == '-' || (!is_var && rest[0] == '+')) && rest.substr(1, close.size()) == close) {
          sign = rest[0];
        }
        if (sign != '\0') {
          tokens_.push_back({is_var ? TokenKind::VarEnd : TokenKind::BlockEnd, "", line_});
          advance_to(pos_ + close.size() + (sign == '=' ? 0 : 1));
          return after_end(sign == '=' ? '\0' : sign, !is_var);
        }
      }
      const char c = rest[0];
      const int line = line_;
      if (is_name_start(c)) {
        size_t n = 1;
        while (n < rest.size() && is_name_char(rest[n])) ++n;
        tokens_.push_back({TokenKind::Name, std::string(rest.substr(0, n)), line});
        advance_to(pos_ + n);
        prev_op.clear();
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        number(rest, prev_op == ".");
        prev_op.clear();
      } else if (c == '\'' || c == '"') {
        size_t n = 1;
        while (n < rest.size() && rest[n] != c) n += rest[n] == '\\' ? 2 : 1;
        if (n >= rest.size()) throw JinjaError("unterminated string", line);
        tokens_.push_back({TokenKind::String, unescape(rest.substr(1, n - 1), line), line});
        advance_to(pos_ + n + 1);
        prev_op.clear();
      } else {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const std::string_view two : kTwo) {
          if (rest.substr(0, 2) == two) op = two;
        }
        if (op.empty()) {
          if (std::string_view("+-*/%~()[]{},.:|=<>").find(c) == std::string_view::npos) {
            throw JinjaError(std::string("unexpected char '") + c + "'", line);
          }
          op = std::string(1, c);
          if (c == '(' || c == '[' || c == '{') ++depth;
          if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        }
        tokens_.push_back({TokenKind::Op, op, line});
        advance_to(pos_ + op.size());
        prev_op = op;
      }
    }
  }

  // An integer, or a float when a fraction or exponent follows (never right
  // after a dot: `messages.0` is an item lookup). Underscores separate digits.
  void number(std::string_view rest, bool after_dot) {
    const auto digits = [&](size_t from) {
      size_t n = from;
      while (n < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[n])) || (rest[n] == '_' && n > from))) ++n;
      return n;
    };
    size_t n = digits(0);
    bool is_float = false;
    if (!after_dot) {
      if (n + 1 < rest.size() && rest[n] == '.' && std::isdigit(static_cast<unsigned char>(rest[n + 1]))) {
        n = digits(n + 1);
        is_float = true;
      }
      if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
        size_t m = n + 1;
        if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
        if (m < rest.size() && std::isdigit(static_cast<unsigned char>(rest[m]))) {
          n = digits(m);
          is_float = true;
        }
      }
    }
    std::string text;
    for (const char ch : rest.substr(0, n)) {
      if (ch != '_') text += ch;
    }
    tokens_.push_back({is_float ? TokenKind::Float : TokenKind::Int, text, line_});
    advance_to(pos_ + n);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace tc::text::jinja
