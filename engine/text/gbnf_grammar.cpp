// GBNF parsing (see gbnf_grammar.h): a recursive-descent reader in the
// shape of llama.cpp's, so that the rules, their numbering and the
// rewriting of repetitions into helper rules come out as llama.cpp's do,
// with errors that say line and column.
#include "engine/text/gbnf_grammar.h"

#include <algorithm>
#include <map>

#include "engine/text/tokenizer.h"

namespace tc::text {
namespace {

// llama.cpp's limit on repetitions ({m,n}) and on rules made by nesting them.
constexpr uint64_t kMaxRepetitions = 2000;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || is_digit(c); }

class Parser {
 public:
  Parser(std::string_view text, const GbnfTokenLookup& lookup) : s_(text), lookup_(lookup) {}

  std::shared_ptr<const GbnfGrammar> run() {
    size_t pos = skip_space(0, true);
    while (pos < s_.size()) pos = parse_rule(pos);
    auto g = std::make_shared<GbnfGrammar>();
    rules_.resize(ids_.size());  // rules named but never defined stay empty
    const size_t n = rules_.size();
    std::vector<std::string> names(n);
    for (const auto& [name, id] : ids_) names[id] = name;
    for (size_t r = 0; r < n; ++r) {
      if (rules_[r].empty()) throw GbnfError("grammar: rule '" + names[r] + "' is used but never defined");
    }
    auto root = ids_.find("root");
    if (root == ids_.end()) throw GbnfError("grammar: there is no 'root' rule (the text starts at root)");
    for (size_t r = 0; r < n; ++r) {
      g->rule_start.push_back(static_cast<uint32_t>(g->elements.size()));
      g->elements.insert(g->elements.end(), rules_[r].begin(), rules_[r].end());
    }
    g->rule_names = std::move(names);
    g->root = root->second;
    check_left_recursion(*g);
    return g;
  }

 private:
  using Rule = std::vector<GbnfElement>;

  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw GbnfError("grammar: " + what + " at line " + std::to_string(line) + ", column " + std::to_string(col));
  }

  char at(size_t pos) const { return pos < s_.size() ? s_[pos] : '\0'; }

  size_t skip_space(size_t pos, bool newline_ok) const {
    while (pos < s_.size()) {
      const char c = s_[pos];
      if (c == '#') {
        while (pos < s_.size() && s_[pos] != '\r' && s_[pos] != '\n') ++pos;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos;
      } else {
        break;
      }
    }
    return pos;
  }

  size_t name_end(size_t pos) const {
    size_t end = pos;
    while (is_word(at(end))) ++end;
    if (end == pos) fail(pos, "expected a rule name");
    return end;
  }

  uint32_t symbol(std::string_view name) {
    auto [it, added] = ids_.emplace(std::string(name), static_cast<uint32_t>(ids_.size()));
    return it->second;
  }

  uint32_t new_symbol(const std::string& base) {
    const auto id = static_cast<uint32_t>(ids_.size());
    ids_.emplace(base + "_" + std::to_string(id), id);
    return id;
  }

  void add_rule(uint32_t id, Rule rule) {
    if (rules_.size() <= id) rules_.resize(id + 1);
    total_ += rule.size();
    if (total_ > GbnfGrammar::kMaxElements) {
      throw GbnfError("grammar: too large (over " + std::to_string(GbnfGrammar::kMaxElements) +
                      " elements once repetitions are written out)");
    }
    rules_[id] = std::move(rule);
  }

