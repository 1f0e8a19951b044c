// The 6-bit scale and min of sub-block j (0-7) of a Q4_K or Q5_K
// super-block, from its 12 packed bytes (the packing of
// quantize_kquants.cpp): j < 4 in the low 6 bits of bytes j and j + 4,
// the others split between byte j + 4's nibbles and the top 2 bits of
// bytes j - 4 and j.
#pragma once

#include <cstdint>

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

}  // namespace tc::kernels::detail
