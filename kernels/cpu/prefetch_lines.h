// Internal to kernels/cpu/ops_attention.cpp and attention_avx512.cpp: asking
// for a range of cache lines a piece at a time, spread over a loop.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tc::kernels {
namespace {  // each translation unit its own copy (they are built with different -m flags)

// Part `part` of n_parts of the cache lines [ahead, ahead + bytes), asked for.
inline void prefetch_part(const void* ahead, int64_t bytes, int64_t part, int64_t n_parts) {
  const int64_t lines = (bytes + 63) / 64, per = (lines + n_parts - 1) / n_parts;
  const auto* p = static_cast<const char*>(ahead);
  for (int64_t l = part * per; l < std::min(lines, (part + 1) * per); ++l) __builtin_prefetch(p + l * 64);
}

}  // namespace
}  // namespace tc::kernels
