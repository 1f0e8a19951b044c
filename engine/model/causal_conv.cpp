// The recurrent layers' causal convolution (see causal_conv.h).
#include "engine/model/causal_conv.h"

#include <algorithm>
#include <cmath>

namespace tc::model {

void causal_conv(float* rows, int64_t stride, int64_t n, int64_t channels, const float* taps, int64_t n_taps,
                 const float* bias, bool silu, float* state, std::vector<float>& window) {
  const int64_t kept = n_taps - 1;
  window.resize(static_cast<size_t>(kept + n));
  for (int64_t c = 0; c < channels; ++c) {
    // The channel's row of ggml's conv input: its state, then the tokens' values.
    float* channel_state = state + c * kept;
    std::copy_n(channel_state, kept, window.begin());
    for (int64_t t = 0; t < n; ++t) window[static_cast<size_t>(kept + t)] = rows[t * stride + c];
    const float* tap = taps + c * n_taps;
    const float b = bias != nullptr ? bias[c] : 0.0f;
    for (int64_t t = 0; t < n; ++t) {
      float sum = 0.0f;
      for (int64_t j = 0; j < n_taps; ++j) sum += window[static_cast<size_t>(t + j)] * tap[j];
      if (bias != nullptr) sum += b;
      rows[t * stride + c] = silu ? sum / (1.0f + std::exp(-sum)) : sum;
    }
    std::copy_n(window.begin() + n, kept, channel_state);
  }
}

}  // namespace tc::model
