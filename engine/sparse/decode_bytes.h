// The bytes one decode token must read (the physical limit of
// ../shared/design/sparse-models.md): attention and norm weights, the
// predictors, the FFN rows actually used, the output head, the token's
// embedding row and the KV cache. Dense: every FFN row. Sparse: the gate
// rows of the predicted neurons, and the up and ffn_down_t rows of the
// neurons computed (gate > 0), from the sparse FFN's counters. A mixture
// of experts: the router, expert_used_count / expert_count of the
// experts' bytes, and a shared expert's.
#pragma once

#include <cstdint>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"

namespace tc::sparse {

struct DecodeBytes {
  double attention = 0;   // attn_q/k/v/output and the norms, all layers
  double predictors = 0;  // fc1 + fc2, all layers (sparse only)
  double ffn = 0;         // gate/up/down rows read
  double head = 0;        // output head + one embedding row + output norm
  double kv = 0;          // K and V read by attention at the mean context length, and recurrent layers' state
  double total() const { return attention + predictors + ffn + head + kv; }
};

// Per decode token. `counters` null: dense. mean_context: the average number
// of cached positions attended over; kv_types: the KV cache's element types.
DecodeBytes decode_bytes_per_token(const model::LoadedModel& model, const model::SparseFfnCounters* counters,
                                   double mean_context, kernels::KvCacheTypes kv_types = {});

}  // namespace tc::sparse
