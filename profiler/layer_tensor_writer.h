// LayerTensorWriter: the seeded random tensors the per-architecture
// make-model writers (make_qwen35.h, make_granite_hybrid.h, make_lfm2.h,
// make_nemotron_h.h) share: matrices scaled to their fan-in (or
// --weight-scale), norms near 1, and the blocks several architectures
// write alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "engine/model/model_spec.h"
#include "kernels/dtype.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_model.h"

namespace tc::profiler {

class LayerTensorWriter {
 public:
  LayerTensorWriter(const MakeModelOptions& o, const RandomTensorAdder& add) : o_(o), add_(add) {}

  float sd_for(int64_t fan_in) const {
    return o_.weight_scale > 0.0f ? o_.weight_scale : 1.0f / std::sqrt(static_cast<float>(fan_in));
  }
  // A {n_cols, n_rows} matrix (n_cols its fan-in).
  void matrix(const std::string& name, kernels::DType t, int64_t n_cols, int64_t n_rows) const {
    add_(name, t, {n_cols, n_rows}, 0.0f, sd_for(n_cols));
  }
  // n_expert {n_cols, n_rows} matrices in one tensor.
  void experts(const std::string& name, kernels::DType t, int64_t n_cols, int64_t n_rows, int64_t n_expert) const {
    add_(name, t, {n_cols, n_rows, n_expert}, 0.0f, sd_for(n_cols));
  }
  void norm(const std::string& name, int64_t n) const { add_(name, kernels::DType::F32, {n}, 1.0f, 0.1f); }
  // Layer l's attn_q/k/v/output: q n_q rows, k and v n_kv, v `heavy` (as llama.cpp's mixes).
  void attention(int64_t l, kernels::DType base, kernels::DType heavy, int64_t n_q, int64_t n_kv) const {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    matrix(name("attn_q"), base, o_.n_embd, n_q);
    matrix(name("attn_k"), base, o_.n_embd, n_kv);
    matrix(name("attn_v"), heavy, o_.n_embd, n_kv);
    matrix(name("attn_output"), base, n_q, o_.n_embd);
  }
  // Layer l's dense SwiGLU FFN of n_ff: ffn_gate, ffn_up, ffn_down (heavy).
  void swiglu_ffn(int64_t l, kernels::DType base, kernels::DType heavy, int64_t n_ff) const {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    matrix(name("ffn_gate"), base, o_.n_embd, n_ff);
    matrix(name("ffn_up"), base, o_.n_embd, n_ff);
    matrix(name("ffn_down"), heavy, n_ff, o_.n_embd);
  }
  const RandomTensorAdder& add() const { return add_; }

 private:
  const MakeModelOptions& o_;
  const RandomTensorAdder& add_;
};

}  // namespace tc::profiler
