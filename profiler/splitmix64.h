// splitmix64: one step of Vigna's splitmix64, which turns a seed (and a
// stream and row mixed into it) into well-mixed state for the generators
// that make-model's weight streams use. Shared by make_model.cpp and
// sparse_planting.cpp: the same state, hence the same weights, in both.
#pragma once

#include <cstdint>

namespace tc::profiler {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace tc::profiler
