// KvCache: the keys and values of every layer for a fixed number of
// sequence slots. Per-step state, owned by the engine thread.
// Layout per (slot, layer): k and v each [n_ctx, n_embd_kv(layer)] of their
// types() (f16 by default, or q8_0: kernels::KvCacheTypes), row p =
// position p (heads contiguous inside a row), k_row_bytes() and
// v_row_bytes() a row. Under latent attention (ModelSpec::is_mla) a layer
// caches one matrix, its latent rows, which are both keys and values: v()
// is k() (and the two types must be the same). A layer that attends over an
// earlier layer's cache (Gemma 4's last layers) has none of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "kernels/backend.h"

namespace tc::runtime {

class KvCache {
 public:
  // Allocates n_slots * n_layer * n_kv_matrices rows of n_ctx * n_embd_kv
  // values on the backend. Throws std::invalid_argument with
  // unsupported_reason() when the types cannot cache this model there.
  KvCache(kernels::Backend& backend, const model::ModelSpec& spec, int n_slots, int64_t n_ctx,
          kernels::KvCacheTypes types = {});
  // Layer offload: layers [0, n_first_layers) on `first` (the device), the
  // rest on `rest` (the CPU), each side laid out [slot][layer][k/v] as above.
  KvCache(kernels::Backend& first, kernels::Backend& rest, int64_t n_first_layers, const model::ModelSpec& spec,
          int n_slots, int64_t n_ctx, kernels::KvCacheTypes types = {});

  // The bytes such a cache takes (also for the placement's budget).
  static uint64_t bytes_for(const model::ModelSpec& spec, int64_t n_slots, int64_t n_ctx, kernels::KvCacheTypes types);
  // Why `types` cannot cache this model with its attention on `backend`
  // (the first backend of a split cache; null: not checked), or empty: not
  // KV types, q8_0 on a backend other than the CPU's or on heads that are
  // not whole blocks of 32, or two types for latent attention's one matrix.
  static std::string unsupported_reason(const model::ModelSpec& spec, kernels::KvCacheTypes types,
                                        const kernels::Backend* backend);

  int n_slots() const { return n_slots_; }
  int64_t n_ctx() const { return n_ctx_; }
  // A layer's row width and row bytes; without a layer, layer 0's (every
  // layer's where the model's layers do not differ, ModelSpec::layers_differ).
  int64_t n_embd_kv(int64_t layer = 0) const { return layer_at(layer).n_embd_kv; }
  kernels::KvCacheTypes types() const { return types_; }
  int64_t k_row_bytes(int64_t layer = 0) const { return layer_at(layer).k_row_bytes; }
  int64_t v_row_bytes(int64_t layer = 0) const { return layer_at(layer).v_row_bytes; }
  size_t bytes() const {
    return buffer_.size() + rest_buffer_.size() + (recurrent_.size() + checkpoints_.size()) * sizeof(float);
  }
  // Layers [0, n_first_layers()) live in the first backend's memory (all of them unless split).
  int64_t n_first_layers() const { return n_first_layers_; }
  size_t first_bytes() const { return buffer_.size(); }

  // Row 0 of a layer's K (V) matrix of a slot: where a layer shares an
  // earlier layer's cache (ModelSpec::shares_kv), that layer's.
  void* k(int slot, int64_t layer) const { return base(slot, layer, 0); }
  void* v(int slot, int64_t layer) const { return base(slot, layer, n_matrices_ - 1); }

  // One line for logs: "4 slots x 4096 positions, q8_0 keys and values, 272.0 MiB".
  std::string describe() const;

  // A recurrent layer's state of a slot (ModelSpec::is_recurrent: Qwen 3.5's
  // delta net, Mamba-2), host memory: f32 [recurrent_conv_values] (the
  // convolution's last inputs) and f32 [recurrent_matrix_values] (each
  // head's state matrix). Zero when the slot is empty.
  float* conv_state(int slot, int64_t layer) const { return recurrent_state(slot, layer, false); }
  float* delta_state(int slot, int64_t layer) const { return recurrent_state(slot, layer, true); }
  // Whether a slot can be cut back to a prefix (set_used with fewer
  // positions than it holds): not where recurrent layers keep a state that
  // sums every position; those slots can only be emptied.
  bool keeps_prefixes() const { return recurrent_.empty(); }

  // Recurrent caches: one copy per slot of its state at the slot's length
  // when saved, to come back to where a later prompt shares the slot's first
  // checkpoint_at(slot) positions but not all of them (a chat's next turn
  // re-renders the last reply). restore_checkpoint sets n_used to that
  // length. A checkpoint lapses when the slot is cut below it (-1: none).
  void save_checkpoint(int slot);
  int64_t checkpoint_at(int slot) const;
  void restore_checkpoint(int slot);

  // Positions [0, n_used(slot)) hold valid entries. On a cache that does not
  // keep prefixes, n must be 0 or at least n_used(slot).
  int64_t n_used(int slot) const;
  void set_used(int slot, int64_t n);
  void clear(int slot) { set_used(slot, 0); }

 private:
  // Where a layer's matrices sit in its side's slot.
  struct LayerLayout {
    int64_t kv_layer = 0;  // the layer whose matrices it reads (itself unless shared)
    int64_t n_embd_kv = 0;
    int64_t k_row_bytes = 0, v_row_bytes = 0;
    size_t offset = 0;   // of its K matrix in the slot (own layers only)
    size_t k_bytes = 0;  // n_ctx rows of K (own layers only)
  };
  const LayerLayout& layer_at(int64_t layer) const { return layers_.at(static_cast<size_t>(layer)); }
  float* recurrent_state(int slot, int64_t layer, bool delta) const;
  std::byte* base(int slot, int64_t layer, int which) const;

  int n_slots_;
  int64_t n_layer_;
  int64_t n_ctx_;
  int64_t n_matrices_;  // per (slot, layer): 2 (k, v), or 1 (k is v)
  kernels::KvCacheTypes types_;
  std::vector<LayerLayout> layers_;
  size_t first_slot_bytes_ = 0, rest_slot_bytes_ = 0;  // one slot's bytes on each side
  int64_t n_first_layers_;
  kernels::Buffer buffer_;       // layers [0, n_first_layers_)
  kernels::Buffer rest_buffer_;  // layers [n_first_layers_, n_layer) (split caches only)
  std::vector<int64_t> used_;
  // Recurrent layers' states: per slot, per recurrent layer (in layer
  // order), the conv state then the delta state; recurrent_index_[layer]
  // is that order (-1: not recurrent).
  mutable std::vector<float> recurrent_;  // written through conv_state() and delta_state()
  std::vector<int64_t> recurrent_index_;
  int64_t conv_values_ = 0, delta_values_ = 0, recurrent_layers_ = 0;
  std::vector<float> checkpoints_;      // as recurrent_: each slot's saved state
  std::vector<int64_t> checkpoint_at_;  // [n_slots]: its length, or -1
};

}  // namespace tc::runtime
