// The 6-bit scale and min of sub-block j (0-7) of a Q4_K or Q5_K
// super-block, from its 12 packed bytes (the packing of
// quantize_kquants.cpp): j < 4 in the low 6 bits of bytes j and j + 4,
// the others split between byte j + 4's nibbles and the top 2 bits of
// bytes j - 4 and j. (q4_K_scales_mins: all 8 at once.)
#pragma once

#include <cstdint>
#include <cstring>

namespace tc::kernels::detail {

inline void q4_K_scale_min(const uint8_t* packed, int j, int& sc, int& m) {
  if (j < 4) {
    sc = packed[j] & 63;
    m = packed[j + 4] & 63;
  } else {
    sc = (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4);
    m = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// All 8 scales and mins at once, four to a 32-bit word (as
// unpack_k4_scales in matmul_x86_quant.h): the same values as
// q4_K_scale_min for j = 0..7, a dozen integer operations in all.
inline void q4_K_scales_mins(const uint8_t* packed, uint8_t (&sc)[8], uint8_t (&m)[8]) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  const uint32_t words[4] = {u[0] & kLow6, (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4), u[1] & kLow6,
                             ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4)};
  std::memcpy(sc, words, 8);
  std::memcpy(m, words + 2, 8);
}

}  // namespace tc::kernels::detail
