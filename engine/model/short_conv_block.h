// ShortConvBlock: LFM2's gated short convolution, the block its recurrent
// layers (head_count_kv 0) run in place of attention, as llama.cpp's lfm2
// graph and ggml's ssm_conv compute it. Per token t of a sequence:
//   [b, c, x] = shortconv.in_proj · x_t   (three n_embd-wide chunks)
//   y = c * causal conv (shortconv.l_cache taps per channel, no bias) of b * x
//   out = shortconv.out_proj · y
// The convolution's last l_cache - 1 inputs carry over between steps in the
// slot's recurrent state (KvCache). Host memory, the CPU backend.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "engine/model/recurrent_mixer.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"

namespace tc::model {

class ShortConvBlock : public RecurrentMixer {
 public:
  ShortConvBlock(const ModelSpec& spec, kernels::Backend& backend);

  void run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
           std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) override;

 private:
  const ModelSpec& spec_;
  kernels::Backend& backend_;
  std::vector<float> bcx_;     // [T, 3 n_embd]: b, c, x; then b * x convolved in b's place
  std::vector<float> y_;       // [T, n_embd]
  std::vector<float> window_;  // [l_cache - 1 + T] one channel's state and inputs
};

}  // namespace tc::model
