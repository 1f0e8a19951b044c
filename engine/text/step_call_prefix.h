// StepCallPrefix: what Gemma4CallPrefix and Qwen3CoderCallPrefix share: the
// grammar's checks, push() as a step on a copy kept when it fits, and their
// arguments checked as the JSON they stand for (a JsonSchemaPrefix of the
// function's parameters, else a JsonPrefix), text pushed to them escaped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "engine/text/json_lexers.h"
#include "engine/text/json_prefix.h"
#include "engine/text/json_schema_prefix.h"
#include "engine/text/tool_call_prefix.h"
#include "kernels/check.h"

namespace tc::text {

// The JSON a call's arguments stand for, checked as it is pushed.
using CallArguments = std::variant<JsonPrefix, JsonSchemaPrefix>;

// Derived has a private `bool step(uint8_t)` (false: the byte leaves the
// form) and befriends StepCallPrefix<Derived>.
template <class Derived>
class StepCallPrefix {
 public:
  // False (the state unchanged) when the byte leaves the form.
  bool push(uint8_t byte) {
    Derived next = self();
    if (!next.step(byte)) return false;
    self() = next;
    return true;
  }
  // False when one of the bytes does not fit; the state is then unspecified.
  bool push(std::string_view bytes) {
    return push_each(bytes, [this](uint8_t byte) { return self().step(byte); });
  }
  bool accepts(std::string_view bytes) const {
    Derived copy = self();
    return copy.push(bytes);
  }

 protected:
  // `grammar` itself, once checked: not null, problem() empty (`what` says otherwise).
  static const ToolCallGrammar* checked(const ToolCallGrammar* grammar, const char* what) {
    TC_CHECK(grammar != nullptr, what);
    const std::string problem = grammar->problem();
    TC_CHECK(problem.empty(), problem.c_str());
    return grammar;
  }

  // Pushes JSON bytes to the arguments: false when they do not fit.
  static bool feed(CallArguments& arguments, std::string_view json) {
    return std::visit([&](auto& a) { return a.push(json); }, arguments);
  }
  // Whether the arguments could take `json` now (them unchanged).
  static bool could_feed(const CallArguments& arguments, std::string_view json) {
    return std::visit([&](const auto& a) { return a.accepts(json); }, arguments);
  }
  // One byte of a key or a string, escaped as JSON wants it.
  static bool feed_text(CallArguments& arguments, uint8_t byte) {
    if (byte == '"') return feed(arguments, "\\\"");
    if (byte == '\\') return feed(arguments, "\\\\");
    if (byte < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      const char escaped[] = {'\\', 'u', '0', '0', kHex[byte >> 4], kHex[byte & 15]};
      return feed(arguments, std::string_view(escaped, sizeof escaped));
    }
    const char c = static_cast<char>(byte);
    return feed(arguments, std::string_view(&c, 1));
  }
  // Inside a string of the arguments that takes any text.
  static bool in_free_string(const CallArguments& arguments) {
    return std::visit([](const auto& a) { return a.in_free_string(); }, arguments);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace tc::text
