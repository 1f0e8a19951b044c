// HybridFfnBlock: one layer's FFN split between a device backend (the hot
// neurons, in VRAM) and the CPU backend (the cold neurons, in host memory),
// PowerInfer's hybrid engine. Per layer of a decode step:
//   1. device: scores = fc2 · relu(fc1 · x); the predicted set P as a bitmask
//      (n_ff / 8 bytes per token), copied to the host with ffn_norm(x);
//      one synchronize (the host needs P);
//   2. host: P split into the device's part, hot ∩ P and the cold neurons
//      whose rows the prefetch path put in the layer's VRAM neuron cache
//      (positions in the layer's device matrices), and the CPU's part, the
//      rest of cold ∩ P (neuron ids); the positions are copied to the device;
//   3. device ops for the device's part are issued (gate, per-token mask,
//      up, activation, down as scaled rows into `out`); on CUDA they run
//      asynchronously while
//   4. (prefetch path) the engine thread plans the lookahead's guess for the
//      next layer into that layer's cache and posts the copies
//      (HybridPrefetch), and then
//   5. computes the CPU's part on the CPU backend (its pool): gate, live
//      set, up, activation, down into a partial sum;
//   6. the partial sum (n_embd floats per token) is copied to the device and
//      one add merges it into `out`.
// Only activations, the bitmasks, device positions (and, for several
// tokens, a per-token 0/1 mask over them) and the partial sums cross the
// bus on the stream; weight rows cross only on the prefetch path's own copy
// queue, into the cache.
// Dense steps (prefill chunks above the crossover) of kStreamMinTokens
// tokens or more run every neuron on the device from rows streamed over the
// bus (HybridFfnStream: no CPU part, no sync). Shorter ones take the same
// path as decode with P = every neuron and no predictor: the hot neurons on
// the device, as plain matmuls over the hot matrices' leading rows, the
// cold ones on the CPU (the neuron cache's too), so no neuron is dropped.
// Each token keeps only its own predicted neurons (as SparseFfnBlock), so a
// token's output does not depend on the other tokens of the step.
// Not thread-safe: the engine thread's. Workspace: reserve(), grown by a larger step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model/hybrid_ffn_stream.h"
#include "engine/model/hybrid_prefetch.h"
#include "engine/model/hybrid_time_split.h"
#include "engine/model/hybrid_weights.h"
#include "engine/model/sparse_ffn_block.h"
#include "engine/sparse/predictors.h"
#include "kernels/backend.h"

namespace tc::model {

// Where the FFN work went, summed over the steps since reset (per layer).
struct HybridSplitCounters {
  // Sparse steps: the predicted set P's split, summed over steps (as SparseFfnCounters::predicted).
  std::vector<int64_t> hot;     // [n_layer] neurons of hot ∩ P computed on the device
  std::vector<int64_t> cached;  // [n_layer] neurons of cold ∩ P computed on the device from the neuron cache
  std::vector<int64_t> cold;    // [n_layer] neurons of cold ∩ P given to the CPU
  // Dense steps not streamed (fewer than kStreamMinTokens tokens): every neuron, on one side or the other.
  std::vector<int64_t> dense_device;  // [n_layer] hot neurons (and cached ones) computed on the device
  std::vector<int64_t> dense_cold;    // [n_layer] the others, given to the CPU
};

class HybridFfnBlock {
 public:
  // `spec`, `predictors` and `weights` must outlive this object; `device`
  // runs the predictor and the hot neurons, `cpu` (a CPU backend) the cold
  // ones. `activation`: ReGLU or DReLU. The predictors are uploaded here.
  // `prefetch`: the prefetch path (mode Off: none); `weights` must then
  // have the slots of cache_slot_counts(prefetch, ...).
  HybridFfnBlock(const ModelSpec& spec, kernels::Backend& device, kernels::Backend& cpu,
                 const sparse::PredictorSet& predictors, const HybridWeights& weights,
                 kernels::Activation activation, PrefetchOptions prefetch = {});

  // out = FFN(ffn_norm(x)) of layer `layer`, over the predicted neurons
  // (`sparse`) or over every neuron. Device memory:
  // x: f32 [n_tokens, n_embd], the residual entering the block (predictor input);
  // cur: f32 [n_tokens, n_embd], ffn_norm(x);
  // out: f32 [n_tokens, n_embd], overwritten.
  // Returns with device ops still in flight (CUDA), as every op does.
  void run(int64_t layer, const float* x, const float* cur, int64_t n_tokens, bool sparse, float* out);
  // Allocates the buffers of steps of up to n_tokens tokens (run() grows
  // them when a step is larger; sizes: sparse::hybrid_step_workspace).
  void reserve(int64_t n_tokens);

