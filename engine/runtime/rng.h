// The seeded pseudo-random generators of the engine and of make-model:
// splitmix64 (Vigna), which turns a seed (with a stream and row mixed into
// it) into well-mixed state, and the state step of xoshiro256 (Blackman and
// Vigna), whose + and ** variants differ only in the output they take
// before the step. The sampler draws xoshiro256**; make-model's dense
// weights xoshiro256+, its sparse ones xoshiro256**. Header-only.
#pragma once

#include <bit>
#include <cstdint>

namespace tc::runtime {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Advances a xoshiro256 state (four uint64_t words, indexable) by one step.
template <class State>
inline void xoshiro256_step(State& s) {
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = std::rotl(s[3], 45);
}

// xoshiro256**: the output, then the step.
template <class State>
inline uint64_t xoshiro256ss_next(State& s) {
  const uint64_t result = std::rotl(s[1] * 5, 7) * 9;
  xoshiro256_step(s);
  return result;
}

}  // namespace tc::runtime
