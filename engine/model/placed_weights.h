// Weights placed where a backend's ops read them: on the CPU the mapped
// file's views themselves (no copy; LlamaModel may then repack some for the
// CPU matmul, cpu_repack.h), on a GPU device copies owned here.
// Built once at model load; const afterwards.
#pragma once

#include <vector>

#include "engine/model/llama_weights.h"
#include "kernels/backend.h"

namespace tc::model {

struct PlacedWeights {
  LlamaWeights views;                    // what the forward pass reads (shapes and dtypes as the file's)
  std::vector<kernels::Buffer> storage;  // device copies behind `views` (empty on the CPU backend)
  size_t device_bytes = 0;               // bytes in `storage`
};

// Uploads every tensor of `host` with backend.upload (a tied output head is
// uploaded once and shared with token_embd; the row ranges of a fused
// tensor each on its own). ffn_matrices false (hybrid mode): ffn_gate,
// ffn_up, ffn_down and ffn_down_t are left out (null views; the hybrid split
// uploads the hot rows). Throws what upload throws (e.g.
// out of device memory), naming the tensor.
PlacedWeights place_weights(const LlamaWeights& host, kernels::Backend& backend, bool ffn_matrices = true);

// Layer offload: uploads every tensor of layers [0, n_device_layers), the
// RoPE frequency factors and, when `head` is set, output_norm and the output
// head with their biases (token_embd's data when tied); everything else
// (token_embd, the later layers) stays the host view. Throws as
// place_weights.
PlacedWeights place_leading_layers(const LlamaWeights& host, kernels::Backend& backend, int64_t n_device_layers,
                                   bool head);

}  // namespace tc::model
