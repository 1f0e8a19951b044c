// RecurrentMixer: the block a recurrent layer (ModelSpec::is_recurrent) runs
// in place of attention, its state per KV cache slot: Qwen 3.5's gated delta
// net (delta_net_block.h), Mamba-2 (mamba2_block.h), Mamba-1
// (mamba1_block.h), LFM2's short
// convolution (short_conv_block.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"

namespace tc::model {

// A sequence's rows of a step: tokens [first, first + n) of the step,
// continuing the state of KV cache slot `slot`.
struct RecurrentSequence {
  int slot = 0;
  int64_t first = 0;
  int64_t n = 0;
};

class RecurrentMixer {
 public:
  virtual ~RecurrentMixer() = default;
  // cur: f32 [n_tokens, n_embd], attn_norm(x); out: f32 [n_tokens, n_embd],
  // the block's output before the residual add. Updates the sequences'
  // states of `layer` in kv.
  virtual void run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
                   std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) = 0;
};

// The model's mixer: Mamba-2's, LFM2's short convolution or the delta net,
// as the spec says. Throws std::invalid_argument off the CPU backend.
std::unique_ptr<RecurrentMixer> make_recurrent_mixer(const ModelSpec& spec, kernels::Backend& backend);

}  // namespace tc::model
