// The FFN weights of hybrid mode split by a neuron placement: per layer the
// hot neurons' rows of ffn_gate, ffn_up and ffn_down_t gathered into compact
// matrices and uploaded to the device backend once, followed by the rows of
// the layer's VRAM neuron cache (the prefetch path's slots, zero at load);
// the cold neurons stay in host memory (the mapped file, or the ffn_down_t
// built from a GGUF file's ffn_down), where the CPU reads them in place.
// Built at load; const after, but for the cache rows the prefetcher writes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/llama_weights.h"
#include "kernels/backend.h"

namespace tc::model {

// Which neurons of each layer live on the device: the `hot` lists of a
// sparse::PlacementPlan or of a .generated.gpuidx (sparse::read_gpu_index).
struct NeuronPlacement {
  std::vector<std::vector<int32_t>> hot;  // i32 [n_layer][k_l]: hot neuron ids, strictly ascending, in [0, n_ff)
};

// Throws std::invalid_argument naming the layer when `placement` does not
// have n_layer lists of strictly ascending ids in [0, n_ff).
void check_neuron_placement(const NeuronPlacement& placement, int64_t n_layer, int64_t n_ff);

struct HybridLayerWeights {
  // Device memory (the backend's upload), s_l = n_slots; data null when
  // k_l + s_l = 0. Rows [0, k_l) are the hot neurons, rows k_l + s the
  // cache slots (whichever cold neuron the prefetcher copied there).
  kernels::Tensor hot_gate;    // weight dtype {n_embd, k_l + s_l}: row p < k_l = ffn_gate row hot[p]
  kernels::Tensor hot_up;      // weight dtype {n_embd, k_l + s_l}: row p < k_l = ffn_up row hot[p]
  kernels::Tensor hot_down_t;  // weight dtype {n_embd, k_l + s_l}: row p < k_l = ffn_down_t row hot[p]
  // Host memory, all n_ff rows (the CPU reads only the cold ones).
  kernels::Tensor host_gate;    // weight dtype {n_embd, n_ff}, row i = neuron i
  kernels::Tensor host_up;      // weight dtype {n_embd, n_ff}, row i = neuron i
  kernels::Tensor host_down_t;  // weight dtype {n_embd, n_ff}, row i = neuron i's output column
  // i32 [n_ff]: neuron i's row in the hot matrices, or -1 when it is cold.
  std::vector<int32_t> hot_position;
  int64_t n_hot = 0;            // k_l
  int64_t n_slots = 0;          // s_l: the neuron cache's slots (0 without the prefetch path)
};

struct HybridWeights {
  std::vector<HybridLayerWeights> layers;  // [n_layer]
  std::vector<kernels::Buffer> storage;    // the device copies (and, on a zero-copy backend, the gathered host rows)
  size_t device_bytes = 0;                 // bytes uploaded for the hot rows and the cache slots
};

// Gathers and uploads the hot rows of every layer, and `cache_slots[l]`
// zero rows of cache after them (empty: none). `host_layers`: views in host
// memory with ffn_gate, ffn_up and ffn_down_t set (they must outlive the
// result: the cold rows are read there). Synchronous (upload is).
HybridWeights split_hybrid_weights(const std::vector<LayerWeights>& host_layers, const NeuronPlacement& placement,
                                   kernels::Backend& device, std::span<const int64_t> cache_slots = {});

}  // namespace tc::model
