// A float dot product in 8 running sums (which compilers vectorize without
// reassociating anything themselves), for the recurrent layers' small
// per-head loops (delta_net_block.cpp, mamba2_block.cpp).
#pragma once

#include <cstdint>

namespace tc::model {

// sum a[i] * b[i] over i < n: 8 running sums, the tail, then the sums in order.
inline float lane_dot(const float* a, const float* b, int64_t n) {
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += a[i + j] * b[i + j];
  }
  float sum = 0.0f;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (const float p : part) sum += p;
  return sum;
}

}  // namespace tc::model
