// Declarations of the generated Unicode tables (unicode_tables.cpp, made by
// scripts/gen_unicode_tables.py). Internal to engine/text; use unicode.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tc::text::tables {

extern const char* const kUnicodeVersion;
// Sorted (first codepoint << 3) | category code; see unicode.h Category.
extern const uint32_t kCategoryRanges[];
extern const size_t kCategoryRangeCount;
// Sorted inclusive [first, last] White_Space ranges.
extern const uint32_t kWhiteSpaceRanges[][2];
extern const size_t kWhiteSpaceRangeCount;

// Every stride-th codepoint of [first, last] maps to itself + delta.
struct CaseRun {
  uint32_t first;
  uint32_t last;
  uint32_t stride;
  int32_t delta;
};
// Every codepoint of [first, last] maps to value.
struct ValueRange {
  uint32_t first;
  uint32_t last;
  uint32_t value;
};
// Simple lowercase mapping, sorted by first, non-overlapping.
extern const CaseRun kLowercaseRuns[];
extern const size_t kLowercaseRunCount;
// First codepoint of the canonical decomposition where it differs, sorted.
extern const ValueRange kNfdFirstRanges[];
extern const size_t kNfdFirstRangeCount;

}  // namespace tc::text::tables
