// How many leading layers fit a VRAM budget in layer offload mode (the
// llama.cpp-style baseline, docs/hybrid.md "Layer offload (the baseline)"),
// with the placement solver's byte accounting (placement_costs.h). Plain
// data and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/placement_costs.h"

namespace tc::sparse {

// What k device layers cost, in exact bytes, for one serving shape.
struct LayerOffloadCosts {
  std::vector<uint64_t> layer_weights;  // [n_layer]: attn_*, ffn_* of layer N as stored in the file
  uint64_t kv_per_layer = 0;            // f16 K and V of one layer: kv_cache_bytes(spec, shape) / n_layer
  uint64_t output_head = 0;             // output.weight (token_embd.weight when tied) + output_norm
  StepWorkspace workspace;              // dense_step_workspace(): the dense step's buffers and GPU scratch

  // Device bytes with layers [0, k) on the device: their weights and KV
  // cache, the workspace when k > 0 (its head part only with the head), the
  // head when k = n_layer (llama.cpp offloads the output layer only with
  // every layer). 0 for k = 0.
  uint64_t device_bytes(int64_t k) const;
};

LayerOffloadCosts layer_offload_costs(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                      const PlacementShape& shape);

struct LayerOffloadPlan {
  int64_t n_device_layers = 0;  // the largest k with device_bytes(k) <= budget
  uint64_t device_bytes = 0;    // device_bytes(n_device_layers)
  std::string summary;          // "12 of 40 layers on the GPU: 7.52 GiB of the 8.00 GiB budget ..."
};

// The largest k whose device bytes fit `budget` (0 when not even one layer does).
LayerOffloadPlan plan_layer_offload(const LayerOffloadCosts& costs, uint64_t budget);

}  // namespace tc::sparse
