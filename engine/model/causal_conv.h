// The causal convolution of the recurrent layers (Qwen 3.5's delta net,
// Mamba-2, LFM2's short convolution), as ggml's ssm_conv computes it: per
// channel, the last taps - 1 inputs kept from earlier steps (the slot's
// conv state), each output the taps' weighted sum over the window ending at
// its token, plus the bias where there is one, then silu where asked.
#pragma once

#include <cstdint>
#include <vector>

namespace tc::model {

// rows: f32 [n, stride], the channels [0, channels) of each row convolved in
// place; taps: f32 [channels, taps], oldest input first; bias: f32
// [channels] or null; state: f32 [channels, taps - 1], advanced by n
// tokens; window: scratch.
void causal_conv(float* rows, int64_t stride, int64_t n, int64_t channels, const float* taps, int64_t n_taps,
                 const float* bias, bool silu, float* state, std::vector<float>& window);

}  // namespace tc::model
