// JSON Schema's minimum / maximum / exclusiveMinimum / exclusiveMaximum for
// schema-constrained sampling: whether a number written so far (JSON number
// syntax without an exponent: "-", "12", "12.", "12.5") can still become one
// within the bounds, and whether a whole number is within them. Values are
// compared as doubles (exact for integers up to 2^53 and for the decimal
// fractions a bound is usually written with).
#pragma once

#include <limits>
#include <string_view>

namespace tc::text {

struct NumberBounds {
  double minimum = -std::numeric_limits<double>::infinity();
  double maximum = std::numeric_limits<double>::infinity();
  bool exclusive_minimum = false;
  bool exclusive_maximum = false;

  bool bounded() const { return minimum != -std::numeric_limits<double>::infinity() ||
                                maximum != std::numeric_limits<double>::infinity(); }
};

// Fraction digits a bounded number may have (beyond them doubles cannot
// tell the values apart).
inline constexpr int kBoundedFractionDigits = 15;

// Some completion of `text` (more digits, a fraction unless `integer`) is
// within `b`. `text` is a prefix the number lexer accepted, exponent-free.
bool number_prefix_feasible(std::string_view text, bool integer, const NumberBounds& b);
// The whole number `text` is within `b`.
bool number_within(std::string_view text, const NumberBounds& b);

}  // namespace tc::text
