// The packed 6-bit scales and mins of Q4_K / Q5_K super-blocks
// (kernels/cpu/k4_scales.h): the all-at-once decoder against the
// per-sub-block one, on every bit pattern of each byte position.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "kernels/cpu/k4_scales.h"

using namespace tc::kernels::detail;

TEST_CASE("q4_K_scales_mins gives q4_K_scale_min's values for all 8 sub-blocks", "[kernels][kquants]") {
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 4096; ++trial) {
    uint8_t packed[12];
    for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
    packed[trial % 12] = static_cast<uint8_t>(trial / 12);  // every value at every position
    uint8_t sc[8], m[8];
    q4_K_scales_mins(packed, sc, m);
    for (int j = 0; j < 8; ++j) {
      int want_sc = 0, want_m = 0;
      q4_K_scale_min(packed, j, want_sc, want_m);
      INFO("trial " << trial << " sub-block " << j);
      REQUIRE(int{sc[j]} == want_sc);
      REQUIRE(int{m[j]} == want_m);
    }
  }
}
