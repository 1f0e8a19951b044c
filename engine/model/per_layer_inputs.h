// PerLayerInputs: Gemma 4's per-layer inputs (ModelSpec::n_embd_per_layer),
// as llama.cpp's gemma4 graph computes them. At the start of a step each
// token gets a row of n_embd_per_layer values for every layer, from its own
// table row (per_layer_token_embd) and a projection of its embedding; at the
// end of each layer the residual takes
// post_norm(proj(gelu(inp_gate · x) * that layer's row)). Host memory only:
// models with per-layer inputs run on the CPU backend.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "kernels/backend.h"

namespace tc::model {

class PerLayerInputs {
 public:
  PerLayerInputs(const ModelSpec& spec, const LlamaWeights& weights) : spec_(spec), weights_(weights) {}

  // ids: i32 [n_tokens] (an image's rows as token 0, llama.cpp's padding
  // row); x: f32 [n_tokens, n_embd], the step's input embeddings (scaled
  // token rows, image rows as they are).
  void prepare(kernels::Backend& b, const int32_t* ids, const float* x, int64_t n_tokens);
  // x: f32 [n_tokens, n_embd], the residual after `layer`'s FFN; adds the
  // layer's per-layer block to it.
  void apply(kernels::Backend& b, const LayerWeights& w, int64_t layer, float* x, int64_t n_tokens);
  // The layer's block of `in` (f32 [n_tokens, n_embd]): f32 [n_tokens,
  // n_embd], valid until the next call (Gemma 3n adds it to its inactive
  // AltUp streams).
  const float* block(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* in, int64_t n_tokens);

 private:
  const ModelSpec& spec_;
  const LlamaWeights& weights_;
  std::vector<float> inputs_;   // f32 [n_layer, n_tokens, n_embd_per_layer]: each layer's rows together
  std::vector<float> scratch_;  // f32 [n_tokens, n_layer * n_embd_per_layer]
  std::vector<float> rows_;     // f32 [n_layer * n_embd_per_layer]: one token's table row
  std::vector<float> gate_;     // f32 [n_tokens, n_embd_per_layer]
  std::vector<float> out_;      // f32 [n_tokens, n_embd]
};

}  // namespace tc::model
