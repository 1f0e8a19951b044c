// Number bounds for schema-constrained sampling (see json_number_bounds.h).
// The completions of a prefix are unions of intervals of magnitudes:
// "12" may become 12, 12.x ([12, 13)), 12d ([120, 130)), 12dd, ...; "12.3"
// may become [12.3, 12.4). A negative sign mirrors them.
#include "engine/text/json_number_bounds.h"

#include <cmath>
#include <string>

#include "engine/text/json_lexers.h"

namespace tc::text {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Whether the values between lo and hi (each end open or closed) meet `b`.
bool meets(double lo, bool lo_open, double hi, bool hi_open, const NumberBounds& b) {
  double low = lo;
  bool low_open = lo_open;
  if (b.minimum > low || (b.minimum == low && b.exclusive_minimum)) {
    low_open = b.minimum == low ? true : b.exclusive_minimum;
    low = b.minimum;
  }
  double high = hi;
  bool high_open = hi_open;
  if (b.maximum < high || (b.maximum == high && b.exclusive_maximum)) {
    high_open = b.maximum == high ? true : b.exclusive_maximum;
    high = b.maximum;
  }
  return low < high || (low == high && !low_open && !high_open);
}

// Magnitudes [lo, hi) (or the point lo when `point`), with the sign applied.
bool signed_meets(bool negative, double lo, double hi, bool point, const NumberBounds& b) {
  if (point) return meets(negative ? -lo : lo, false, negative ? -lo : lo, false, b);
  return negative ? meets(-hi, true, -lo, false, b) : meets(lo, false, hi, true, b);
}

}  // namespace

bool number_prefix_feasible(std::string_view text, bool integer, const NumberBounds& b) {
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) text.remove_prefix(1);
  if (text.empty()) return negative ? meets(-kInf, true, 0.0, false, b) : true;
  const size_t dot = text.find('.');
  const std::string_view int_digits = text.substr(0, dot);
  const double whole = std::stod(std::string(int_digits));
  if (dot != std::string_view::npos) {
    const std::string_view frac = text.substr(dot + 1);
    const double lo = std::stod(std::string(text));  // "12." reads as 12
    return signed_meets(negative, lo, lo + std::pow(10.0, -static_cast<double>(frac.size())), false, b);
  }
  // No fraction yet: the number as it is, with a fraction, or with more digits.
  if (signed_meets(negative, whole, whole + 1.0, integer, b)) return true;
  if (whole == 0.0) return false;  // a leading 0 takes no more digits
  for (int k = 1; static_cast<int>(int_digits.size()) + k <= JsonNumberLexer::kMaxIntegerDigits; ++k) {
    const double scale = std::pow(10.0, k);
    if (signed_meets(negative, whole * scale, (whole + 1.0) * scale, false, b)) return true;
  }
  return false;
}

bool number_within(std::string_view text, const NumberBounds& b) {
  const double v = std::stod(std::string(text));
  return meets(v, false, v, false, b);
}

}  // namespace tc::text
