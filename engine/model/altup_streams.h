// AltUpStreams: Gemma 3n's residual (Architecture::altup_layers), as
// llama.cpp's gemma3n graph computes it. Each token carries n_streams rows
// of n_embd: stream 0, the active one, lives in the model's residual
// buffer x; streams 1.. live here. A layer predicts every stream from all
// of them (coefficients from a router over the active one), runs its
// blocks on the active prediction, then corrects every prediction by how
// far the blocks moved the active one. Host memory only: such models run
// on the CPU backend.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "kernels/backend.h"

namespace tc::model {

class AltUpStreams {
 public:
  // `weights` are the views the matmuls read (repacked where the CPU
  // matmul wants them); `rows` the file's own, in the row layout
  // matmul_rows reads.
  AltUpStreams(const ModelSpec& spec, const LlamaWeights& weights, const LlamaWeights& rows);

  // x: f32 [n_tokens, n_embd], the scaled embeddings (stream 0). Stream k
  // (k >= 1) becomes altup_proj[k-1] · x rescaled to x's magnitude per token.
  void begin(kernels::Backend& b, const float* x, int64_t n_tokens);
  // Every stream replaced by its prediction; x (stream 0) becomes the
  // active prediction, which is also kept for correct().
  void predict(kernels::Backend& b, const LayerWeights& w, float* x, int64_t n_tokens);
  // activated: f32 [n_tokens, n_embd], the layer's output for the active
  // prediction. Each stream s becomes prediction_s + (activated -
  // active prediction) * (1 + correct_coef · router(activated))_s.
  void correct(kernels::Backend& b, const LayerWeights& w, const float* activated, float* x, int64_t n_tokens);
  // The corrected active stream times altup_correct_scale (the per-layer
  // input's gate input): f32 [n_tokens, n_embd].
  void scaled_active(const LayerWeights& w, const float* x, int64_t n_tokens, float* out) const;
  // add: f32 [n_tokens, n_embd], added to every stream but the active one.
  void add_to_inactive(kernels::Backend& b, const float* add, int64_t n_tokens);
  // The FFN of a sparse layer (layer < AltUpShape::n_sparse_layers):
  // gate (f32 [n_tokens, n_ff], ffn_gate · x) goes through gaussian_top_k,
  // then up = ffn_up · x (f32 [n_tokens, n_ff]) only for the neurons whose
  // gate is still positive in some token (about 5%: the others' products
  // are exactly 0, and so is their up here), bit for bit matmul's values;
  // where more than a quarter are, the whole matmul.
  void sparse_gate_up(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* x, int64_t n_tokens,
                      float* gate, float* up);
  // x becomes the mean of stream 0 and the other streams unprojected by
  // altup_unembd_proj (each rescaled to stream 0's magnitude per token).
  void finish(kernels::Backend& b, float* x, int64_t n_tokens);

 private:
  // tanh(altup_router · rms_norm(x, altup_router_norm) / n_embd): f32
  // [n_tokens, n_streams] into modalities_.
  void route(kernels::Backend& b, const LayerWeights& w, const float* x, int64_t n_tokens);
  // Rows of y scaled so that each has the magnitude of the same row of `like`.
  void match_magnitude(const float* like, float* y, int64_t n_tokens) const;
  float* stream(int64_t k) { return streams_.data() + (k - 1) * capacity_ * spec_.n_embd; }
  void reserve(int64_t n_tokens);

  const ModelSpec& spec_;
  const LlamaWeights& weights_;
  int64_t capacity_ = 0;              // tokens the buffers hold
  std::vector<float> streams_;        // f32 [n_streams - 1, capacity, n_embd]: streams 1..
  std::vector<float> predicted_;      // f32 [n_streams, capacity, n_embd]: this layer's predictions
  std::vector<float> normed_;         // f32 [capacity, n_embd]
  std::vector<float> modalities_;     // f32 [capacity, n_streams]
  std::vector<float> coefs_;          // f32 [capacity, n_streams^2]
  std::vector<const float*> rows_;    // [n_streams]: one token's row of each stream
  std::vector<kernels::Tensor> up_rows_;  // [n_sparse_layers] the file's ffn_up views (row layout)
  std::vector<int32_t> active_;       // i32 [<= n_ff]: a sparse layer's neurons with a positive gate
  std::vector<float> active_up_;      // f32 [n_tokens, active]: their up values
};

// Gemma 3n's activation sparsity on the first layers' FFN gates: each row
// of gate (f32 [n_rows, n]) becomes relu(gate - (mean + k sd)), its sd with
// n - 1 degrees of freedom (llama.cpp's gaussian_topk), k =
// AltUpShape::kSparsitySdMultiple.
void gaussian_top_k(float* gate, int64_t n_rows, int64_t n);

}  // namespace tc::model
