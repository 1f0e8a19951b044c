// What the placement solver pays for, in exact bytes: the fixed part of the
// device memory (attention and norms, predictors, output head, KV cache,
// workspace) and the bytes of one FFN neuron of each layer (its gate, up and
// ffn_down_t rows at their stored dtypes). Read from the model's tensor
// directory; plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/predictors.h"
#include "kernels/dtype.h"

namespace tc::sparse {

// The serving shape the device memory must hold.
struct PlacementShape {
  int64_t n_ctx = 4096;    // KV positions per slot
  int64_t n_parallel = 4;  // KV slots (sequences decoded together)
  int64_t n_batch = 512;   // tokens of the largest step (a prefill chunk)
};

// The bytes placed before any FFN neuron, in the order they are spent.
struct FixedCosts {
  uint64_t attention = 0;    // attn_norm, attn_q/k/v/output and ffn_norm of every layer
  uint64_t predictors = 0;   // fc1 + fc2 of every layer at their loaded dtypes (0: no predictors)
  uint64_t output_head = 0;  // output.weight (token_embd.weight when tied) + output_norm
  uint64_t kv_cache = 0;     // kv_cache_bytes()
  uint64_t workspace = 0;    // workspace_bytes()
  uint64_t total() const { return attention + predictors + output_head + kv_cache + workspace; }
};

// One neuron of a layer as the sparse path stores it: row i of ffn_gate,
// of ffn_up and of ffn_down_t, n_embd elements each.
struct NeuronCost {
  std::optional<kernels::DType> gate_dtype;  // nullopt: the FFN has no gate (relu(up) forms)
  kernels::DType up_dtype = kernels::DType::F16;
  kernels::DType down_t_dtype = kernels::DType::F16;  // ffn_down_t's, or ffn_down's (transposed in its dtype)
  uint64_t gate_bytes = 0;
  uint64_t up_bytes = 0;
  uint64_t down_t_bytes = 0;
  uint64_t bytes() const { return gate_bytes + up_bytes + down_t_bytes; }
};

struct PlacementCosts {
  PlacementShape shape;
  FixedCosts fixed;
  int64_t n_ff = 0;
  std::vector<NeuronCost> layers;  // [n_layer]
};

// f16 K and V of every layer for every slot:
//   2 (K, V) * n_layer * n_parallel * n_ctx * n_embd_kv * 2 bytes.
uint64_t kv_cache_bytes(const model::ModelSpec& spec, const PlacementShape& shape);

// The activation buffers of one step, with T = n_batch, R = n_parallel
// (one decode row per slot) and r = the largest predictor rank (0: none):
//   f32 [T, 4 n_embd + 2 n_embd_kv + 2 n_ff]  residual, normed input, q, projection out; k, v; gate, up
//   i32 [T, 2]                                token ids, positions
//   f32 [R, n_embd + n_vocab]                 rows entering the output head, logits
//   f32 [R, n_head * n_ctx]                   decode attention scores
//   f32 [R, r + n_ff] + i32 [R, n_ff]         predictor hidden and scores, active neuron lists (r > 0 only)
// (the buffers LlamaModel::reserve() allocates, plus the decode-only ones).
uint64_t workspace_bytes(const model::ModelSpec& spec, const PlacementShape& shape, int64_t max_predictor_rank);

// The costs of `file` (validated against `spec`) with `predictors` (the
// loaded set; empty: none). Throws std::invalid_argument for a shape out of
// range (n_ctx, n_parallel, n_batch < 1) and gguf::ModelLoadError naming
// the tensor when an FFN tensor cannot be stored neuron-major (a quantized
// ffn_down whose n_embd is not a multiple of its block size).
PlacementCosts placement_costs(const gguf::GgufFile& file, const model::ModelSpec& spec,
                               const PredictorSet& predictors, const PlacementShape& shape);

}  // namespace tc::sparse
