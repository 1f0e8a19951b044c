// Gemma 4's per-layer inputs, in llama.cpp's order of operations
// (gemma4.cpp: build_inp_per_layer, project_per_layer_inputs and the block
// at the end of each layer).
#include "engine/model/per_layer_inputs.h"

#include <cmath>

namespace tc::model {

void PerLayerInputs::prepare(kernels::Backend& b, const int32_t* ids, const float* x, int64_t n_tokens) {
  const int64_t n_pl = spec_.n_embd_per_layer;
  const int64_t n_all = n_pl * spec_.n_layer;
  const auto size = static_cast<size_t>(n_tokens * n_all);
  if (scratch_.size() < size) {
    scratch_.resize(size);
    inputs_.resize(size);
  }
  // The projection: per_layer_model_proj · x / sqrt(n_embd), each layer's
  // n_embd_per_layer values RMS-normed with per_layer_proj_norm.
  float* proj = scratch_.data();
  b.matmul(weights_.per_layer_model_proj, x, n_tokens, proj);
  b.scale(proj, n_tokens * n_all, 1.0f / std::sqrt(static_cast<float>(spec_.n_embd)));
  b.rms_norm(proj, static_cast<const float*>(weights_.per_layer_proj_norm.data), n_tokens * spec_.n_layer, n_pl,
             static_cast<float>(spec_.rms_eps), proj);
  // Plus the token's own rows times sqrt(n_embd_per_layer), all over sqrt(2);
  // stored layer-major so that a layer's rows are contiguous.
  rows_.resize(static_cast<size_t>(n_all));
  float* rows = rows_.data();
  const float row_scale = std::sqrt(static_cast<float>(n_pl));
  const float sum_scale = 1.0f / std::sqrt(2.0f);
  for (int64_t t = 0; t < n_tokens; ++t) {
    b.get_rows(weights_.per_layer_token_embd, ids + t, 1, rows);
    for (int64_t l = 0; l < spec_.n_layer; ++l) {
      const float* p = proj + t * n_all + l * n_pl;
      const float* r = rows + l * n_pl;
      float* out = inputs_.data() + (l * n_tokens + t) * n_pl;
      for (int64_t i = 0; i < n_pl; ++i) out[i] = (p[i] + r[i] * row_scale) * sum_scale;
    }
  }
}

void PerLayerInputs::apply(kernels::Backend& b, const LayerWeights& w, int64_t layer, float* x, int64_t n_tokens) {
  b.add(x, block(b, w, layer, x, n_tokens), n_tokens * spec_.n_embd);
}

const float* PerLayerInputs::block(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* in,
                                   int64_t n_tokens) {
  const int64_t n_pl = spec_.n_embd_per_layer;
  const int64_t n_embd = spec_.n_embd;
  gate_.resize(static_cast<size_t>(n_tokens * n_pl));
  out_.resize(static_cast<size_t>(n_tokens * n_embd));
  b.matmul(w.per_layer_inp_gate, in, n_tokens, gate_.data());
  // gelu(gate) times the layer's rows: GeGLU with the rows as its "up".
  const float* rows = inputs_.data() + layer * n_tokens * n_pl;
  b.ffn_activation(kernels::Activation::GeGLU, gate_.data(), rows, n_tokens * n_pl, gate_.data());
  b.matmul(w.per_layer_proj, gate_.data(), n_tokens, out_.data());
  b.rms_norm(out_.data(), static_cast<const float*>(w.per_layer_post_norm.data), n_tokens, n_embd,
             static_cast<float>(spec_.rms_eps), out_.data());
  return out_.data();
}

}  // namespace tc::model
