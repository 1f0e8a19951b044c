// splitmix64: one step of Vigna's splitmix64, which turns a seed (and a
// stream and row mixed into it) into well-mixed state for the generators
// that make-model's weight streams use, and the state step of those
// generators (xoshiro256+ in make_model.cpp, xoshiro256** in
// sparse_model.h: they differ only in the output they take). Shared: the
// same state, hence the same weights, in both.
#pragma once

#include <bit>
#include <cstdint>

namespace tc::profiler {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Advances a xoshiro256 state by one step.
inline void xoshiro256_step(uint64_t (&s)[4]) {
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = std::rotl(s[3], 45);
}

}  // namespace tc::profiler
