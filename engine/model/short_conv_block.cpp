// LFM2's short convolution, op by op in llama.cpp's order (see short_conv_block.h).
#include "engine/model/short_conv_block.h"

#include <algorithm>
#include <stdexcept>

#include "engine/model/causal_conv.h"

namespace tc::model {

ShortConvBlock::ShortConvBlock(const ModelSpec& spec, kernels::Backend& backend) : spec_(spec), backend_(backend) {
  if (backend.device() != kernels::DeviceKind::Cpu) {
    throw std::invalid_argument("LFM2's short convolution runs on the CPU backend only so far");
  }
}

void ShortConvBlock::run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
                         std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) {
  const int64_t n_embd = spec_.n_embd, width = 3 * n_embd;
  bcx_.resize(std::max(bcx_.size(), static_cast<size_t>(n_tokens * width)));
  y_.resize(std::max(y_.size(), static_cast<size_t>(n_tokens * n_embd)));
  backend_.matmul(w.sc_in, cur, n_tokens, bcx_.data());
  backend_.synchronize();
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* row = bcx_.data() + t * width;
    for (int64_t i = 0; i < n_embd; ++i) row[i] *= row[2 * n_embd + i];  // b * x
  }
  const auto* taps = static_cast<const float*>(w.sc_conv.data);
  for (const RecurrentSequence& s : sequences) {
    causal_conv(bcx_.data() + s.first * width, width, s.n, n_embd, taps, spec_.short_conv_taps, nullptr, false,
                kv.conv_state(s.slot, layer), window_);
  }
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = bcx_.data() + t * width;
    float* y = y_.data() + t * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) y[i] = row[n_embd + i] * row[i];  // c * conv
  }
  backend_.matmul(w.sc_out, y_.data(), n_tokens, out);
}

}  // namespace tc::model
