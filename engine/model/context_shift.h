// Context shift: how a sequence goes on generating once its KV cache slot is
// full, as llama.cpp's server (--context-shift) and Ollama (`shift`) do.
// The first n_keep positions stay; the oldest half of the rest is dropped;
// the newer half moves down by n_discard positions. Values move as they are;
// keys were stored rotated by RoPE for their old positions, so each is
// rotated back by n_discard positions (LlamaModel::shift_context). Layer 0's
// shifted keys equal those a fresh pass over the remaining tokens would
// store (within the cache type's rounding); later layers keep states computed
// with the dropped tokens in view, as in llama.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "engine/model/model_spec.h"

namespace tc::model {

// Why a model's KV cache cannot be shifted, or empty: keys normed after
// RoPE (Hunyuan) are not a rotation of their old values.
std::string context_shift_refusal(const ModelSpec& spec);

struct ContextShiftPlan {
  int64_t n_keep = 0;     // positions [0, n_keep) stay where they are
  int64_t n_discard = 0;  // positions [n_keep, n_keep + n_discard) are dropped; 0: no shift is possible
};

// The shift of a slot holding n_used positions of a context of n_ctx:
// n_keep clamped to [0, n_ctx / 2] (so a shift always frees at least a
// quarter of the context), then half of what follows it dropped (rounded
// down, as llama.cpp and Ollama do).
inline ContextShiftPlan plan_context_shift(int64_t n_used, int64_t n_ctx, int64_t n_keep) {
  ContextShiftPlan plan;
  plan.n_keep = n_keep < 0 ? 0 : (n_keep > n_ctx / 2 ? n_ctx / 2 : n_keep);
  if (plan.n_keep > n_used) plan.n_keep = n_used;
  plan.n_discard = (n_used - plan.n_keep) / 2;
  return plan;
}

}  // namespace tc::model