  uint32_t parse_hex(size_t pos, int digits) const {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = at(pos + static_cast<size_t>(i));
      uint32_t d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail(pos, "expected " + std::to_string(digits) + " hex digits");
      }
      value = value << 4 | d;
    }
    return value;
  }

  // One character of a literal or a class: an escape or a UTF-8 sequence.
  std::pair<uint32_t, size_t> parse_char(size_t pos) const {
    if (pos >= s_.size()) fail(pos, "unexpected end of the grammar");
    const auto b = static_cast<uint8_t>(s_[pos]);
    if (b == '\\') {
      switch (at(pos + 1)) {
        case 'x': return {parse_hex(pos + 2, 2), pos + 4};
        case 'u': return {parse_hex(pos + 2, 4), pos + 6};
        case 'U': return {parse_hex(pos + 2, 8), pos + 10};
        case 't': return {'\t', pos + 2};
        case 'r': return {'\r', pos + 2};
        case 'n': return {'\n', pos + 2};
        case '\\':
        case '"':
        case '[':
        case ']': return {static_cast<uint8_t>(s_[pos + 1]), pos + 2};
        default: fail(pos, "unknown escape");
      }
    }
    int len = 1;
    uint32_t value = b;
    if (b >= 0xF0) {
      len = 4;
      value = b & 0x07u;
    } else if (b >= 0xE0) {
      len = 3;
      value = b & 0x0Fu;
    } else if (b >= 0xC0) {
      len = 2;
      value = b & 0x1Fu;
    }
    for (int i = 1; i < len; ++i) {
      const auto c = static_cast<uint8_t>(at(pos + static_cast<size_t>(i)));
      if ((c & 0xC0u) != 0x80u) fail(pos, "invalid UTF-8");
      value = value << 6 | (c & 0x3Fu);
    }
    return {value, pos + static_cast<size_t>(len)};
  }

  // <[ID]> or <TEXT>, from the '<'.
  std::pair<uint32_t, size_t> parse_token(size_t pos) const {
    if (at(pos) != '<') fail(pos, "expected '<'");
    if (at(pos + 1) == '[') {
      size_t end = pos + 2;
      while (is_digit(at(end))) ++end;
      if (end == pos + 2 || end - pos - 2 > 9) fail(pos + 2, "expected a token id");
      const auto id = static_cast<uint32_t>(std::stoul(std::string(s_.substr(pos + 2, end - pos - 2))));
      if (at(end) != ']' || at(end + 1) != '>') fail(end, "expected ']>'");
      return {id, end + 2};
    }
    const size_t close = s_.find('>', pos + 1);
    if (close == std::string_view::npos) fail(pos, "expected '>'");
    const std::string_view text = s_.substr(pos, close - pos + 1);
    if (!lookup_) fail(pos, "token '" + std::string(text) + "' cannot be resolved without a vocabulary");
    const auto id = lookup_(text);
    if (!id || *id < 0) fail(pos, "'" + std::string(text) + "' is not one special token of this model");
    return {static_cast<uint32_t>(*id), close + 1};
  }

  size_t parse_rule(size_t pos) {
    const size_t end = name_end(pos);
    const std::string name(s_.substr(pos, end - pos));
    const uint32_t id = symbol(name);
    pos = skip_space(end, false);
    if (s_.substr(pos, 3) != "::=") fail(pos, "expected '::='");
    pos = parse_alternates(skip_space(pos + 3, true), name, id, false);
    if (at(pos) == '\r') {
      pos += at(pos + 1) == '\n' ? 2 : 1;
    } else if (at(pos) == '\n') {
      ++pos;
    } else if (pos < s_.size()) {
      fail(pos, "expected a newline or the end of the grammar");
    }
    return skip_space(pos, true);
  }

  size_t parse_alternates(size_t pos, const std::string& name, uint32_t id, bool nested) {
    Rule rule;
    pos = parse_sequence(pos, name, rule, nested);
    while (at(pos) == '|') {
      rule.push_back({GbnfOp::Alt, 0});
      pos = parse_sequence(skip_space(pos + 1, true), name, rule, nested);
    }
    rule.push_back({GbnfOp::End, 0});
    add_rule(id, std::move(rule));
    return pos;
  }

  // S{min,max} (max UINT64_MAX: no bound) rewritten as llama.cpp does:
  // S repeated min times, then a chain of helper rules for the optional
  // rest (S' ::= S S' | for no bound).
  void repeat(Rule& rule, size_t last_start, uint64_t& n_prev, uint64_t min, uint64_t max, const std::string& name,
              size_t pos) {
    const bool unbounded = max == UINT64_MAX;
    if (last_start == rule.size()) fail(pos, "a repetition needs something before it");
    const Rule item(rule.begin() + static_cast<std::ptrdiff_t>(last_start), rule.end());
    const uint64_t total = !unbounded && max > 0 ? max : std::max<uint64_t>(min, 1);
    if (n_prev * total >= kMaxRepetitions) fail(pos, "nested repetitions make too many rules");
    if (min == 0) {
      rule.resize(last_start);
    } else {
      for (uint64_t i = 1; i < min; ++i) rule.insert(rule.end(), item.begin(), item.end());
    }
    uint32_t last_rec = 0;
    const uint64_t n_opt = unbounded ? 1 : max - min;
    for (uint64_t i = 0; i < n_opt; ++i) {
      Rule rec(item);
      const uint32_t rec_id = new_symbol(name);
      if (i > 0 || unbounded) rec.push_back({GbnfOp::RuleRef, unbounded ? rec_id : last_rec});
      rec.push_back({GbnfOp::Alt, 0});
      rec.push_back({GbnfOp::End, 0});
      add_rule(rec_id, std::move(rec));
      last_rec = rec_id;
    }
    if (n_opt > 0) rule.push_back({GbnfOp::RuleRef, last_rec});
    n_prev *= total;
  }

  uint64_t parse_count(size_t& pos) const {
    size_t end = pos;
    while (is_digit(at(end))) ++end;
    if (end == pos) fail(pos, "expected a number");
    if (end - pos > 9) fail(pos, "repetition count too large");
    const uint64_t n = std::stoull(std::string(s_.substr(pos, end - pos)));
    pos = end;
    return n;
  }

  size_t parse_sequence(size_t pos, const std::string& name, Rule& rule, bool nested) {
    size_t last_start = rule.size();
    uint64_t n_prev = 1;
    while (pos < s_.size()) {
      const char c = s_[pos];
      if (c == '"') {
        ++pos;
        last_start = rule.size();
        n_prev = 1;
        while (at(pos) != '"') {
          if (pos >= s_.size()) fail(pos, "unterminated string literal");
          auto [ch, next] = parse_char(pos);
          rule.push_back({GbnfOp::Char, ch});
          pos = next;
        }
        pos = skip_space(pos + 1, nested);
      } else if (c == '[') {
        ++pos;
        GbnfOp start = GbnfOp::Char;
        if (at(pos) == '^') {
          ++pos;
          start = GbnfOp::CharNot;
        }
        last_start = rule.size();
        n_prev = 1;
        while (at(pos) != ']') {
          if (pos >= s_.size()) fail(pos, "unterminated character class");
          auto [ch, next] = parse_char(pos);
          rule.push_back({last_start < rule.size() ? GbnfOp::CharAlt : start, ch});
          pos = next;
          if (at(pos) == '-' && at(pos + 1) != ']') {
            if (pos + 1 >= s_.size()) fail(pos, "unterminated character class");
            auto [upper, after] = parse_char(pos + 1);
            rule.push_back({GbnfOp::CharRangeUpper, upper});
            pos = after;
          }
        }
        pos = skip_space(pos + 1, nested);
      } else if (c == '<' || c == '!') {
        GbnfOp op = GbnfOp::Token;
        if (c == '!') {
          op = GbnfOp::TokenNot;
          ++pos;
        }
        auto [id, next] = parse_token(pos);
        last_start = rule.size();
        n_prev = 1;
        rule.push_back({op, id});
        pos = skip_space(next, nested);
      } else if (is_word(c)) {
        const size_t end = name_end(pos);
        const uint32_t ref = symbol(s_.substr(pos, end - pos));
        pos = skip_space(end, nested);
        last_start = rule.size();
        n_prev = 1;
        rule.push_back({GbnfOp::RuleRef, ref});
      } else if (c == '(') {
        pos = skip_space(pos + 1, true);
        const size_t n_before = ids_.size();
        const uint32_t sub = new_symbol(name);
        pos = parse_alternates(pos, name, sub, true);
        n_prev = std::max<uint64_t>(1, ids_.size() - n_before);
        last_start = rule.size();
        rule.push_back({GbnfOp::RuleRef, sub});
        if (at(pos) != ')') fail(pos, "expected ')' to close the group");
        pos = skip_space(pos + 1, nested);
      } else if (c == '.') {
        last_start = rule.size();
        n_prev = 1;
        rule.push_back({GbnfOp::CharAny, 0});
        pos = skip_space(pos + 1, nested);
      } else if (c == '*' || c == '+' || c == '?') {
        const size_t at_op = pos;
        pos = skip_space(pos + 1, nested);
        repeat(rule, last_start, n_prev, c == '+' ? 1 : 0, c == '?' ? 1 : UINT64_MAX, name, at_op);
      } else if (c == '{') {
        const size_t at_op = pos;
        pos = skip_space(pos + 1, nested);
        const uint64_t min = parse_count(pos);
        pos = skip_space(pos, nested);
        uint64_t max = UINT64_MAX;
        if (at(pos) == '}') {
          max = min;
          pos = skip_space(pos + 1, nested);
        } else if (at(pos) == ',') {
          pos = skip_space(pos + 1, nested);
          if (is_digit(at(pos))) {
            max = parse_count(pos);
            pos = skip_space(pos, nested);
          }
          if (at(pos) != '}') fail(pos, "expected '}'");
          pos = skip_space(pos + 1, nested);
        } else {
          fail(pos, "expected ',' or '}'");
        }
        if (min > kMaxRepetitions) fail(at_op, "more than " + std::to_string(kMaxRepetitions) + " repetitions");
        if (max != UINT64_MAX && max < min) fail(at_op, "the repetition's maximum is below its minimum");
        if (max != UINT64_MAX && max > kMaxRepetitions) max = UINT64_MAX;
        repeat(rule, last_start, n_prev, min, max, name, at_op);
      } else {
        break;
      }
    }
    return pos;
  }

  // llama.cpp's check: a rule that can reach itself before reading a
  // character would make the matcher expand forever.
  static void check_left_recursion(const GbnfGrammar& g) {
    const size_t n = g.rule_start.size();
    std::vector<uint8_t> visited(n, 0), in_progress(n, 0), may_be_empty(n, 0);
    uint32_t culprit = 0;  // the rule reached again before a character
    auto visit = [&](auto& self, uint32_t r) -> bool {
      if (in_progress[r] != 0) {
        culprit = r;
        return true;
      }
      in_progress[r] = 1;
      bool at_start = true;
      for (uint32_t i = g.rule_start[r];; ++i) {
        if (g.ends_alternative(i)) {
          if (at_start) may_be_empty[r] = 1;
          at_start = true;
          if (g.elements[i].op == GbnfOp::End) break;
        } else {
          at_start = false;
        }
      }
      bool leftmost = true;
      for (uint32_t i = g.rule_start[r];; ++i) {
        const GbnfElement& e = g.elements[i];
        if (e.op == GbnfOp::RuleRef && leftmost) {
          if (self(self, e.value)) return true;
          if (may_be_empty[e.value] == 0) leftmost = false;
        } else if (g.ends_alternative(i)) {
          leftmost = true;
          if (e.op == GbnfOp::End) break;
        } else {
          leftmost = false;
        }
      }
      in_progress[r] = 0;
      visited[r] = 1;
      return false;
    };
    for (uint32_t r = 0; r < n; ++r) {
      if (visited[r] == 0 && visit(visit, r)) {
        throw GbnfError("grammar: rule '" + g.rule_names[culprit] +
                        "' is left-recursive (it can reach itself before reading a character); "
                        "rewrite it with a repetition");
      }
    }
  }

  std::string_view s_;
  const GbnfTokenLookup& lookup_;
  std::map<std::string, uint32_t, std::less<>> ids_;
  std::vector<Rule> rules_;
  size_t total_ = 0;
};

}  // namespace

std::shared_ptr<const GbnfGrammar> GbnfGrammar::parse(std::string_view text, const GbnfTokenLookup& lookup) {
  return Parser(text, lookup).run();
}

GbnfTokenLookup gbnf_token_lookup(const Tokenizer& tokenizer) {
  return [&tokenizer](std::string_view text) -> std::optional<int32_t> {
    const auto ids = tokenizer.encode(text, {.add_special = false, .parse_special = true});
    if (ids.size() != 1) return std::nullopt;
    return ids[0];
  };
}

std::vector<uint32_t> GbnfGrammar::token_ids() const {
  std::vector<uint32_t> ids;
  for (const GbnfElement& e : elements) {
    if (e.op == GbnfOp::Token || e.op == GbnfOp::TokenNot) ids.push_back(e.value);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace tc::text
