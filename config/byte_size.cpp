// parse_byte_size: the `vram_budget` / --vram-budget syntax.
#include "config/byte_size.h"

#include <array>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <string>

namespace tc::config {
namespace {

struct Unit {
  std::string_view name;  // lower case
  uint64_t multiplier;
};

constexpr uint64_t kKi = 1024;
constexpr uint64_t kK = 1000;
constexpr std::array<Unit, 13> kUnits = {{
    {"b", 1},
    {"k", kKi}, {"kib", kKi}, {"kb", kK},
    {"m", kKi * kKi}, {"mib", kKi * kKi}, {"mb", kK * kK},
    {"g", kKi * kKi * kKi}, {"gib", kKi * kKi * kKi}, {"gb", kK * kK * kK},
    {"t", kKi * kKi * kKi * kKi}, {"tib", kKi * kKi * kKi * kKi}, {"tb", kK * kK * kK * kK},
}};

// Digits of a fraction kept exactly: 10^18 times the largest multiplier
// (2^40) still fits the 128-bit product.
constexpr size_t kMaxFractionDigits = 18;
constexpr size_t kMaxIntegerDigits = 19;

std::invalid_argument bad_size(std::string_view text, const std::string& why) {
  return std::invalid_argument("VRAM budget '" + std::string(text) + "': " + why +
                               "; expected bytes (e.g. 8000000000) or a number with a unit (12GiB, 1.5GiB, 800MiB, "
                               "8G = 8GiB, 8GB = 8*10^9 bytes)");
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

uint64_t parse_byte_size(std::string_view text) {
  if (text.empty()) throw bad_size(text, "empty value");
  size_t pos = 0;
  const size_t int_begin = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  const std::string_view int_digits = text.substr(int_begin, pos - int_begin);
  if (int_digits.empty()) {
    throw bad_size(text, text[0] == '-' ? "a budget cannot be negative" : "does not start with a number");
  }
  std::string_view frac_digits;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const size_t frac_begin = pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    frac_digits = text.substr(frac_begin, pos - frac_begin);
    if (frac_digits.empty()) throw bad_size(text, "a '.' must be followed by digits");
  }
  if (pos < text.size() && text[pos] == ' ') ++pos;
  std::string unit;
  for (; pos < text.size(); ++pos) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (!std::isalpha(c)) throw bad_size(text, "unexpected character after the number");
    unit.push_back(static_cast<char>(std::tolower(c)));
  }
  uint64_t multiplier = 1;
  if (unit.empty()) {
    if (!frac_digits.empty()) throw bad_size(text, "a fraction needs a unit (plain bytes are whole numbers)");
    if (text.back() == ' ') throw bad_size(text, "trailing space");
  } else {
    bool known = false;
    for (const auto& u : kUnits) {
      if (u.name == unit) {
        multiplier = u.multiplier;
        known = true;
      }
    }
    if (!known) throw bad_size(text, "unknown unit '" + unit + "'");
  }
  if (int_digits.size() > kMaxIntegerDigits) throw bad_size(text, "too large");
  if (frac_digits.size() > kMaxFractionDigits) throw bad_size(text, "more than 18 decimal places");

  unsigned __int128 whole = 0;
  for (const char c : int_digits) whole = whole * 10 + static_cast<unsigned>(c - '0');
  unsigned __int128 bytes = whole * multiplier;
  if (!frac_digits.empty()) {
    unsigned __int128 frac = 0, scale = 1;
    for (const char c : frac_digits) {
      frac = frac * 10 + static_cast<unsigned>(c - '0');
      scale *= 10;
    }
    bytes += frac * multiplier / scale;  // rounded down to whole bytes
  }
  if (bytes > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max())) {
    throw bad_size(text, "too large (more than 2^63 - 1 bytes)");
  }
  return static_cast<uint64_t>(bytes);
}

}  // namespace tc::config
