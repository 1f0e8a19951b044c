// Regular expression to GBNF (see regex_to_gbnf.h): a recursive-descent
// reader that writes each atom as a GBNF item (a one-character literal, a
// class, a group) and keeps the regex's quantifiers, which GBNF has too.
#include "engine/text/regex_to_gbnf.h"

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tc::text {
namespace {

[[noreturn]] void unsupported(const std::string& what) {
  throw std::invalid_argument("the pattern uses " + what + ", which cannot be enforced");
}

// A code point as a GBNF escape, safe in a literal and in a class.
std::string escaped(uint32_t c) {
  char buf[16];
  if (c < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(c));
  }
  return buf;
}

std::string literal(uint32_t c) {
  std::string out = "\"";  // appended, not "\"" + ...: GCC 12 warns (-Wrestrict, a false positive) on that
  out.append(escaped(c)).push_back('"');
  return out;
}

// Class contents (between the brackets) of the shorthand escapes.
const char* shorthand_class(char e) {
  switch (e) {
    case 'd':
    case 'D': return "0-9";
    case 'w':
    case 'W': return "a-zA-Z0-9_";
    case 's':
    case 'S': return " \\t\\n\\r\\x0B\\x0C";
    default: return nullptr;
  }
}

class Reader {
 public:
  explicit Reader(std::string_view p) : p_(p) {}

  std::string run() {
    std::vector<std::string> branches;
    // Top-level alternatives, each anchored on the sides where it says so.
    while (true) {
      const bool start_anchor = at() == '^';
      if (start_anchor) ++pos_;
      std::string body = sequence();
      bool end_anchor = false;
      if (at() == '$') {
        ++pos_;
        end_anchor = true;
      }
      if (at() != '|' && pos_ < p_.size()) fail_here("'" + std::string(1, at()) + "' out of place");
      branches.push_back((start_anchor ? "" : ".* ") + (body.empty() ? "\"\"" : body) + (end_anchor ? "" : " .*"));
      if (at() != '|') break;
      ++pos_;
    }
    std::string out = "root ::= ";
    for (size_t i = 0; i < branches.size(); ++i) out += (i ? " | (" : "(") + branches[i] + ")";
    return out + "\n";
  }

 private:
  char at() const { return pos_ < p_.size() ? p_[pos_] : '\0'; }

  [[noreturn]] void fail_here(const std::string& what) const {
    throw std::invalid_argument("the pattern has " + what + " at offset " + std::to_string(pos_));
  }

  // One UTF-8 character from pos_.
  uint32_t utf8() {
    const auto b = static_cast<uint8_t>(p_[pos_++]);
    int extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
    uint32_t c = extra == 3 ? b & 0x07u : extra == 2 ? b & 0x0Fu : extra == 1 ? b & 0x1Fu : b;
    for (; extra > 0 && pos_ < p_.size(); --extra) c = c << 6 | (static_cast<uint8_t>(p_[pos_++]) & 0x3Fu);
    return c;
  }

  uint32_t hex(size_t digits) {
    if (pos_ + digits > p_.size()) fail_here("a short hex escape");
    uint32_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char c = p_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else fail_here("a bad hex escape");
    }
    return v;
  }

  // After a backslash: the character it stands for (shorthands are handled
  // by the callers).
  uint32_t escape_char() {
    if (pos_ >= p_.size()) fail_here("a trailing backslash");
    const char e = p_[pos_++];
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'x': return hex(2);
      case 'u':
        if (at() == '{') {
          ++pos_;
          uint32_t v = 0;
          size_t n = 0;
          for (; pos_ < p_.size() && at() != '}'; ++n) v = v << 4 | hex(1);
          if (at() != '}' || n == 0 || n > 6) fail_here("a bad \\u{...}");
          ++pos_;
          return v;
        }
        return hex(4);
      case 'b':
      case 'B': unsupported("a word boundary (\\b)");
      case 'k': unsupported("a named back-reference");
      default:
        if (e >= '1' && e <= '9') unsupported("a back-reference");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          fail_here(std::string("the unknown escape \\") + e);
        }
        return static_cast<uint8_t>(e);  // \. \\ \/ \- \( ... stand for themselves
    }
  }

  std::string char_class() {
    ++pos_;  // '['
    std::string out = "[";
    if (at() == '^') {
      out += '^';
      ++pos_;
    }
    bool first = true;
    while (pos_ < p_.size() && (at() != ']' || first)) {
      first = false;
      uint32_t lo = 0;
      if (at() == '\\') {
        ++pos_;
        const char e = at();
        if (const char* sh = shorthand_class(e); sh && (e == 'd' || e == 'w' || e == 's')) {
          ++pos_;
          out += sh;
          continue;
        }
        if (shorthand_class(e)) unsupported(std::string("\\") + e + " inside a class");
        lo = escape_char();
      } else {
        lo = utf8();
      }
      if (at() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi = 0;
        if (at() == '\\') {
          ++pos_;
          hi = escape_char();
        } else {
          hi = utf8();
        }
        if (hi < lo) fail_here("a backwards range");
        out += escaped(lo) + "-" + escaped(hi);
      } else {
        out += escaped(lo);
      }
    }
    if (at() != ']') fail_here("an unclosed class");
    ++pos_;
    return out + "]";
  }

  std::string atom() {
    const char c = at();
    if (c == '(') {
      ++pos_;
      if (at() == '?') {
        ++pos_;
        if (at() == ':') {
          ++pos_;
        } else if (at() == '<' && pos_ + 1 < p_.size() && p_[pos_ + 1] != '=' && p_[pos_ + 1] != '!') {
          while (at() != '>' && pos_ < p_.size()) ++pos_;  // a named group: the name does not matter
          ++pos_;
        } else {
          unsupported("a lookaround");
        }
      }
      std::string inner = alternation();
      if (at() != ')') fail_here("an unclosed group");
      ++pos_;
      std::string group = "(";
      group.append(inner.empty() ? "\"\"" : inner).push_back(')');
      return group;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      return "[^\\n]";
    }
    if (c == '\\') {
      ++pos_;
      const char e = at();
      if (const char* sh = shorthand_class(e)) {
        ++pos_;
        return std::string(e >= 'a' ? "[" : "[^") + sh + "]";
      }
      return literal(escape_char());
    }
    if (c == '^' || c == '$') unsupported("an anchor inside the pattern");
    if (c == '*' || c == '+' || c == '?' || c == '{') fail_here("a quantifier with nothing before it");
    return literal(utf8());
  }

  // The quantifier after an atom, as GBNF writes it ("" when none).
  std::string quantifier() {
    std::string q;
    const char c = at();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      q = std::string(1, c);
    } else if (c == '{') {
      const size_t close = p_.find('}', pos_);
      if (close == std::string_view::npos) fail_here("an unclosed {");
      q = std::string(p_.substr(pos_, close - pos_ + 1));
      for (char x : q.substr(1, q.size() - 2)) {
        if (!(x >= '0' && x <= '9') && x != ',') fail_here("a malformed {m,n}");
      }
      if (q == "{}" || q[1] == ',') fail_here("a malformed {m,n}");
      pos_ = close + 1;
    }
    if (!q.empty() && at() == '?') ++pos_;  // lazy: the same strings
    return q;
  }

  std::string sequence() {
    std::string out;
    while (pos_ < p_.size() && at() != '|' && at() != ')') {
      if (at() == '$' && pos_ + 1 == p_.size()) break;  // the end anchor (run() takes it)
      if (at() == '$' && depth_ == 0 && pos_ + 1 < p_.size() && p_[pos_ + 1] == '|') break;
      std::string item = atom();
      item += quantifier();  // after the atom: the operands of + are not sequenced
      out += (out.empty() ? "" : " ") + item;
    }
    return out;
  }

  std::string alternation() {
    ++depth_;
    std::string out = sequence();
    while (at() == '|') {
      ++pos_;
      const std::string next = sequence();
      out = (out.empty() ? "\"\"" : out) + " | " + (next.empty() ? "\"\"" : next);
    }
    --depth_;
    return out;
  }

  std::string_view p_;
  size_t pos_ = 0;
  int depth_ = 0;  // group nesting
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern) { return Reader(pattern).run(); }

}  // namespace tc::text
