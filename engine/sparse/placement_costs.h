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
  int64_t n_batch = 512;   // tokens of the largest prefill step (a prompt chunk)
  int64_t n_logit_rows = 0;  // logit rows of one step at most; 0: n_parallel (one per sequence)

  // Tokens of one step at most: every decoding sequence gets its token even
  // when they alone exceed n_batch (runtime::EngineOptions).
  int64_t step_tokens() const { return n_batch > n_parallel ? n_batch : n_parallel; }
  int64_t logit_rows() const { return n_logit_rows > 0 ? n_logit_rows : n_parallel; }
};

// The bytes placed before any FFN neuron, in the order they are spent.
struct FixedCosts {
  uint64_t attention = 0;    // attn_norm, attn_q/k/v/output and ffn_norm of every layer
  uint64_t predictors = 0;   // fc1 + fc2 of every layer at their loaded dtypes (0: no predictors)
  uint64_t output_head = 0;  // output.weight (token_embd.weight when tied) + output_norm
  uint64_t kv_cache = 0;     // kv_cache_bytes()
  uint64_t workspace = 0;    // hybrid_step_workspace().total()
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

// The device memory of one step besides weights and KV cache, in exact
// bytes, with T = shape.step_tokens(), R = shape.logit_rows() and r = the
// largest predictor rank:
//   buffers       the step's activations (LlamaModel::reserve_steps):
//                   f32 [T, 4 n_embd + 2 n_embd_kv]  residual, normed input, q, projection out; k, v
//                   i32 [T, 2]                       token ids, positions
//                 and the FFN's, dense:
//                   f32 [T, 2 n_ff]                  gate, up
//                 or hybrid (HybridFfnBlock::reserve):
//                   f32 [T, r + 4 n_ff + n_embd]     predictor hidden and scores, device mask, hot
//                                                    gate and up, the CPU's partial sum
//                   u32 [2, T, ceil(n_ff / 32)]      predicted-set bitmasks (the layer's, the next one's guess)
//                   i32 [n_ff]                       the device's rows of the layer
//                   2 stages of streamed rows        2 x 3 x tile rows x the largest neuron row
//                   i32 [tile rows]                  (HybridFfnStream: dense prompt steps; only
//                                                    when T >= kStreamMinTokens)
//   head_buffers  f32 [R, n_embd + n_vocab]          rows entering the output head, logits
//   scratch       the GPU backend's workspace, the largest request of one
//                 op (kernels/device_scratch.h): a cuBLAS matmul of T
//                 tokens over any layer matrix on the device (attention,
//                 predictors, dense FFN; hybrid's hot gate and up rows, up
//                 to n_ff, in dense steps), or the down projection's
//                 axpy_rows over up to n_ff rows (ffn_down_t, hybrid's hot rows)
//   head_scratch  the head's matmul over R rows
//   blas          cuBLAS's own workspace (kCublasWorkspaceBytes), which the
//                 GPU backend allocates with its cuBLAS handle
struct StepWorkspace {
  uint64_t buffers = 0;
  uint64_t head_buffers = 0;
  uint64_t scratch = 0;
  uint64_t head_scratch = 0;
  uint64_t blas = 0;
  // The GPU workspace's size: one buffer serves every op, the head's with it or not.
  uint64_t scratch_bytes(bool with_head = true) const {
    return with_head && head_scratch > scratch ? head_scratch : scratch;
  }
  uint64_t total(bool with_head = true) const {
    return buffers + (with_head ? head_buffers : 0) + scratch_bytes(with_head) + blas;
  }
};

// The dense step: every layer's attention and FFN on the device (layer
// offload's layers, a model wholly on the GPU).
StepWorkspace dense_step_workspace(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                   const PlacementShape& shape);
// Hybrid mode's step: attention, predictors and the hot FFN rows on the device.
StepWorkspace hybrid_step_workspace(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                    const PredictorSet& predictors, const PlacementShape& shape);

// The costs of `file` (validated against `spec`) with `predictors` (the
// loaded set; empty: none). Throws std::invalid_argument for a shape out of
// range (n_ctx, n_parallel, n_batch < 1, n_logit_rows < 0) and gguf::ModelLoadError naming
// the tensor when an FFN tensor cannot be stored neuron-major (a quantized
// ffn_down whose n_embd is not a multiple of its block size).
PlacementCosts placement_costs(const gguf::GgufFile& file, const model::ModelSpec& spec,
                               const PredictorSet& predictors, const PlacementShape& shape);

}  // namespace tc::sparse
