// KvCache: the f16 keys and values of every layer for a fixed number of
// sequence slots. Per-step state, owned by the engine thread.
// Layout per (slot, layer): k and v each f16 [n_ctx, n_embd_kv], row p =
// position p (heads contiguous inside a row). Under latent attention
// (ModelSpec::is_mla) a layer caches one matrix, its latent rows, which
// are both keys and values: v() is k().
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/model_spec.h"
#include "kernels/backend.h"

namespace tc::runtime {

class KvCache {
 public:
  // Allocates n_slots * n_layer * n_kv_matrices * n_ctx * n_embd_kv f16 values on the backend.
  KvCache(kernels::Backend& backend, const model::ModelSpec& spec, int n_slots, int64_t n_ctx);
  // Layer offload: layers [0, n_first_layers) on `first` (the device), the
  // rest on `rest` (the CPU), each side laid out [slot][layer][k/v] as above.
  KvCache(kernels::Backend& first, kernels::Backend& rest, int64_t n_first_layers, const model::ModelSpec& spec,
          int n_slots, int64_t n_ctx);

  int n_slots() const { return n_slots_; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_embd_kv() const { return n_embd_kv_; }
  size_t bytes() const { return buffer_.size() + rest_buffer_.size(); }
  // Layers [0, n_first_layers()) live in the first backend's memory (all of them unless split).
  int64_t n_first_layers() const { return n_first_layers_; }
  size_t first_bytes() const { return buffer_.size(); }

  uint16_t* k(int slot, int64_t layer) const { return base(slot, layer, 0); }
  uint16_t* v(int slot, int64_t layer) const { return base(slot, layer, n_matrices_ - 1); }

  // Positions [0, n_used(slot)) hold valid entries.
  int64_t n_used(int slot) const;
  void set_used(int slot, int64_t n);
  void clear(int slot) { set_used(slot, 0); }

 private:
  uint16_t* base(int slot, int64_t layer, int which) const;

  int n_slots_;
  int64_t n_layer_;
  int64_t n_ctx_;
  int64_t n_embd_kv_;
  int64_t n_matrices_;  // per (slot, layer): 2 (k, v), or 1 (k is v)
  int64_t n_first_layers_;
  kernels::Buffer buffer_;       // f16, layers [0, n_first_layers_)
  kernels::Buffer rest_buffer_;  // f16, layers [n_first_layers_, n_layer) (split caches only)
  std::vector<int64_t> used_;
};

}  // namespace tc::runtime