  SparseFfnCounters& counters() { return counters_; }   // predicted = |P|, computed = device part + |CPU live set|
  HybridSplitCounters& split_counters() { return split_; }
  // The prefetch path (nullptr in mode Off).
  HybridPrefetch* prefetch() { return prefetch_.get(); }
  // Times the runs from now on (nullptr: stop); not owned, outlives its use.
  void set_timer(HybridStepTimer* timer) { timer_ = timer; }

 private:
  // Device: the layer's predictor and, when the prefetch path asks, the next
  // layer's on the same input x, as bitmasks; both copied to the host.
  void predict(int64_t layer, const float* x, int64_t n_tokens, bool guess);
  // Host: P from the bitmask (sparse) or every neuron, split into device
  // positions (hot, then cached: device_rows_host_) and the CPU's ids
  // (cold_rows_); cold ∩ P in cold_all_ when prefetching; the per-token mask
  // over the device's part when several tokens run sparse.
  void partition(int64_t layer, const HybridLayerWeights& w, int64_t n_tokens, bool sparse);
  // CPU: the cold neurons into partial_host_; returns the size of their
  // live set (0: partial_host_ untouched, nothing to add).
  int64_t run_cold(const HybridLayerWeights& w, int64_t n_tokens, bool sparse);
  bool token_predicted(int64_t t, int32_t neuron) const;
  // A dense step of kStreamMinTokens or more: every neuron on the device, streamed.
  void run_streamed(int64_t layer, const float* cur, int64_t n_tokens, float* out);

  const ModelSpec& spec_;
  kernels::Backend& device_;
  kernels::Backend& cpu_;
  const sparse::PredictorSet& predictors_;
  const HybridWeights& weights_;
  kernels::Activation activation_;
  std::vector<kernels::PlacedTensor> fc1_, fc2_;  // [n_layer] the predictors on the device: as LayerPredictor
  SparseFfnCounters counters_;
  HybridSplitCounters split_;
  int64_t n_words_ = 0;            // (n_ff + 31) / 32
  int64_t max_rank_ = 0;
  int64_t capacity_tokens_ = 0;
  std::unique_ptr<HybridPrefetch> prefetch_;  // null in mode Off
  std::unique_ptr<HybridFfnStream> stream_;   // dense steps of kStreamMinTokens or more
  HybridStepTimer* timer_ = nullptr;          // bench --time-split; null: not timed
  int64_t n_hot_ = 0;              // |hot ∩ P| of the current layer
  int64_t n_device_ = 0;           // hot ∩ P and the cached neurons of P: the device's part
  int64_t n_cold_ = 0;             // the CPU's part of cold ∩ P
  int64_t n_cold_all_ = 0;         // |cold ∩ P| (prefetching only)

  // Device workspace.
  kernels::Buffer hidden_dev_;         // f32 [T, max rank]: relu(fc1 · x)
  kernels::Buffer scores_dev_;         // f32 [T, n_ff]: fc2 · hidden
  kernels::Buffer bits_dev_;           // u32 [2, T, n_words]: scores > threshold; then the next layer's guess
  kernels::Buffer device_rows_dev_;    // i32 [n_ff]: the device's part as rows of the layer's device matrices
  kernels::Buffer device_mask_dev_;    // f32 [T, n_ff]: 1 where token t predicted the device part's neuron k, else 0
  kernels::Buffer device_gate_dev_;    // f32 [T, n_device]: gate, masked, then relu
  kernels::Buffer device_up_dev_;      // f32 [T, n_device]: up, then the activation
  kernels::Buffer partial_dev_;        // f32 [T, n_embd]: the CPU's partial sum
  // Host staging (the device's allocate_host: pinned on CUDA).
  kernels::Buffer bits_host_;          // u32 [2, T, n_words]
  kernels::Buffer cur_host_;           // f32 [T, n_embd]: ffn_norm(x)
  kernels::Buffer device_rows_host_;   // i32 [n_ff]
  kernels::Buffer device_mask_host_;   // f32 [T, n_ff]
  kernels::Buffer partial_host_;       // f32 [T, n_embd]
  // CPU workspace.
  std::vector<int32_t> device_ids_;  // i32 [n_ff]: the device's part as neuron ids (for the per-token mask)
  std::vector<int32_t> cold_all_;    // i32 [n_ff]: cold ∩ P, ascending (prefetching only)
  std::vector<int32_t> cold_rows_;   // i32 [n_ff]: the CPU's part (ascending ids), then the live set
  std::vector<int32_t> live_;        // i32 [n_ff]: positions in the CPU part of its live neurons
  std::vector<float> cold_gate_;     // f32 [T, n_ff]: gate over the CPU part, then compacted to the live set
  std::vector<float> cold_up_;       // f32 [T, n_ff]: up over the live set, then the activation
};

}  // namespace tc::model
