// Number formatting shared by the profiler's reports (profile_report.cpp,
// predictor_report.cpp): printf-style doubles and percentages.
#pragma once

#include <cstdio>
#include <string>

namespace tc::profiler {

// v formatted by a printf format with one double conversion ("%.4f").
inline std::string format_double(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A fraction as a percentage with one decimal: 0.1234 -> "12.3%".
inline std::string percent(double fraction) { return format_double("%.1f%%", 100.0 * fraction); }

}  // namespace tc::profiler
