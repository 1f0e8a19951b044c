// parse_sparsity_setting / sparsity_setting_string.
#include "config/sparsity_setting.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace tc::config {
namespace {

std::string fmt(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

}  // namespace

SparsitySetting parse_sparsity_setting(std::string_view text) {
  const std::string accepted = "expected dense, auto, relu or teal:X with X a fraction in [0, " +
                               fmt(kTealMaxSparsity) + "] (e.g. teal:0.4)";
  if (text == "dense") return {SparsityMode::Dense, 0.0f};
  if (text == "auto") return {SparsityMode::Auto, 0.0f};
  if (text == "relu") return {SparsityMode::Relu, 0.0f};
  constexpr std::string_view kTeal = "teal:";
  if (!text.starts_with(kTeal)) {
    throw std::invalid_argument("'" + std::string(text) + "' is not a sparsity mode; " + accepted);
  }
  const std::string_view number = text.substr(kTeal.size());
  float target = 0.0f;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), target);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || !std::isfinite(target)) {
    throw std::invalid_argument("'" + std::string(number) + "' in '" + std::string(text) + "' is not a number; " +
                                accepted);
  }
  if (!(target >= 0.0f && target <= kTealMaxSparsity)) {
    throw std::invalid_argument("the TEAL target " + std::string(number) + " is outside [0, " +
                                fmt(kTealMaxSparsity) + "] (the fraction of each linear input set to 0)");
  }
  return {SparsityMode::Teal, target + 0.0f};  // + 0: "-0" means 0
}

std::string sparsity_setting_string(const SparsitySetting& setting) {
  switch (setting.mode) {
    case SparsityMode::Dense: return "dense";
    case SparsityMode::Auto: return "auto";
    case SparsityMode::Relu: return "relu";
    case SparsityMode::Teal: return "teal:" + fmt(setting.teal_target);
  }
  return "?";
}

}  // namespace tc::config
