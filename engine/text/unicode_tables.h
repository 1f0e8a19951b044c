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

}  // namespace tc::text::tables
